"""The CPU sequence forward at 64x256x512 T=64 in float32 against float16 (in_float's conversions
around the float recurrence): rounds alternating the two, best and median ms of a call, then where
one float16 call's time goes (torch.profiler)."""
import statistics
import time

import torch

import lltm_jit

torch.manual_seed(0)
T, B, F, S = 64, 64, 256, 512
runs = {}
for dtype in (torch.float32, torch.float16):
    module = lltm_jit.LLTMSequence(F, S).to(dtype)
    runs[dtype] = (module, torch.randn(T, B, F, dtype=dtype))
times = {dtype: [] for dtype in runs}
with torch.no_grad():
    for _ in range(8):
        for dtype, (module, x) in runs.items():
            start = time.perf_counter()
            module(x)
            times[dtype].append((time.perf_counter() - start) * 1e3)
for dtype, t in times.items():
    print(f"{dtype} no_grad forward: best {min(t):.1f} ms, median {statistics.median(t):.1f} ms")
module, x = runs[torch.float16]
with torch.no_grad(), torch.profiler.profile() as prof:
    module(x)
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=6))
