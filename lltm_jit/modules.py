"""`LLTM`, the cell, and `LLTMSequence`, the cell over whole sequences, as nn.Modules."""

import math

import torch
from torch import nn

from .ops import lltm, lltm_sequence


class LLTM(nn.Module):
    """An LLTM cell: an LSTM variant with three gates and an ELU candidate.

    forward(input (batch, input_features), state=None or (h, cell) each (batch, state_size))
    returns (new_h, new_cell). ``state=None`` means zeros, as in nn.LSTMCell. Unbatched, as in
    nn.LSTMCell: input (input_features,), h and cell (state_size,) each, returns 1-D h and cell.
    """

    def __init__(self, input_features: int, state_size: int, device=None, dtype=None):
        super().__init__()
        if input_features <= 0 or state_size <= 0:
            raise ValueError(
                f"LLTM: input_features and state_size must be positive, got {input_features} and {state_size}"
            )
        self.input_features = input_features
        self.state_size = state_size
        factory = {"device": device, "dtype": dtype}
        self.weights = nn.Parameter(torch.empty(3 * state_size, state_size + input_features, **factory))
        self.bias = nn.Parameter(torch.empty(3 * state_size, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.state_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_features}, {self.state_size}"

    def forward(self, input, state=None):
        # The op checks its arguments too, but in its own terms: a wrong input width would blame
        # the weights. These checks name what the caller passed, with nn.LSTMCell's error types.
        shape = input.shape
        batched = len(shape) == 2
        if not batched and len(shape) != 1:
            raise ValueError(f"{self!r}: input must have shape (batch, input_features) or (input_features,), "
                             f"got {tuple(shape)}")
        if shape[-1] != self.input_features:
            raise RuntimeError(f"{self!r}: input must have {self.input_features} features (input_features), "
                               f"got {shape[-1]} (shape {tuple(shape)})")
        state_shape = (shape[0], self.state_size) if batched else (self.state_size,)
        if state is None:
            old_h = old_cell = input.new_zeros(state_shape)
        elif (isinstance(state, (tuple, list)) and len(state) == 2
              and state[0].shape == state_shape and state[1].shape == state_shape):
            old_h, old_cell = state
        else:
            raise self._state_error(state, state_shape)
        if batched:
            return lltm(input, self.weights, self.bias, old_h, old_cell)
        new_h, new_cell = lltm(input[None], self.weights, self.bias, old_h[None], old_cell[None])
        return new_h[0], new_cell[0]

    def _state_error(self, state, shape) -> Exception:
        """The error for a state that is not a pair (h, cell) of the given shape each."""
        if not isinstance(state, (tuple, list)):
            return TypeError(f"{self!r}: state must be a tuple (h, cell), got a {type(state).__name__}")
        if len(state) != 2:
            kind = type(state).__name__
            return ValueError(f"{self!r}: state must be a tuple (h, cell), got a {kind} of {len(state)}")
        name, t = ("h", state[0]) if state[0].shape != shape else ("cell", state[1])
        layout = "(batch, state_size)" if len(shape) == 2 else "(state_size,)"
        return RuntimeError(f"{self!r}: state's {name} must have shape {layout} = {shape}, got {tuple(t.shape)}")


class LLTMSequence(LLTM):
    """The LLTM cell over whole sequences, in nn.LSTM's manner, one operator call per sequence.

    forward(input (time, batch, input_features), or (batch, time, input_features) with
    ``batch_first``; state None (zeros) or (h0, c0), each (batch, state_size); lengths None or
    (batch,) int64) returns output (time, batch, state_size) (batch first with ``batch_first``)
    and (h_n, c_n). Its parameters are the cell's, with the cell's names and shapes: a
    `state_dict` moves between `LLTM` and `LLTMSequence`.
    """

    def __init__(self, input_features: int, state_size: int, batch_first: bool = False, device=None, dtype=None):
        super().__init__(input_features, state_size, device=device, dtype=dtype)
        self.batch_first = batch_first

    def extra_repr(self) -> str:
        return super().extra_repr() + (", batch_first=True" if self.batch_first else "")

    def forward(self, input, state=None, lengths=None):
        return lltm_sequence(input, self.weights, self.bias, state, lengths=lengths, batch_first=self.batch_first)
