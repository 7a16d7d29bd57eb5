"""Session 23: three no-grad forwards of one size (for ncu), B F S dtype T [paired] (paired: the
sequence op's tiling for two launches at once, session 37).

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s23/scripts/one_forward.py 8 256 512 float16 256
"""
import sys

import torch

from lltm_jit import lltm_sequence

B, F, S, T = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
dtype = getattr(torch, sys.argv[4])
paired = {"paired": True} if sys.argv[6:] == ["paired"] else {}
gen = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, F, device="cuda", generator=gen).to(dtype)
w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype)
b = (torch.randn(3 * S, device="cuda", generator=gen) * 0.1).to(dtype)
with torch.no_grad():
    for _ in range(3):
        lltm_sequence(x, w, b, **paired)
torch.cuda.synchronize()
