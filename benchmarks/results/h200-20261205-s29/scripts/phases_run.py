"""Session 29: runs sizes through a tree patched by phases.py and prints each kernel's phase cycles
a step (block 0 and the last block), with the step's wall time from CUDA events of the same
calls. Args: BxFxS:dtype:T ... (forward under no_grad, then forward + backward)."""
import os
import sys

import torch

from lltm_jit import lltm_sequence

for spec in sys.argv[1:]:
    size, dtype, T = spec.split(":")
    B, F, S = map(int, size.split("x"))
    T = int(T)
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, B, F, device="cuda", generator=gen).to(dtype)
    w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = (torch.randn(3 * S, device="cuda", generator=gen) * 0.1).to(dtype).requires_grad_()
    for kind in ("fwd", "fwd+bwd"):
        for rep in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            sys.stdout.flush()
            print(f"== {spec} {kind} rep {rep}", flush=True)
            start.record()
            if kind == "fwd":
                with torch.no_grad():
                    lltm_sequence(x, w, b)
            else:
                out, _ = lltm_sequence(x, w, b)
                out.float().sum().backward()
            end.record()
            torch.cuda.synchronize()
            print(f"== wall {start.elapsed_time(end) * 1e3:.1f} us, {start.elapsed_time(end) * 1e3 / T:.2f} us a step",
                  flush=True)
