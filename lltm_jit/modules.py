"""`LLTM`, the cell, and `LLTMSequence`, layers of the cell over whole sequences in nn.LSTM's
manner, as nn.Modules."""

import contextlib
import functools
import math
import numbers
import threading
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from .checks import check_state_pair, check_tensors
from .ops import lltm, lltm_sequence, sequences_at_once

# The cell's parameter names and a one-layer, one-direction LLTMSequence's: each module renames the
# other's on load, so that a state_dict moves between the two.
_CELL_TO_SEQUENCE = {"weights": "weights_l0", "bias": "bias_l0"}
_SEQUENCE_TO_CELL = {new: old for old, new in _CELL_TO_SEQUENCE.items()}


def _rename_keys(names, module, state_dict, prefix, *args) -> None:
    """A load_state_dict pre-hook (through functools.partial, which pickles with the module):
    renames ``prefix + old`` to ``prefix + new`` for each old -> new in `names`."""
    for old, new in names.items():
        if prefix + old in state_dict and prefix + new not in state_dict:
            state_dict[prefix + new] = state_dict.pop(prefix + old)


def _check_int(module, **named) -> None:
    """nn.LSTM's TypeError for a size that is not an int (a bool is not one either)."""
    for name, value in named.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{type(module).__name__}: {name} must be an int, got {type(value).__name__}")


def _check_factory(module, dtype) -> None:
    """Parameters that can require a gradient: a floating dtype (torch's own error says so only
    after the module's parameters have been made)."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"{type(module).__name__}: dtype must be a floating-point dtype, got {dtype}")


def _check_sizes(module, input_features, state_size) -> None:
    _check_int(module, input_features=input_features, state_size=state_size)
    if input_features <= 0 or state_size <= 0:
        raise ValueError(f"{type(module).__name__}: input_features and state_size must be positive, "
                         f"got {input_features} and {state_size}")


def _check_options(module, bias, proj_size=0) -> None:
    """nn.LSTM's options that this cell does not take, or takes as a flag."""
    _check_int(module, proj_size=proj_size)
    if proj_size != 0:
        raise ValueError(f"{type(module).__name__}: proj_size is not supported (the LLTM has no projection of its "
                         f"output), got {proj_size}")
    if not isinstance(bias, bool):
        raise TypeError(f"{type(module).__name__}: bias must be a bool, got {type(bias).__name__}")


def _register_bias(module, name, size, factory) -> None:
    """`name` a parameter of `size` where the module has a bias, else None (as in nn.LSTM)."""
    module.register_parameter(name, nn.Parameter(torch.empty(size, **factory)) if module.has_bias else None)


def _bias(module, name, weights):
    """The bias parameter `name`, or, where the module has none, zeros for the operators (which take
    a bias) made at each call beside `weights`: a buffer of zeros would hold whatever memory
    to_empty() (meta-device initialisation, nn.utils.skip_init) gave it, or stay on the meta device
    after load_state_dict(assign=True), since neither initialises nor loads buffers."""
    bias = getattr(module, name)
    return weights.new_zeros(weights.shape[0]) if bias is None else bias


def _check_rank(module, shape, layouts) -> None:
    """layouts: {rank: the input's dimensions at that rank}."""
    if len(shape) not in layouts:
        raise RuntimeError(f"{module!r}: input must have shape {' or '.join(layouts.values())}, got {tuple(shape)}")


def _check_features(module, shape) -> None:
    if shape[-1] != module.input_features:
        raise RuntimeError(f"{module!r}: input must have {module.input_features} features (input_features), "
                           f"got {shape[-1]} (shape {tuple(shape)})")


def _state_pair(module, state, shape, layout):
    """state as (h, cell) when it is a pair of tensors of `shape` each; else the error saying
    what is wrong, in the module's terms (`layout` names shape's dimensions)."""
    check_state_pair(module, state)
    if state[0].shape == state[1].shape == shape:
        return state
    name, t = ("h", state[0]) if state[0].shape != shape else ("cell", state[1])
    raise RuntimeError(f"{module!r}: state's {name} must have shape {layout} = {tuple(shape)}, got {tuple(t.shape)}")


def _init_uniform(module) -> None:
    """nn.LSTMCell's and nn.LSTM's initialisation: every parameter uniform in ±1/sqrt(state_size)."""
    bound = 1.0 / math.sqrt(module.state_size)
    for parameter in module.parameters():
        nn.init.uniform_(parameter, -bound, bound)


class LLTM(nn.Module):
    """An LLTM cell: an LSTM variant with three gates and an ELU candidate.

    forward(input (batch, input_features), state=None or (h, cell) each (batch, state_size))
    returns (new_h, new_cell). ``state=None`` means zeros, as in nn.LSTMCell. Unbatched, as in
    nn.LSTMCell: input (input_features,), h and cell (state_size,) each, returns 1-D h and cell.
    Its ``state_dict`` loads into a one-layer, one-direction `LLTMSequence` and back.
    ``bias=False``: no bias parameter (``bias`` is None), as in nn.LSTMCell.
    """

    def __init__(self, input_features: int, state_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_sizes(self, input_features, state_size)
        _check_options(self, bias)
        _check_factory(self, dtype)
        self.input_features = input_features
        self.state_size = state_size
        self.has_bias = bias
        factory = {"device": device, "dtype": dtype}
        self.weights = nn.Parameter(torch.empty(3 * state_size, state_size + input_features, **factory))
        _register_bias(self, "bias", 3 * state_size, factory)
        self.register_load_state_dict_pre_hook(functools.partial(_rename_keys, _SEQUENCE_TO_CELL))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_uniform(self)

    def extra_repr(self) -> str:
        return f"{self.input_features}, {self.state_size}" + ("" if self.has_bias else ", bias=False")

    def forward(self, input, state=None):
        # The op checks its arguments too, but in its own terms (sizes read off the weights);
        # these name what the caller passed in the module's: input_features, the state's layout.
        check_tensors(self, input=input)
        shape = input.shape
        batched = len(shape) == 2
        _check_rank(self, shape, {2: "(batch, input_features)", 1: "(input_features,)"})
        _check_features(self, shape)
        if batched:
            state_shape, layout = (shape[0], self.state_size), "(batch, state_size)"
        else:
            state_shape, layout = (self.state_size,), "(state_size,)"
        if state is None:
            old_h = old_cell = input.new_zeros(state_shape)
        else:
            old_h, old_cell = _state_pair(self, state, state_shape, layout)
        bias = _bias(self, "bias", self.weights)
        if batched:
            return lltm(input, self.weights, bias, old_h, old_cell)
        new_h, new_cell = lltm(input[None], self.weights, bias, old_h[None], old_cell[None])
        return new_h[0], new_cell[0]


class LLTMSequence(nn.Module):
    """Layers of LLTM cells over whole sequences, in nn.LSTM's manner: one operator call per
    layer and direction, with no Python loop over time.

    forward(input, state=None, lengths=None) returns (output, (h_n, c_n)):

    - input (time, batch, input_features), (batch, time, input_features) with ``batch_first``,
      (time, input_features) unbatched, or a ``PackedSequence`` (then output is one too, with the
      input's batch sizes and sorted and unsorted indices);
    - state None (zeros) or (h0, c0), each (num_layers * num_directions, batch, state_size), or
      (num_layers * num_directions, state_size) unbatched; h_n and c_n likewise, in the input's
      batch order;
    - lengths None or (batch,) int64, best on the CPU: past its length a sequence's state stays
      and its output is zero, as for a PackedSequence (which carries its own lengths);
    - output (time, batch, num_directions * state_size), batch first with ``batch_first``; the
      reverse direction's features follow the forward's.

    Layer l > 0 takes the previous layer's output, num_directions * state_size features, with
    ``dropout`` applied to it in training. On CUDA a layer's reverse direction runs on a stream of
    its own beside the forward's where the GPU holds both at once (`ops.sequences_at_once`; each
    direction's call is then paired), and autograd runs its backward there too. Parameters, in
    nn.LSTM's pattern: ``weights_l{l}`` (3 * state_size, state_size + layer input features) and
    ``bias_l{l}`` (3 * state_size,) in the cell's layout, and ``weights_l{l}_reverse``,
    ``bias_l{l}_reverse`` for the reverse direction; with ``bias=False`` the biases are None, as in
    nn.LSTM. A one-layer, one-direction module loads an `LLTM` cell's ``state_dict`` (its
    ``weights`` and ``bias`` are ``weights_l0`` and ``bias_l0``), and the cell loads its.
    ``proj_size`` other than 0 is not supported.
    """

    def __init__(self, input_features: int, state_size: int, num_layers: int = 1, *, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        _check_sizes(self, input_features, state_size)
        _check_int(self, num_layers=num_layers)
        _check_options(self, bias, proj_size)
        _check_factory(self, dtype)
        if num_layers <= 0:
            raise ValueError(f"LLTMSequence: num_layers must be positive, got {num_layers}")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout <= 1:
            raise ValueError(f"LLTMSequence: dropout must be a number in [0, 1], the probability of an element "
                             f"being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"LLTMSequence: dropout applies to the output of every layer but the last, so a non-zero "
                          f"dropout expects num_layers greater than 1, got dropout={dropout} and num_layers=1",
                          stacklevel=2)
        self.input_features = input_features
        self.state_size = state_size
        self.num_layers = num_layers
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.has_bias = bias
        factory = {"device": device, "dtype": dtype}
        for layer in range(num_layers):
            features = input_features if layer == 0 else self.num_directions * state_size
            for suffix in self._suffixes():
                weights = torch.empty(3 * state_size, state_size + features, **factory)
                self.register_parameter(f"weights_l{layer}{suffix}", nn.Parameter(weights))
                _register_bias(self, f"bias_l{layer}{suffix}", 3 * state_size, factory)
        self.register_load_state_dict_pre_hook(functools.partial(_rename_keys, _CELL_TO_SEQUENCE))
        self.reset_parameters()

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    def _suffixes(self):
        return ("", "_reverse")[:self.num_directions]

    def reset_parameters(self) -> None:
        _init_uniform(self)

    def flatten_parameters(self) -> None:
        """nn.LSTM's, for code written for it (DataParallel replicas call it): nothing to do, as
        each direction's parameters are already the two tensors its operator takes."""

    def extra_repr(self) -> str:
        text = f"{self.input_features}, {self.state_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.has_bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text

    def forward(self, input, state=None, lengths=None):
        packed = input if isinstance(input, PackedSequence) else None
        if packed is None:
            check_tensors(self, input=input)
        else:
            if lengths is not None:
                raise ValueError(f"{self!r}: lengths must be None for a PackedSequence, which carries its own")
            data = packed.data
            if data.dim() != 2:  # nn.utils.rnn packs sequences of any rank
                raise RuntimeError(f"{self!r}: a PackedSequence's data must have shape (sum of the lengths, "
                                   f"input_features), packed from sequences (length, input_features) each, got "
                                   f"{tuple(data.shape)}")
            _check_features(self, data.shape)
            rows, lengths = _packed_rows(packed)
            time, batch = len(packed.batch_sizes), len(lengths)
            input = data.new_zeros(time * batch, data.shape[1]).index_copy(0, rows, data).view(time, batch, -1)
        shape = input.shape
        batched = len(shape) == 3
        layout = "(batch, time, input_features)" if self.batch_first else "(time, batch, input_features)"
        _check_rank(self, shape, {3: layout, 2: "(time, input_features)"})
        _check_features(self, shape)
        if not batched:
            if lengths is not None:
                raise ValueError(f"{self!r}: lengths needs a batched input, got input of shape {tuple(shape)}")
            input = input[:, None]
        elif self.batch_first and packed is None:
            input = input.transpose(0, 1)
        layers = self.num_layers * self.num_directions
        if state is not None:
            if batched:
                state_shape = (layers, input.shape[1], self.state_size)
                layout = "(num_layers * num_directions, batch, state_size)"
            else:
                state_shape, layout = (layers, self.state_size), "(num_layers * num_directions, state_size)"
            state = _state_pair(self, state, state_shape, layout)
            if not batched:
                state = (state[0][:, None], state[1][:, None])
            elif packed is not None and packed.sorted_indices is not None:  # to the packed (sorted) order
                state = tuple(s.index_select(1, packed.sorted_indices) for s in state)

        output, h_n, c_n = self._layers(input, state, lengths)

        if packed is not None:
            data = output.reshape(time * batch, -1).index_select(0, rows)
            output = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
            if packed.unsorted_indices is not None:  # back to the caller's order
                h_n, c_n = h_n.index_select(1, packed.unsorted_indices), c_n.index_select(1, packed.unsorted_indices)
        elif not batched:
            output, h_n, c_n = output[:, 0], h_n[:, 0], c_n[:, 0]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (h_n, c_n)

    def _layers(self, input, state, lengths):
        """The layers over input (time, batch, input_features), from state None or (h0, c0) each
        (layers * directions, batch, state_size): output, h_n, c_n."""
        reverse = None  # built after the first op call, which checks lengths
        finals = []  # (h, c) of each layer and direction, in state's order
        # The reverse direction on a stream of its own where the GPU holds both at once (every
        # layer's tiling is the same: it depends on the batch and the state alone).
        side = _side_stream(input.device) if self.bidirectional and sequences_at_once(input, self.weights_l0) else None
        for layer in range(self.num_layers):
            outputs = []
            # A missing bias's zeros are made before the fork, so that the reverse direction's stream,
            # which starts there, reads them filled.
            parameters = []
            for suffix in self._suffixes():
                weights = getattr(self, f"weights_l{layer}{suffix}")
                parameters.append((weights, _bias(self, f"bias_l{layer}{suffix}", weights)))
            fork = _fork(side)
            for direction, (weights, bias) in enumerate(parameters):
                initial = None if state is None else (state[0][len(finals)], state[1][len(finals)])
                with _on(side if direction else None, fork, input, weights, bias, *(initial or ()), lengths):
                    if direction and layer == 0:
                        reverse = _reversal_index(input.shape[0], lengths, input.device)
                    x = _gather_time(input, reverse) if direction else input
                    output, final = lltm_sequence(x, weights, bias, initial, lengths=lengths, paired=side is not None)
                    outputs.append(_gather_time(output, reverse) if direction else output)
                finals.append(final)
            if side is not None:
                _join(side, outputs[1], *finals[-1])
            input = torch.cat(outputs, dim=2) if self.bidirectional else outputs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                input = F.dropout(input, self.dropout, training=True)
        if len(finals) == 1:  # a view, not stack's copy: one layer, one direction is the common case
            return input, finals[0][0][None], finals[0][1][None]
        return input, torch.stack([h for h, _ in finals]), torch.stack([c for _, c in finals])


def _packed_rows(packed):
    """Where each row of packed.data lies in the padded (time, batch) input, as t * batch + b, on
    the data's device; and each sequence's length (batch,), on the CPU. The sequences stay in the
    packed order (longest first), as nn.LSTM runs them, so that neither needs the device's
    sorted_indices on the host (which would wait for the device); the caller puts the state into
    that order and the final state back. A gather each way then pads and packs, where
    nn.utils.rnn loops over the steps with a copy each, whose launches bound a packed call on CUDA
    (benchmarks/NOTES.md, "Session 13")."""
    sizes = packed.batch_sizes  # (time,) on the CPU, non-increasing: the sequences running at t
    batch = int(sizes[0])
    steps = torch.repeat_interleave(torch.arange(len(sizes)), sizes)  # each row's t
    ranks = torch.arange(len(steps)) - torch.repeat_interleave(sizes.cumsum(0) - sizes, sizes)  # its b
    lengths = (sizes[None, :] > torch.arange(batch)[:, None]).sum(1)
    return _to_device(steps * batch + ranks, packed.data.device), lengths


def _to_device(t, device):
    """t on `device`: from the CPU to CUDA through pinned memory, which waits for nothing (the
    caching host allocator keeps it until the copy is done), where a copy from pageable memory
    would wait for the device's queued work. A traced graph (torch.compile, export) copies plainly:
    its fake tensors have no pinned memory."""
    if device.type == "cuda" and t.is_cpu and not torch.compiler.is_compiling():
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


_side_streams = threading.local()


def _side_stream(device: torch.device) -> torch.cuda.Stream:
    """The stream a bidirectional layer's reverse direction runs on beside the forward's: one for
    each thread and device, so that no other thread's work joins a capture that this thread's
    fork pulled the stream into. (torch hands streams out from a pool of 32 a device, which other
    code draws from too: a shared one orders more work than needed, no less.) At the greatest
    priority: the forward direction's persistent kernel, queued first, would otherwise take its SMs
    as soon as its input product ends and leave the reverse direction's product the rest, starting
    the reverse recurrence late; this way the reverse product's blocks go first and the two
    recurrences run together."""
    streams = _side_streams.__dict__.setdefault("by_device", {})
    if device not in streams:
        streams[device] = torch.cuda.Stream(device, priority=torch.cuda.Stream.priority_range()[1])
    return streams[device]


def _fork(side):
    """Where the current stream is now, for `side` to start from (None without a side stream).
    Recorded before the forward direction's launches, so that the reverse waits only for what
    both read (the layer's input, the initial state)."""
    if side is None:
        return None
    event = torch.cuda.Event()
    event.record(torch.cuda.current_stream(side.device))
    return event


_HERE = contextlib.nullcontext()


def _on(side, fork, *read_there):
    """Work issued inside runs on `side`, after `fork`, and autograd runs its backward there too;
    on the current stream where `side` is None. The caching allocator keeps the CUDA tensors of
    `read_there` (made on the current stream) until `side`'s uses of them are done: autograd frees
    what the backward saved once its kernels are queued, and the current stream may by then be
    running the other direction's backward, whose allocations would take that memory. Without a
    side stream, a shared null context: a generator's context manager made at each call costs
    host time that a small sequence's call feels (benchmarks/NOTES.md, "Session 48")."""
    return _HERE if side is None else _on_side(side, fork, read_there)


@contextlib.contextmanager
def _on_side(side, fork, read_there):
    for t in read_there:
        if isinstance(t, torch.Tensor) and t.is_cuda:
            t.record_stream(side)
    side.wait_event(fork)
    with torch.cuda.stream(side):
        yield


def _join(side, *made_there):
    """The current stream waits for `side`, and the caching allocator keeps the tensors made there
    until the current stream's uses of them are done too (they are handed out again on `side`)."""
    current = torch.cuda.current_stream(side.device)
    current.wait_stream(side)
    for t in made_there:
        t.record_stream(current)


def _reversal_index(time, lengths, device):
    """(time, batch) index, or None for all of time: each sequence's first lengths[b] steps in
    reverse order, the steps past its length in place. Gathering with it is its own inverse."""
    if lengths is None:
        return None
    t = torch.arange(time, device=device)[:, None]
    lengths = _to_device(lengths, device)
    return torch.where(t < lengths, lengths - 1 - t, t)


def _gather_time(x, index):
    """x (time, batch, features) with each sequence's steps in the order `index` gives."""
    if index is None:
        return x.flip(0)
    return x.gather(0, index[:, :, None].expand(x.shape))
