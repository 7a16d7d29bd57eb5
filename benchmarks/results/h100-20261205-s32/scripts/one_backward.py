"""Session 32: three forward + backward calls of one size (for ncu's samples of the backward
kernel), B F S dtype T; session 23's one_forward.py with a backward.

    PYTHONPATH=. python3 benchmarks/results/h100-20261205-s32/scripts/one_backward.py 8 256 512 float16 256
"""
import sys

import torch

from lltm_jit import lltm_sequence

B, F, S, T = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
dtype = getattr(torch, sys.argv[4])
gen = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, F, device="cuda", generator=gen).to(dtype)
w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
b = (torch.randn(3 * S, device="cuda", generator=gen) * 0.1).to(dtype).requires_grad_()
for _ in range(3):
    out, _ = lltm_sequence(x, w, b)
    out.float().sum().backward()
torch.cuda.synchronize()
