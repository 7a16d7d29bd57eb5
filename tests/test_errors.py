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


# ---------------------------------------------------------------------------------------------
# Arguments of the wrong type, at every public entry point: a TypeError that names the argument
# and its type, never the value (a list of a large batch would be megabytes of message).

def _entry_points():
    import numpy as np

    import lltm_jit

    x, w, b, h, c = make_inputs(B, F, S, requires_grad=False)
    seq = torch.randn(3, B, F, dtype=torch.float64)
    big = [[0.5] * 512] * 200
    cell, layers = lltm_jit.LLTM(F, S).double(), lltm_jit.LLTMSequence(F, S).double()
    return {
        "lltm input list": (lambda: lltm(big, w, b, h, c), TypeError, "lltm: input must be a Tensor, got list"),
        "lltm input ndarray": (lambda: lltm(np.ones((B, F)), w, b, h, c), TypeError,
                               "lltm: input must be a Tensor, got ndarray"),
        "lltm old_h None": (lambda: lltm(x, w, b, None, c), TypeError, "lltm: old_h must be a Tensor, got None"),
        "lltm input None": (lambda: lltm(None, w, b, h, c), TypeError, "lltm: input must be a Tensor, got None"),
        "lltm weights list": (lambda: lltm(x, w.tolist(), b, h, c), TypeError, "lltm: weights must be a Tensor, got list"),
        "lltm_sequence input list": (lambda: lltm_jit.lltm_sequence(big, w, b), TypeError,
                                     "lltm_sequence: input must be a Tensor, got list"),
        "lltm_sequence bias None": (lambda: lltm_jit.lltm_sequence(seq, w, None), TypeError,
                                    "lltm_sequence: bias must be a Tensor, got None"),
        "lltm_sequence state tensor": (lambda: lltm_jit.lltm_sequence(seq, w, b, h), TypeError,
                                       r"lltm_sequence: state must be a tuple \(h0, c0\), got a Tensor"),
        "lltm_sequence state of lists": (lambda: lltm_jit.lltm_sequence(seq, w, b, (h.tolist(), c)), TypeError,
                                         "lltm_sequence: state's h0 must be a Tensor, got list"),
        "lltm_sequence lengths list": (lambda: lltm_jit.lltm_sequence(seq, w, b, lengths=[3] * B), TypeError,
                                       "lltm_sequence: lengths must be a Tensor, got list"),
        "LLTM input list": (lambda: cell(big), TypeError, r"LLTM\(6, 5\): input must be a Tensor, got list"),
        "LLTM input ndarray": (lambda: cell(np.ones((B, F))), TypeError,
                               r"LLTM\(6, 5\): input must be a Tensor, got ndarray"),
        "LLTM input None": (lambda: cell(None), TypeError, r"LLTM\(6, 5\): input must be a Tensor, got None"),
        "LLTM state of None": (lambda: cell(x, (None, c)), TypeError,
                               r"LLTM\(6, 5\): state's h must be a Tensor, got None"),
        "LLTM size float": (lambda: lltm_jit.LLTM(3.5, 4), TypeError, "LLTM: input_features must be an int, got float"),
        "LLTM integer dtype": (lambda: lltm_jit.LLTM(3, 4, dtype=torch.int64), TypeError,
                               "LLTM: dtype must be a floating-point dtype, got torch.int64"),
        "LLTMSequence input list": (lambda: layers(big), TypeError,
                                    r"LLTMSequence\(6, 5\): input must be a Tensor, got list"),
        "LLTMSequence input None": (lambda: layers(None), TypeError,
                                    r"LLTMSequence\(6, 5\): input must be a Tensor, got None"),
        "LLTMSequence state of lists": (lambda: layers(seq, ([[0.0]], c)), TypeError,
                                        r"LLTMSequence\(6, 5\): state's h must be a Tensor, got list"),
        "LLTMSequence layers float": (lambda: lltm_jit.LLTMSequence(3, 4, num_layers=2.0), TypeError,
                                      "LLTMSequence: num_layers must be an int, got float"),
        "LLTMSequence state_size bool": (lambda: lltm_jit.LLTMSequence(3, True), TypeError,
                                         "LLTMSequence: state_size must be an int, got bool"),
        "LLTMSequence integer dtype": (lambda: lltm_jit.LLTMSequence(3, 4, dtype=torch.int32), TypeError,
                                       "LLTMSequence: dtype must be a floating-point dtype, got torch.int32"),
    }


ENTRY_CASES = list(_entry_points())


@pytest.mark.parametrize("case", ENTRY_CASES)
def test_an_argument_of_the_wrong_type_is_named_with_its_type(case):
    call, error, message = _entry_points()[case]
    with pytest.raises(error, match=f"^{message}$") as raised:
        call()
    assert len(str(raised.value)) < 200
