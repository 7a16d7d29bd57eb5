"""`LLTM`, the cell as an nn.Module."""

import math

import torch
from torch import nn

from .ops import lltm


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
