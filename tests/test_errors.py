"""Bad input gets an error that names the argument, never a crash or a wrong result."""

import re

import pytest
import torch
from helpers import make_inputs, requires_cuda, same_error_real_and_fake

from lltm_jit import lltm

B, F, S = 4, 6, 5


def replace(index, value):
    args = make_inputs(B, F, S, requires_grad=False)
    args[index] = value
    return args


CASES = {
    "input rank 1": (replace(0, torch.randn(F, dtype=torch.float64)), "input must have 2 dimensions"),
    "input rank 3": (replace(0, torch.randn(2, B, F, dtype=torch.float64)), "input must have 2 dimensions"),
    "old_h rank 1": (replace(3, torch.randn(S, dtype=torch.float64)), "old_h must have 2 dimensions"),
    "old_h batch": (replace(3, torch.randn(B + 1, S, dtype=torch.float64)),
                    r"old_h must have shape \(batch, state_size\) = \(4, 5\), got \(5, 5\)"),
    "old_cell batch": (replace(4, torch.randn(B - 1, S, dtype=torch.float64)),
                       r"old_cell must have shape \(batch, state_size\) = \(4, 5\), got \(3, 5\)"),
    "old_cell state": (replace(4, torch.randn(B, S + 2, dtype=torch.float64)), "old_cell must have shape"),
    "weights rows": (replace(1, torch.randn(3 * S + 1, S + F, dtype=torch.float64)), "weights must have shape"),
    # The sizes come from weights: a width that disagrees with its columns blames the input.
    "input features": (replace(0, torch.randn(B, F - 1, dtype=torch.float64)),
                       r"^lltm: input must have shape \(batch, input_features\) = \(4, 6\) to match weights "
                       r"\(15, 11\), got \(4, 5\)$"),
    "weights columns": (replace(1, torch.randn(3 * S, S + F + 1, dtype=torch.float64)),
                        r"input must have shape \(batch, input_features\) = \(4, 7\) to match weights \(15, 12\)"),
    "weights no input columns": (replace(1, torch.randn(3 * S, S, dtype=torch.float64)),
                                 r"^lltm: weights must have shape .* = \(15, 11\), got \(15, 5\)$"),
    # ... unless the state and bias agree on another state size: then weights are the odd one out.
    "weights of another state": (replace(1, torch.randn(3 * (S + 1), S + 1 + F, dtype=torch.float64)),
                                 r"^lltm: weights must have shape .* = \(15, 11\), got \(18, 12\)$"),
    "bias size": (replace(2, torch.randn(3 * S - 1, dtype=torch.float64)), "bias must have shape"),
    "bias 2 rows": (replace(2, torch.randn(2, 3 * S, dtype=torch.float64)), "bias must have shape"),
    "mixed dtype": (replace(1, torch.randn(3 * S, S + F)), "weights is Float"),
    "integer input": (replace(0, torch.ones(B, F, dtype=torch.long)), "input must be a floating-point tensor"),
    "integer bias": (replace(2, torch.ones(3 * S, dtype=torch.int32)), "bias is Int"),
    "complex": ([a.to(torch.complex128) for a in make_inputs(B, F, S, requires_grad=False)],
                "input must be a floating-point tensor"),
    "empty state": (make_inputs(B, F, 0, requires_grad=False), "old_h must have a non-empty state"),
    "empty features": (make_inputs(B, 0, S, requires_grad=False), "input must have a non-empty feature"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_input_names_the_argument(case, backend):
    """The operator's checks, and the same from the fallback to the reference."""
    args, message = CASES[case]
    with pytest.raises(RuntimeError, match=message):
        lltm(*args)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_fake_kernel_gives_the_same_errors(case):
    """The fake kernel (torch.compile's view of the op) checks the same rules with the same words."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    args, message = CASES[case]
    with FakeTensorMode() as mode:
        fakes = [mode.from_tensor(a) for a in args]
        with pytest.raises(RuntimeError, match=message):
            torch.ops.lltm_jit.forward(*fakes)


def test_sequences_at_once_fake_kernel_gives_the_same_errors():
    """sequences_at_once's fake kernel checks what the op checks, in the same words, and answers
    False for good arguments: a traced graph keeps one stream."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    seq, w = torch.randn(3, B, F, dtype=torch.float64), torch.randn(3 * S, S + F, dtype=torch.float64)
    ops = torch.ops.lltm_jit
    for input, weights in ((seq[0], w), (seq, w[0]), (seq, w[:1]), (seq.long(), w), (seq, w.float())):
        with pytest.raises(RuntimeError) as real:
            ops.sequences_at_once(input, weights)
        with FakeTensorMode() as mode, pytest.raises(RuntimeError) as fake:
            ops.sequences_at_once(mode.from_tensor(input), mode.from_tensor(weights))
        assert str(fake.value) == str(real.value)
    with FakeTensorMode() as mode:
        assert ops.sequences_at_once(mode.from_tensor(seq), mode.from_tensor(w)) is False


def test_transposed_weights_are_blamed(backend):
    """Weights given transposed, with rows that divide by three, are named, not the bias that
    agrees with the state."""
    from lltm_jit import lltm_sequence

    input, weights, bias, old_h, old_cell = make_inputs(3, 5, 7, requires_grad=False)
    message = r"weights must have shape \(3 \* state_size, state_size \+ input_features\) = \(21, 12\), got \(12, 21\)$"
    with pytest.raises(RuntimeError, match="^lltm: " + message):
        lltm(input, weights.t(), bias, old_h, old_cell)
    with pytest.raises(RuntimeError, match="^lltm_sequence: " + message):
        lltm_sequence(input[None], weights.t(), bias, (old_h, old_cell))
    # The state and bias outvote the weights, whatever the input's width: weights that would fit the
    # input are named too; but not where the state's two tensors disagree.
    with pytest.raises(RuntimeError, match=r"^lltm: weights must have shape .* = \(21, 12\), got \(15, 10\)$"):
        lltm(input, weights[:15, 2:], bias, old_h, old_cell)
    with pytest.raises(RuntimeError, match=r"^lltm: bias must have shape .* = \(15,\), got \(21,\)$"):
        lltm(input, weights[:15, 2:], bias, old_h, old_cell[:, :5])
    with pytest.raises(RuntimeError, match=r"^lltm_sequence: bias must have shape .* = \(15,\), got \(21,\)$"):
        lltm_sequence(input[None], weights[:15, 2:], bias, (old_h, old_cell[:, :5]))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.float8_e4m3fn, torch.float8_e5m2, torch.complex32],
                         ids=str)
def test_fake_kernel_names_every_dtype_as_the_op(dtype):
    """The fake kernels spell a dtype as c10 does (UInt16, Float8_e4m3fn, ComplexHalf)."""
    args = make_inputs(B, F, S, requires_grad=False)
    args[0] = args[0].to(dtype)
    assert same_error_real_and_fake(torch.ops.lltm_jit.forward, args).startswith("lltm: input must be a floating-point")


@requires_cuda
def test_mixed_devices():
    args = make_inputs(B, F, S, requires_grad=False)
    args[3] = args[3].cuda()
    with pytest.raises(RuntimeError, match="all tensors must be on one device: input is on cpu but old_h is on cuda"):
        lltm(*args)


def step_backward_args(index=None, value=None):
    """The cell backward's arguments (grad_h, grad_cell, input, weights, old_h, gates, old_cell,
    output_mask) from a forward, with args[index] = value."""
    input, weights, bias, old_h, old_cell = make_inputs(B, F, S, requires_grad=False)
    _, _, gates = torch.ops.lltm_jit.forward(input, weights, bias, old_h, old_cell)
    args = [torch.randn(B, S, dtype=torch.float64), torch.randn(B, S, dtype=torch.float64), input, weights, old_h,
            gates, old_cell, [True, True, True]]
    if index is not None:
        args[index] = value
    return args


BACKWARD_CASES = {
    "input rank": (2, torch.randn(F, dtype=torch.float64), "input must have 2 dimensions"),
    "weights columns": (3, torch.randn(3 * S, S + F + 1, dtype=torch.float64), "weights must have shape"),
    "old_h batch": (4, torch.randn(B - 1, S, dtype=torch.float64), "old_h must have shape"),
    # old_h gives the state size: the other saved tensors are named before the gradients
    "old_h state": (4, torch.randn(B, S - 1, dtype=torch.float64),
                    r"old_cell must have shape \(batch, state_size\) = \(4, 4\), got \(4, 5\)"),
    "gates width": (5, torch.randn(B, 3 * S - 1, dtype=torch.float64), "gates must have shape"),
    "old_cell state": (6, torch.randn(B, S - 1, dtype=torch.float64), "old_cell must have shape"),
    "old_cell dtype": (6, torch.randn(B, S), "all tensors must have one dtype: input is Double but old_cell is Float"),
    "gates None": (5, None, "gates must be a Tensor, got an undefined one"),
    "grad_h None": (0, None, "grad_h must be a Tensor, got an undefined one"),
}


@pytest.mark.parametrize("case", BACKWARD_CASES)
def test_backward_fake_kernel_gives_the_same_errors(case):
    """The cell backward's fake kernel checks what the forward saved as the op does, in the same
    words, and that the gradients are given (not their shapes: lltm_jit/checks.py says why)."""
    index, value, message = BACKWARD_CASES[case]
    assert re.search(message, same_error_real_and_fake(torch.ops.lltm_jit.backward, step_backward_args(index, value)))


@pytest.mark.parametrize("index", range(5))
def test_raw_forward_given_none_names_the_argument(index):
    """None where the raw operator needs a tensor (torch.ops passes it on as an undefined one)
    names the argument, in the op and in its fake kernel."""
    args = make_inputs(B, F, S, requires_grad=False)
    name = ("input", "weights", "bias", "old_h", "old_cell")[index]
    args[index] = None
    message = same_error_real_and_fake(torch.ops.lltm_jit.forward, args)
    assert message == f"lltm: {name} must be a Tensor, got an undefined one"


def test_backward_op_checks_its_arguments():
    args = make_inputs(B, F, 0, requires_grad=False)  # state_size 0
    grads = [torch.randn(B, 0, dtype=torch.float64)] * 2
    gates, old_cell = torch.randn(B, 0, dtype=torch.float64), torch.randn(B, 0, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="old_h must have a non-empty state"):
        torch.ops.lltm_jit.backward(*grads, args[0], args[1], args[3], gates, old_cell, [True, True, True])


# ---------------------------------------------------------------------------------------------
# The rule for every public entry point, as nn.LSTM's: a RuntimeError for a tensor's shape, dtype,
# device or values; a TypeError for an argument of the wrong type (a list, an array or None where
# a Tensor is needed, a size that is no int), naming it and its type, never its value (a list of a
# large batch would be megabytes of message); a ValueError for an option's value.

RULE = {"shape": RuntimeError, "type": TypeError, "option": ValueError}
# What each entry point can get wrong. The raw operators' arguments of the wrong type get torch's
# schema error (a RuntimeError that prints the value): the functions above them check first.
ENTRY_POINTS = {
    "lltm": ("shape", "type"),
    "lltm_sequence": ("shape", "type", "option"),
    "reference_lltm": ("shape", "type"),
    "reference_lltm_sequence": ("shape", "type", "option"),
    "LLTM()": ("type", "option"),
    "LLTM.forward": ("shape", "type", "option"),
    "LLTMSequence()": ("type", "option"),
    "LLTMSequence.forward": ("shape", "type", "option"),
    "torch.ops.lltm_jit.forward": ("shape",),
    "torch.ops.lltm_jit.backward": ("shape",),
    "torch.ops.lltm_jit.sequence_forward": ("shape",),
    "torch.ops.lltm_jit.sequence_backward": ("shape",),
    "torch.ops.lltm_jit.sequences_at_once": ("shape",),
}


def _entry_points():
    """{name: (entry point, kind, call, message)}; a message is a regex matched in full."""
    import numpy as np

    import lltm_jit
    from lltm_jit import lltm_sequence, reference_lltm, reference_lltm_sequence

    x, w, b, h, c = make_inputs(B, F, S, requires_grad=False)
    seq = torch.randn(3, B, F, dtype=torch.float64)
    narrow = torch.randn(3, B, F - 1, dtype=torch.float64)
    big = [[0.5] * 512] * 200
    cell, layers = lltm_jit.LLTM(F, S).double(), lltm_jit.LLTMSequence(F, S).double()
    ops = torch.ops.lltm_jit
    grads = torch.randn(B, S, dtype=torch.float64)
    packed = torch.nn.utils.rnn.pack_padded_sequence(seq, torch.tensor([3, 2, 2, 1]))
    cases = {
        "lltm input list": ("lltm", "type", lambda: lltm(big, w, b, h, c), "lltm: input must be a Tensor, got list"),
        "lltm input ndarray": ("lltm", "type", lambda: lltm(np.ones((B, F)), w, b, h, c),
                               "lltm: input must be a Tensor, got ndarray"),
        "lltm old_h None": ("lltm", "type", lambda: lltm(x, w, b, None, c), "lltm: old_h must be a Tensor, got None"),
        "lltm input None": ("lltm", "type", lambda: lltm(None, w, b, h, c), "lltm: input must be a Tensor, got None"),
        "lltm weights list": ("lltm", "type", lambda: lltm(x, w.tolist(), b, h, c),
                              "lltm: weights must be a Tensor, got list"),
        "lltm input width": ("lltm", "shape", lambda: lltm(x[:, 1:], w, b, h, c),
                             r"lltm: input must have shape \(batch, input_features\) = \(4, 6\) to match weights "
                             r"\(15, 11\), got \(4, 5\)"),
        "lltm_sequence input list": ("lltm_sequence", "type", lambda: lltm_sequence(big, w, b),
                                     "lltm_sequence: input must be a Tensor, got list"),
        "lltm_sequence bias None": ("lltm_sequence", "type", lambda: lltm_sequence(seq, w, None),
                                    "lltm_sequence: bias must be a Tensor, got None"),
        "lltm_sequence state tensor": ("lltm_sequence", "type", lambda: lltm_sequence(seq, w, b, h),
                                       r"lltm_sequence: state must be a tuple \(h0, c0\), got a Tensor"),
        "lltm_sequence state of lists": ("lltm_sequence", "type", lambda: lltm_sequence(seq, w, b, (h.tolist(), c)),
                                         "lltm_sequence: state's h0 must be a Tensor, got list"),
        "lltm_sequence lengths list": ("lltm_sequence", "type", lambda: lltm_sequence(seq, w, b, lengths=[3] * B),
                                       "lltm_sequence: lengths must be a Tensor, got list"),
        "lltm_sequence input width": ("lltm_sequence", "shape", lambda: lltm_sequence(narrow, w, b),
                                      r"lltm_sequence: input must have shape \(time, batch, input_features\) = "
                                      r"\(3, 4, 6\) to match weights \(15, 11\), got \(3, 4, 5\)"),
        # With batch_first, in the caller's layout (the op checks the transposed input).
        "lltm_sequence batch_first input width": ("lltm_sequence", "shape",
                                                  lambda: lltm_sequence(narrow.transpose(0, 1), w, b, batch_first=True),
                                                  r"lltm_sequence: input must have shape \(batch, time, "
                                                  r"input_features\) = \(4, 3, 6\) to match weights \(15, 11\), "
                                                  r"got \(4, 3, 5\)"),
        "lltm_sequence batch_first input rank": ("lltm_sequence", "shape",
                                                 lambda: lltm_sequence(x, w, b, batch_first=True),
                                                 r"lltm_sequence: input must have 3 dimensions \(batch, time, "
                                                 r"input_features\), got 2 with shape \(4, 6\)"),
        "lltm_sequence state of three": ("lltm_sequence", "option", lambda: lltm_sequence(seq, w, b, (h, c, c)),
                                         r"lltm_sequence: state must be a tuple \(h0, c0\), got a tuple of 3"),
        "reference_lltm input list": ("reference_lltm", "type", lambda: reference_lltm(big, w, b, h, c),
                                      "reference_lltm: input must be a Tensor, got list"),
        # The reference checks types alone, so that it times as plain eager code: torch's own message.
        "reference_lltm input width": ("reference_lltm", "shape", lambda: reference_lltm(x[:, 1:], w, b, h, c),
                                       ".*"),
        "reference_lltm_sequence bias None": ("reference_lltm_sequence", "type",
                                              lambda: reference_lltm_sequence(seq, w, None),
                                              "reference_lltm_sequence: bias must be a Tensor, got None"),
        "reference_lltm_sequence input width": ("reference_lltm_sequence", "shape",
                                                lambda: reference_lltm_sequence(narrow, w, b), ".*"),
        "reference_lltm_sequence state of one": ("reference_lltm_sequence", "option",
                                                 lambda: reference_lltm_sequence(seq, w, b, (h,)),
                                                 r"reference_lltm_sequence: state must be a tuple \(h0, c0\), "
                                                 "got a tuple of 1"),
        "LLTM input list": ("LLTM.forward", "type", lambda: cell(big),
                            r"LLTM\(6, 5\): input must be a Tensor, got list"),
        "LLTM input ndarray": ("LLTM.forward", "type", lambda: cell(np.ones((B, F))),
                               r"LLTM\(6, 5\): input must be a Tensor, got ndarray"),
        "LLTM input None": ("LLTM.forward", "type", lambda: cell(None), r"LLTM\(6, 5\): input must be a Tensor, got None"),
        "LLTM state of None": ("LLTM.forward", "type", lambda: cell(x, (None, c)),
                               r"LLTM\(6, 5\): state's h must be a Tensor, got None"),
        "LLTM input rank": ("LLTM.forward", "shape", lambda: cell(seq),
                            r"LLTM\(6, 5\): input must have shape \(batch, input_features\) or \(input_features,\), "
                            r"got \(3, 4, 6\)"),
        "LLTM input width": ("LLTM.forward", "shape", lambda: cell(x[:, 1:]),
                             r"LLTM\(6, 5\): input must have 6 features \(input_features\), got 5 \(shape \(4, 5\)\)"),
        "LLTM state of three": ("LLTM.forward", "option", lambda: cell(x, (h, c, c)),
                                r"LLTM\(6, 5\): state must be a tuple \(h, cell\), got a tuple of 3"),
        "LLTM size float": ("LLTM()", "type", lambda: lltm_jit.LLTM(3.5, 4),
                            "LLTM: input_features must be an int, got float"),
        "LLTM integer dtype": ("LLTM()", "type", lambda: lltm_jit.LLTM(3, 4, dtype=torch.int64),
                               "LLTM: dtype must be a floating-point dtype, got torch.int64"),
        "LLTM bias str": ("LLTM()", "type", lambda: lltm_jit.LLTM(3, 4, "cpu"), "LLTM: bias must be a bool, got str"),
        "LLTM size 0": ("LLTM()", "option", lambda: lltm_jit.LLTM(3, 0),
                        "LLTM: input_features and state_size must be positive, got 3 and 0"),
        "LLTMSequence input list": ("LLTMSequence.forward", "type", lambda: layers(big),
                                    r"LLTMSequence\(6, 5\): input must be a Tensor, got list"),
        "LLTMSequence input None": ("LLTMSequence.forward", "type", lambda: layers(None),
                                    r"LLTMSequence\(6, 5\): input must be a Tensor, got None"),
        "LLTMSequence state of lists": ("LLTMSequence.forward", "type", lambda: layers(seq, ([[0.0]], c)),
                                        r"LLTMSequence\(6, 5\): state's h must be a Tensor, got list"),
        "LLTMSequence input rank": ("LLTMSequence.forward", "shape", lambda: layers(x[0]),
                                    r"LLTMSequence\(6, 5\): input must have shape \(time, batch, input_features\) or "
                                    r"\(time, input_features\), got \(6,\)"),
        "LLTMSequence lengths with packed": ("LLTMSequence.forward", "option",
                                             lambda: layers(packed, lengths=torch.tensor([3, 2, 2, 1])),
                                             r"LLTMSequence\(6, 5\): lengths must be None for a PackedSequence, "
                                             "which carries its own"),
        "LLTMSequence layers float": ("LLTMSequence()", "type", lambda: lltm_jit.LLTMSequence(3, 4, num_layers=2.0),
                                      "LLTMSequence: num_layers must be an int, got float"),
        "LLTMSequence state_size bool": ("LLTMSequence()", "type", lambda: lltm_jit.LLTMSequence(3, True),
                                         "LLTMSequence: state_size must be an int, got bool"),
        "LLTMSequence integer dtype": ("LLTMSequence()", "type", lambda: lltm_jit.LLTMSequence(3, 4, dtype=torch.int32),
                                       "LLTMSequence: dtype must be a floating-point dtype, got torch.int32"),
        "LLTMSequence dropout 2": ("LLTMSequence()", "option", lambda: lltm_jit.LLTMSequence(3, 4, 2, dropout=2),
                                   r"LLTMSequence: dropout must be a number in \[0, 1\], the probability of an element "
                                   "being zeroed, got 2"),
        "LLTMSequence proj_size": ("LLTMSequence()", "option", lambda: lltm_jit.LLTMSequence(3, 4, proj_size=2),
                                   r"LLTMSequence: proj_size is not supported \(the LLTM has no projection of its "
                                   r"output\), got 2"),
        "forward op old_h": ("torch.ops.lltm_jit.forward", "shape", lambda: ops.forward(x, w, b, h[1:], c),
                             r"lltm: old_h must have shape \(batch, state_size\) = \(4, 5\), got \(3, 5\)"),
        "backward op grad_h": ("torch.ops.lltm_jit.backward", "shape",
                               lambda: ops.backward(grads[1:], grads, x, w, h, torch.randn(B, 3 * S, dtype=torch.float64),
                                                    c, [True, True, True]),
                               r"lltm_backward: grad_h must have shape \(batch, state_size\) = \(4, 5\), got \(3, 5\)"),
        "sequence_forward op input width": ("torch.ops.lltm_jit.sequence_forward", "shape",
                                            lambda: ops.sequence_forward(narrow, w, b, None, None, None),
                                            r"lltm_sequence: input must have shape .* to match weights \(15, 11\), "
                                            r"got \(3, 4, 5\)"),
        "sequence_backward op output": ("torch.ops.lltm_jit.sequence_backward", "shape",
                                        lambda: ops.sequence_backward(None, None, None, seq, w, None, None, None,
                                                                      torch.randn(3, B, S + 1, dtype=torch.float64),
                                                                      torch.randn(3, B, 3 * S, dtype=torch.float64),
                                                                      torch.randn(3, B, S, dtype=torch.float64),
                                                                      [True, True, True]),
                                        r"lltm_sequence_backward: output must have shape \(time, batch, state_size\) "
                                        r"= \(3, 4, 5\), got \(3, 4, 6\)"),
        "sequences_at_once op input rank": ("torch.ops.lltm_jit.sequences_at_once", "shape",
                                            lambda: ops.sequences_at_once(x, w),
                                            r"lltm_sequences_at_once: input must have 3 dimensions \(time, batch, "
                                            r"input_features\), got 2 with shape \(4, 6\)"),
        "sequences_at_once op weights rank": ("torch.ops.lltm_jit.sequences_at_once", "shape",
                                              lambda: ops.sequences_at_once(seq, b),
                                              r"lltm_sequences_at_once: weights must have 2 dimensions \(3 \* "
                                              r"state_size, state_size \+ input_features\), got 1 with shape "
                                              r"\(15,\)"),
        "sequences_at_once op weights rows": ("torch.ops.lltm_jit.sequences_at_once", "shape",
                                              lambda: ops.sequences_at_once(seq, w[:0]),
                                              r"lltm_sequences_at_once: weights must have 3 \* state_size rows, a "
                                              r"positive multiple of 3, got shape \(0, 11\)"),
        "sequences_at_once op integer input": ("torch.ops.lltm_jit.sequences_at_once", "shape",
                                               lambda: ops.sequences_at_once(seq.long(), w),
                                               r"lltm_sequences_at_once: input must be a floating-point tensor "
                                               r"\(float64, float32, float16 or bfloat16\), got Long"),
    }
    return cases


ENTRY_CASES = list(_entry_points())


@pytest.mark.parametrize("case", ENTRY_CASES)
def test_every_entry_point_raises_by_the_rule(case):
    _, kind, call, message = _entry_points()[case]
    with pytest.raises(Exception) as raised:
        call()
    assert type(raised.value) is RULE[kind], f"{kind}: {type(raised.value).__name__}: {raised.value}"
    text = str(raised.value)
    assert re.fullmatch(message, text, re.DOTALL), text
    assert len(text) < 300 and text.count("\n") < 3, text  # a few lines, never the value


def test_the_table_covers_every_public_entry_point():
    """Every public callable that takes tensors, and each thing it can get wrong, has a case."""
    import lltm_jit

    no_tensors = {"BuildError", "backend", "build_info", "reload"}
    names = {name for name in lltm_jit.__all__ if name not in no_tensors}
    listed = {entry.partition(".")[0].removesuffix("()") for entry in ENTRY_POINTS}
    assert names <= listed, names - listed
    covered = {(entry, kind) for entry, kind, _, _ in _entry_points().values()}
    wanted = {(entry, kind) for entry, kinds in ENTRY_POINTS.items() for kind in kinds}
    assert wanted == covered, wanted ^ covered
