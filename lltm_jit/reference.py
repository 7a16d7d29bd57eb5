"""The LLTM cell in plain PyTorch: the reference the kernels are checked against."""

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence, pad_packed_sequence

from .checks import check_sequence_types, check_tensors


def reference_lltm(input, weights, bias, old_h, old_cell):
    """One LLTM step in eager PyTorch (the tutorial's Python version).

    input (batch, input_features), weights (3 * state_size, state_size + input_features),
    bias (3 * state_size,) or (1, 3 * state_size), old_h and old_cell (batch, state_size).
    Returns new_h and new_cell, each (batch, state_size). Its shape errors are torch's own: the
    reference runs no check beyond the arguments' types, so that it times as plain eager code.
    """
    check_tensors("reference_lltm", input=input, weights=weights, bias=bias, old_h=old_h, old_cell=old_cell)
    x = torch.cat([old_h, input], dim=1)
    gates = torch.addmm(bias, x, weights.t())
    input_gate, output_gate, candidate = gates.chunk(3, dim=1)
    new_cell = old_cell + F.elu(candidate) * torch.sigmoid(input_gate)
    new_h = torch.tanh(new_cell) * torch.sigmoid(output_gate)
    return new_h, new_cell


def reference_lltm_sequence(input, weights, bias, state=None, *, lengths=None, batch_first=False, step=reference_lltm):
    """A sequence as a Python loop of `step` (the reference's by default), with lltm_sequence's
    arguments and results (a part of state None means zeros): past its length a sequence's state
    stays and its output is zero."""
    check_sequence_types("reference_lltm_sequence", input, weights, bias, state, lengths)
    if batch_first:
        input = input.transpose(0, 1)
    time, batch = input.shape[0], input.shape[1]
    h, c = (None, None) if state is None else state
    if h is None or c is None:
        zeros = input.new_zeros(batch, weights.shape[0] // 3)
        h, c = zeros if h is None else h, zeros if c is None else c
    outputs = []
    for t in range(time):
        new_h, new_c = step(input[t], weights, bias, h, c)
        if lengths is None:
            h, c = new_h, new_c
            outputs.append(new_h)
        else:
            runs = (lengths.to(input.device) > t).unsqueeze(1)
            h, c = torch.where(runs, new_h, h), torch.where(runs, new_c, c)
            outputs.append(torch.where(runs, new_h, torch.zeros_like(new_h)))
    output = torch.stack(outputs) if outputs else input.new_empty(0, batch, h.shape[1])
    return (output.transpose(0, 1) if batch_first else output), (h, c)


def reversed_within(x, lengths):
    """x (time, batch, ...) with each sequence's first lengths[b] steps in reverse order and the
    steps past them in place; all of time without lengths."""
    if lengths is None:
        return x.flip(0)
    return torch.stack([torch.cat([x[:n, b].flip(0), x[n:, b]]) for b, n in enumerate(lengths.tolist())], dim=1)


def reference_lltm_layers(module, input, state=None, *, step=reference_lltm):
    """An LLTMSequence's forward (with biases, without dropout) as Python loops over time, a layer
    and a direction at a time, through reference_lltm_sequence with `step`: input (time, batch,
    input_features) or a PackedSequence; state None or (h0, c0), each (layers * directions, batch,
    state_size). Returns output (time, batch, directions * state_size), zero past each sequence's
    length, and (h_n, c_n) as the module's.

    Written apart from the module's own layering (a gather per direction, one op call per layer):
    a reference that shared it would agree with it where it is wrong.
    """
    lengths = None
    if isinstance(input, PackedSequence):
        input, lengths = pad_packed_sequence(input)
    finals = []  # (h, c) of each layer and direction, in state's order
    for layer in range(module.num_layers):
        outputs = []
        for suffix in ("", "_reverse")[:module.num_directions]:
            initial = None if state is None else (state[0][len(finals)], state[1][len(finals)])
            weights, bias = getattr(module, f"weights_l{layer}{suffix}"), getattr(module, f"bias_l{layer}{suffix}")
            x = reversed_within(input, lengths) if suffix else input
            output, final = reference_lltm_sequence(x, weights, bias, initial, lengths=lengths, step=step)
            outputs.append(reversed_within(output, lengths) if suffix else output)
            finals.append(final)
        input = torch.cat(outputs, dim=2) if len(outputs) > 1 else outputs[0]
    return input, (torch.stack([h for h, _ in finals]), torch.stack([c for _, c in finals]))
