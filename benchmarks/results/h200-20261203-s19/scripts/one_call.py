"""Session 19: three forward + backward calls of one size (for ncu): B F S dtype, T = 64.

    PYTHONPATH=.:tests python3 benchmarks/results/h200-20261203-s19/scripts/one_call.py 64 256 512 float32
"""
import sys

import torch

from lltm_jit import lltm_sequence
from test_sequence import make_sequence

B, F, S = map(int, sys.argv[1:4])
args = [a.detach().to(getattr(torch, sys.argv[4])).requires_grad_() for a in make_sequence(64, B, F, S, device="cuda", seed=3)]
for _ in range(3):
    out = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))[0]
    torch.autograd.grad(out.float().sum(), args[1:3])
torch.cuda.synchronize()
