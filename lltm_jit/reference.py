"""The LLTM cell in plain PyTorch: the reference the kernels are checked against."""

import torch
import torch.nn.functional as F


def reference_lltm(input, weights, bias, old_h, old_cell):
    """One LLTM step in eager PyTorch (the tutorial's Python version).

    input (batch, input_features), weights (3 * state_size, state_size + input_features),
    bias (3 * state_size,) or (1, 3 * state_size), old_h and old_cell (batch, state_size).
    Returns new_h and new_cell, each (batch, state_size).
    """
    x = torch.cat([old_h, input], dim=1)
    gates = torch.addmm(bias, x, weights.t())
    input_gate, output_gate, candidate = gates.chunk(3, dim=1)
    new_cell = old_cell + F.elu(candidate) * torch.sigmoid(input_gate)
    new_h = torch.tanh(new_cell) * torch.sigmoid(output_gate)
    return new_h, new_cell
