"""Session 38: cuDNN's nn.LSTM at 1024x256x256 bf16 T=64 took 1 498 / 4 067 us (forward / fwd+bwd)
in one bench.py process and 866 / 2 359 in another (calls a and b). Each run of this script is a
fresh process: ours and cuDNN's times (CUDA events, median of 15 samples of 5 calls), then the
kernels cuDNN ran with their device time (torch.profiler), to see whether it chose differently.
  PYTHONPATH=. python3 cudnn_variance.py LABEL"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import lltm_jit

T, B, F, S = 64, 1024, 256, 256
dev, dtype = torch.device("cuda"), torch.bfloat16
torch.manual_seed(0)
x = torch.randn(T, B, F, device=dev, dtype=dtype, requires_grad=True)
lstm = torch.nn.LSTM(F, S, device=dev, dtype=dtype)
lstm.flatten_parameters()
ours = lltm_jit.LLTMSequence(F, S, device=dev, dtype=dtype)


def timed(fn):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 5 * 1e3)
    return sorted(samples)[7]


def forward(m):
    def f():
        with torch.no_grad():
            m(x)
    return f


def train(m):
    leaves = (x, *m.parameters())
    return lambda: torch.autograd.grad(m(x)[0].sum(), leaves)


row = [f"{sys.argv[1]:8s}"]
for name, m in (("lstm", lstm), ("ours", ours)):
    row.append(f"{name} fwd {timed(forward(m)):7.1f} fwd+bwd {timed(train(m)):7.1f} us")
print("  ".join(row), flush=True)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(3):
        train(lstm)()
    torch.cuda.synchronize()
for e in sorted(prof.key_averages(), key=lambda e: -e.self_device_time_total)[:6]:
    print(f"   {e.self_device_time_total / 3:9.1f} us x{e.count // 3:<3d} {e.key[:110]}")
