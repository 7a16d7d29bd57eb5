"""Session 51: the probed streamed backward (probe_backward.py) forced at a few sizes, bfloat16,
T = 64, fwd+bwd with the input's gradient; the probe's lines of the second backward, and the
backward's kernels with their CUDA time (torch.profiler)."""
import ctypes
import os
import sys

import torch

import lltm_jit

libc = ctypes.CDLL(None)  # the kernels' printf lands in C's stdout buffer
os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = sys.argv[1] if len(sys.argv) > 1 else "streamed"
for B, F, S in [(128, 1024, 1024), (256, 256, 768), (64, 256, 512), (256, 512, 1024)]:
    torch.manual_seed(0)
    x = torch.randn(64, B, F, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    layer = lltm_jit.LLTMSequence(F, S, device="cuda", dtype=torch.bfloat16)
    for i in range(2):
        out, _ = layer(x)
        g = torch.randn_like(out)
        torch.cuda.synchronize()
        print(f"== {B}x{F}x{S} backward {i}", flush=True)
        if i == 0:
            out.backward(g)
            torch.cuda.synchronize()
            libc.fflush(None)
            continue
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            out.backward(g)
            torch.cuda.synchronize()
        libc.fflush(None)
        for e in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:4]:
            print(f"   {e.device_time_total:9.1f} us  {e.count:4d}x  {e.key[:90]}", flush=True)
