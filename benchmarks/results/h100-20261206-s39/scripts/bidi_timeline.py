"""Session 39: where a bidirectional LLTMSequence's forward spends its time, kernel by kernel
(torch.profiler, the sixth call), at issue 21's 2-layer row (64x256x512 fp32, T = 128).
Usage: python3 bidi_timeline.py LABEL [fwd|fwd+bwd]"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import lltm_jit

label, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "fwd")
torch.manual_seed(0)
m = lltm_jit.LLTMSequence(256, 512, 2, bidirectional=True, device="cuda")
x = torch.randn(128, 64, 256, device="cuda", requires_grad=True)


def call():
    if mode == "fwd":
        with torch.no_grad():
            m(x)
    else:
        y, _ = m(x)
        y.sum().backward()


for _ in range(5):
    call()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    call()
    torch.cuda.synchronize()
last = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
              key=lambda e: e.time_range.start)
t0 = last[0].time_range.start
end = max(e.time_range.end for e in last)
print(f"{label} {mode}: {len(last)} kernels, span {end - t0:.1f} us")
busy = {}
for e in last:
    s = e.time_range.start - t0
    d = e.time_range.end - e.time_range.start
    print(f"{label}  {s:8.1f} {d:8.1f}  {str(getattr(e, 'device_resource_id', '?')):>4}  {e.name[:90]}")
    busy.setdefault(e.name[:40], 0.0)
    busy[e.name[:40]] += d
for k, v in sorted(busy.items(), key=lambda kv: -kv[1]):
    print(f"{label} sum {v:8.1f}  {k}")
