"""Session 38: where the host's time goes in bench.py's 16x32x128 fp32 T=64 fwd+bwd (the
module, loss = output.sum(), autograd.grad over the input and the parameters), which is
host-bound: per call, the wall time of back-to-back calls, the host's issue time (calls
returned, before the device is done), and the profiler's CPU self times; for our module, the
op alone, without the input's gradient, and cuDNN's nn.LSTM.
  PYTHONPATH=. python3 host_profile.py"""
import time

import torch
from torch.profiler import ProfilerActivity, profile

import lltm_jit

T, B, F, S = 64, 16, 32, 128
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
ours = lltm_jit.LLTMSequence(F, S, device=dev)
lstm = torch.nn.LSTM(F, S, device=dev)
x = torch.randn(T, B, F, device=dev, requires_grad=True)
x_fixed = x.detach()


def train(module, inp):
    leaves = ((inp,) if inp.requires_grad else ()) + tuple(module.parameters())
    return lambda: torch.autograd.grad(module(inp)[0].sum(), leaves)


def op_train():
    w, b = ours.weights_l0, ours.bias_l0
    return lambda: torch.autograd.grad(lltm_jit.lltm_sequence(x, w, b)[0].sum(), (x, w, b))


def forward(module):
    def f():
        with torch.no_grad():
            return module(x)
    return f


CASES = {
    "ours fwd+bwd": train(ours, x),
    "ours fwd+bwd, no dx": train(ours, x_fixed),
    "ours op fwd+bwd": op_train(),
    "ours fwd": forward(ours),
    "lstm fwd+bwd": train(lstm, x),
    "lstm fwd": forward(lstm),
}


def timings(fn, calls=50, rounds=9):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    walls, issues, syncs = [], [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        issued = time.perf_counter()
        torch.cuda.synchronize()
        done = time.perf_counter()
        walls.append((done - start) / calls * 1e6)
        issues.append((issued - start) / calls * 1e6)
        begin = time.perf_counter()  # one call at a time: the host's and the device's time in turn
        for _ in range(10):
            fn()
            torch.cuda.synchronize()
        syncs.append((time.perf_counter() - begin) / 10 * 1e6)
    med = lambda v: sorted(v)[len(v) // 2]
    return med(walls), med(issues), med(syncs)


print(f"{'case':24s} {'wall us':>9s} {'issue us':>9s} {'synced us':>10s}")
for name, fn in CASES.items():
    w, i, s = timings(fn)
    print(f"{name:24s} {w:9.1f} {i:9.1f} {s:10.1f}", flush=True)

for name in ("ours fwd+bwd", "lstm fwd+bwd"):
    fn = CASES[name]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    print(f"\n== {name}: 20 calls, by self CPU time")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=60))
    print(f"\n== {name}: by device time")
    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=15, max_name_column_width=60))
    prof.export_chrome_trace(f"/tmp/trace-{name.split()[0]}.json")
