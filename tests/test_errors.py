"""Bad input gets an error that names the argument, never a crash or a wrong result."""

import pytest
import torch
from helpers import make_inputs, requires_cuda

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
    "weights features": (replace(1, torch.randn(3 * S, S + F + 1, dtype=torch.float64)),
                         r"weights must have shape .* = \(15, 11\), got \(15, 12\)"),
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
def test_bad_input_names_the_argument(case):
    args, message = CASES[case]
    with pytest.raises(RuntimeError, match=message):
        lltm(*args)


@requires_cuda
def test_mixed_devices():
    args = make_inputs(B, F, S, requires_grad=False)
    args[3] = args[3].cuda()
    with pytest.raises(RuntimeError, match="all tensors must be on one device: input is on cpu but old_h is on cuda"):
        lltm(*args)


def test_backward_op_checks_its_arguments():
    args = make_inputs(B, F, 0, requires_grad=False)  # state_size 0
    grads = [torch.randn(B, 0, dtype=torch.float64)] * 2
    gates, old_cell = torch.randn(B, 0, dtype=torch.float64), torch.randn(B, 0, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="old_h must have a non-empty state"):
        torch.ops.lltm_jit.backward(*grads, args[0], args[1], args[3], gates, old_cell, [True, True, True])
