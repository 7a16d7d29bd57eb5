"""`LLTM`, the cell, and `LLTMSequence`, the cell over whole sequences, as nn.Modules."""

import math

import torch
from torch import nn

from .ops import lltm, lltm_sequence


class LLTM(nn.Module):
    """An LLTM cell: an LSTM variant with three gates and an ELU candidate.

    forward(input (batch, input_features), state=None or (h, cell) each (batch, state_size))
    returns (new_h, new_cell). ``state=None`` means zeros, as in nn.LSTMCell.
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
        if state is None:
            zeros = input.new_zeros(input.shape[0], self.state_size)
            state = (zeros, zeros)
        old_h, old_cell = state
        return lltm(input, self.weights, self.bias, old_h, old_cell)


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
