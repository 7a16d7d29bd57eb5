"""Session 33: the device's kernels of one bench.py call of the 16x32x128 fp32 sequence row
(T = 64, the module, grad of input and parameters), by the profiler: each kernel's time, the
sum, and the call's span on the device, so that the GPU-bound part and the host-bound gaps of
the row separate.

    PYTHONPATH=. python3 benchmarks/results/h200-20261205-s33/scripts/kernels_small.py [BxFxS] [T] [dtype]
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import lltm_jit

B, F, S = (int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "16x32x128").split("x"))
T = int(sys.argv[2]) if len(sys.argv) > 2 else 64
dtype = getattr(torch, sys.argv[3] if len(sys.argv) > 3 else "float32")
device = torch.device("cuda")
torch.manual_seed(0)
model = lltm_jit.LLTMSequence(F, S).to(device, dtype)
lstm = torch.nn.LSTM(F, S).to(device, dtype)
x = torch.randn(T, B, F, device=device, dtype=dtype, requires_grad=True)
calls = {
    "ours": lambda: torch.autograd.grad(model(x)[0].sum(), [x, *model.parameters()]),
    "ours forward": lambda: model(x),
    "cuDNN": lambda: torch.autograd.grad(lstm(x)[0].sum(), [x, *lstm.parameters()]),
}
print(f"{B}x{F}x{S} T={T} {dtype}, {torch.cuda.get_device_name()}, torch {torch.__version__}")
for name, call in calls.items():
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            call()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels.sort(key=lambda e: e.time_range.start)
    span = (kernels[-1].time_range.end - kernels[0].time_range.start) / 5
    busy = sum(e.time_range.elapsed_us() for e in kernels) / 5
    print(f"\n{name}: {len(kernels) // 5} kernels a call, busy {busy:.1f} us of a {span:.1f} us span a call")
    first = kernels[: len(kernels) // 5]
    for e in first:
        print(f"  {e.time_range.elapsed_us():8.1f}  {e.name[:110]}")
