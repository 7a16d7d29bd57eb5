"""Session 20: where a sequence call's device and host time go, as bench.py's row runs it
(LLTMSequence, fwd+bwd, loss = output.sum()): torch.profiler's kernels (device us a call) and the
operators' host self time (us a call), then the wall time a call. Args: B F S T dtype.

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s20/scripts/seq_profile.py 16 32 128 64 float32
"""
import sys
import time
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

import lltm_jit

B, F, S, T = map(int, sys.argv[1:5])
dtype = getattr(torch, sys.argv[5])
torch.manual_seed(0)
model = lltm_jit.LLTMSequence(F, S).to("cuda", dtype)
x = torch.randn(T, B, F, device="cuda", dtype=dtype, requires_grad=True)


def call():
    out, _ = model(x)
    out.float().sum().backward()


for _ in range(10):
    call()
torch.cuda.synchronize()
calls = 20
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(calls):
        call()
    torch.cuda.synchronize()
kernels = defaultdict(float)
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA:
        kernels[e.name] += e.device_time / calls
print(f"{B}x{F}x{S} T={T} {sys.argv[5]}: kernels, device us a call")
for name, t in sorted(kernels.items(), key=lambda kv: -kv[1])[:12]:
    print(f"{t:9.1f}  {name[:100]}")
print(f"{sum(kernels.values()):9.1f}  total")
print("operators, host self us a call")
rows = sorted(((e.self_cpu_time_total / calls, e.count // calls, e.key) for e in prof.key_averages()), reverse=True)
for t, n, name in rows[:14]:
    print(f"{t:9.1f}  {n:3d}x {name[:90]}")
for mode in ("wall",):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    print(f"wall {(time.perf_counter() - start) / 50 * 1e6:.1f} us a call")
