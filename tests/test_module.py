"""lltm_jit.LLTM, the nn.Module."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import assert_matches_reference, make_inputs, rel_err

import lltm_jit


def test_parameters_and_initialisation():
    torch.manual_seed(0)
    module = lltm_jit.LLTM(10, 20)
    assert module.weights.shape == (60, 30) and module.bias.shape == (60,)
    bound = 1 / math.sqrt(20)
    for p in module.parameters():
        assert p.abs().max() <= bound and p.std() > bound / 4  # uniform(-bound, bound), not zeros
    before = module.weights.detach().clone()
    module.reset_parameters()
    assert not torch.equal(before, module.weights)
    assert repr(module) == "LLTM(10, 20)"


def test_state_none_means_zeros(device):
    module = lltm_jit.LLTM(7, 9, device=device, dtype=torch.float64)
    x = torch.randn(4, 7, device=device, dtype=torch.float64)
    zeros = torch.zeros(4, 9, device=device, dtype=torch.float64)
    for a, b in zip(module(x), module(x, (zeros, zeros))):
        assert torch.equal(a, b)


def test_module_is_the_functional_op_with_its_parameters(device):
    module = lltm_jit.LLTM(5, 6, device=device, dtype=torch.float64)
    x, h, c = (torch.randn(3, n, device=device, dtype=torch.float64) for n in (5, 6, 6))
    ref = lltm_jit.reference_lltm(x, module.weights, module.bias, h, c)
    for a, b in zip(module(x, (h, c)), ref):
        assert rel_err(a, b) < 1e-12


def test_to_dtype_and_device(device):
    module = lltm_jit.LLTM(5, 6).to(device=device, dtype=torch.float64)
    assert module.weights.dtype == torch.float64 and module.weights.device.type == device
    new_h, _ = module(torch.randn(2, 5, device=device, dtype=torch.float64))
    assert new_h.dtype == torch.float64


def test_sequence_training_step_reduces_loss():
    torch.manual_seed(0)
    module = lltm_jit.LLTM(4, 8)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
    xs, target = torch.randn(5, 16, 4), torch.randn(16, 8)

    def loss():
        state = None
        for x in xs:
            state = module(x, state)
        return (state[0] - target).pow(2).mean()

    first = loss()
    first.backward()
    optimizer.step()
    assert loss() < first


@pytest.mark.parametrize("sizes", [(0, 5), (5, 0), (-1, 3)])
def test_rejects_non_positive_sizes(sizes):
    with pytest.raises(ValueError, match="input_features and state_size must be positive"):
        lltm_jit.LLTM(*sizes)



def test_unbatched_input_as_in_lstm_cell(device):
    """1-D input (input_features,) and state (state_size,) each give 1-D h and cell, the batch of
    one's outputs and gradients, as nn.LSTMCell does."""
    module = lltm_jit.LLTM(5, 6, device=device, dtype=torch.float64)
    args = make_inputs(1, 5, 6, device=device, seed=2)
    args = [a.detach()[0].requires_grad_() if i in (0, 3, 4) else a for i, a in enumerate(args)]  # x, h, c

    def ours(x, w, b, h, c):
        return torch.func.functional_call(module, {"weights": w, "bias": b}, (x, (h, c)))

    def ref(x, w, b, h, c):
        new_h, new_cell = lltm_jit.reference_lltm(x[None], w, b, h[None], c[None])
        return new_h[0], new_cell[0]

    new_h, new_cell, *_ = assert_matches_reference(args, ours, ref)
    assert new_h.shape == new_cell.shape == (6,)
    x = args[0].detach()
    zeros = torch.zeros(6, device=device, dtype=torch.float64)
    for a, b in zip(module(x), module(x, (zeros, zeros)), strict=True):
        assert a.shape == (6,) and torch.equal(a, b)


def test_torch_compile_fullgraph_batched_and_unbatched():
    """The module's argument checks are shape comparisons that compile into guards. A failing one
    still raises under fullgraph: dynamo's error (a RuntimeError) carries the module's message."""
    torch._dynamo.reset()
    module = lltm_jit.LLTM(4, 3, dtype=torch.float64)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")  # inductor's input, not its codegen
    for batch in [(5,), ()]:
        x = torch.randn(*batch, 4, dtype=torch.float64)
        state = tuple(torch.randn(*batch, 3, dtype=torch.float64) for _ in range(2))
        for out, ref in zip(compiled(x, state), module(x, state), strict=True):
            assert out.shape == (*batch, 3) and rel_err(out, ref) < 1e-14
        for out, ref in zip(compiled(x), module(x), strict=True):
            assert rel_err(out, ref) < 1e-14
    # torch 2.11's dynamo error shows the message's pieces unformatted: "input must have ', '4', ..."
    with pytest.raises(RuntimeError, match=r"input must have .*4.* features \(input_features\)"):
        compiled(torch.randn(5, 6, dtype=torch.float64))


B = 4
# (input shape, state shapes or a state, the error, its message): the module's own terms, the
# types of the rule in tests/test_errors.py.
MODULE_ERRORS = {
    "input features": ((B, 5), None, RuntimeError,
                       "LLTM(3, 5): input must have 3 features (input_features), got 5 (shape (4, 5))"),
    "unbatched input features": ((4,), None, RuntimeError,
                                 "LLTM(3, 5): input must have 3 features (input_features), got 4 (shape (4,))"),
    "input rank 3": ((2, B, 3), None, RuntimeError,
                     "LLTM(3, 5): input must have shape (batch, input_features) or (input_features,), "
                     "got (2, 4, 3)"),
    "input rank 0": ((), None, RuntimeError, "input must have shape (batch, input_features) or"),
    "h batch": ((B, 3), ((B + 1, 5), (B, 5)), RuntimeError,
                "LLTM(3, 5): state's h must have shape (batch, state_size) = (4, 5), got (5, 5)"),
    "h state size": ((B, 3), ((B, 6), (B, 5)), RuntimeError,
                     "LLTM(3, 5): state's h must have shape (batch, state_size) = (4, 5), got (4, 6)"),
    "cell state size": ((B, 3), ((B, 5), (B, 4)), RuntimeError,
                        "LLTM(3, 5): state's cell must have shape (batch, state_size) = (4, 5), got (4, 4)"),
    "batched input, unbatched state": ((B, 3), ((5,), (5,)), RuntimeError,
                                       "LLTM(3, 5): state's h must have shape (batch, state_size) = (4, 5), "
                                       "got (5,)"),
    "unbatched input, batched state": ((3,), ((1, 5), (1, 5)), RuntimeError,
                                       "LLTM(3, 5): state's h must have shape (state_size,) = (5,), got (1, 5)"),
    "unbatched input, batched cell": ((3,), ((5,), (1, 5)), RuntimeError,
                                      "LLTM(3, 5): state's cell must have shape (state_size,) = (5,), got (1, 5)"),
    "state a tensor": ((B, 3), torch.zeros(B, 5), TypeError,
                       "LLTM(3, 5): state must be a tuple (h, cell), got a Tensor"),
    "state a tuple of one": ((B, 3), (torch.zeros(B, 5),), ValueError,
                             "LLTM(3, 5): state must be a tuple (h, cell), got a tuple of 1"),
    "state a tuple of three": ((B, 3), (torch.zeros(B, 5),) * 3, ValueError,
                               "LLTM(3, 5): state must be a tuple (h, cell), got a tuple of 3"),
}


@pytest.mark.parametrize("case", MODULE_ERRORS, ids=list(MODULE_ERRORS))
def test_errors_name_the_module_and_its_terms(case):
    input_shape, state, error, message = MODULE_ERRORS[case]
    module = lltm_jit.LLTM(3, 5, dtype=torch.float64)
    if isinstance(state, tuple) and all(isinstance(s, tuple) for s in state):
        state = tuple(torch.randn(shape, dtype=torch.float64) for shape in state)
    with pytest.raises(error, match=re.escape(message)):
        module(torch.randn(input_shape, dtype=torch.float64), state)


def test_state_may_be_a_list():
    """nn.LSTMCell takes any pair; so does LLTM."""
    module = lltm_jit.LLTM(3, 5, dtype=torch.float64)
    x, h, c = (torch.randn(2, n, dtype=torch.float64) for n in (3, 5, 5))
    for a, b in zip(module(x, [h, c]), module(x, (h, c)), strict=True):
        assert torch.equal(a, b)

@pytest.mark.slow
@pytest.mark.parametrize("steps", [30, 4])
def test_ddp_example_trains_two_ranks_in_step(steps):
    """examples/train_ddp.py under torchrun: two ranks import at once, train with
    DistributedDataParallel and end with identical parameters and a lower loss, every rank
    exiting 0 (a short run too: the ranks' mean loss, halves against halves). On CPU ranks
    (gloo), so that it runs anywhere; on two GPUs (NCCL) it ran on an H200 pair
    (benchmarks/NOTES.md)."""
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(repo))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(repo / "examples" / "train_ddp.py"), "--steps", str(steps)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parameters identical on every rank: True; the loss fell: True" in result.stdout


def test_bias_false_as_in_lstm_cell(device):
    """bias=False: no bias parameter, in the state_dict or the gradients, as nn.LSTMCell; the cell
    computes as one whose bias is zero, in whatever dtype and device the module is moved to."""
    module = lltm_jit.LLTM(3, 5, bias=False).to(device=device, dtype=torch.float64)
    assert module.bias is None and list(module.state_dict()) == ["weights"] and repr(module) == "LLTM(3, 5, bias=False)"
    x = torch.randn(4, 3, device=device, dtype=torch.float64)
    state = tuple(torch.randn(4, 5, device=device, dtype=torch.float64) for _ in range(2))
    zero = torch.zeros(15, device=device, dtype=torch.float64)
    for ours, ref in zip(module(x, state), lltm_jit.reference_lltm(x, module.weights, zero, *state), strict=True):
        assert rel_err(ours, ref) < 1e-14
    module(x)[0].sum().backward()
    assert module.weights.grad is not None and torch.isfinite(module.weights.grad).all()
