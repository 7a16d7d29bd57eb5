"""lltm_jit.LLTM, the nn.Module."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import rel_err

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


@pytest.mark.slow
def test_ddp_example_trains_two_ranks_in_step():
    """examples/train_ddp.py under torchrun: two ranks import at once, train with
    DistributedDataParallel and end with identical parameters. On CPU ranks (gloo), so that it
    runs anywhere; on two GPUs (NCCL) it ran on an H200 pair (benchmarks/NOTES.md)."""
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(repo))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(repo / "examples" / "train_ddp.py")]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parameters identical on every rank: True" in result.stdout
