"""Session 18: three training forwards of one size (for ncu): B F S dtype, T = 64.

    PYTHONPATH=.:tests python3 benchmarks/results/h200-20261203-s18/scripts/one_forward.py 8 256 512 float16
"""
import sys

import torch

from lltm_jit import lltm_sequence
from test_sequence import make_sequence

B, F, S = map(int, sys.argv[1:4])
args = [a.detach().to(getattr(torch, sys.argv[4])).requires_grad_() for a in make_sequence(64, B, F, S, device="cuda", seed=3)]
for _ in range(3):
    lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
torch.cuda.synchronize()
