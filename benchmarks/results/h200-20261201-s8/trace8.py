"""Where the time of back-to-back small sequence fwd+bwd calls goes: host wall per call (no sync
between calls), CUDA-event time per call (as bench.py), and a profiler trace of 5 back-to-back calls."""
import json, os, statistics, sys, time
import torch
import lltm_jit
from torch.profiler import ProfilerActivity, profile

torch.backends.cuda.matmul.allow_tf32 = False
T, B, F, S = 64, 16, 32, 128
out = os.environ.get("OUT", "/tmp")
module = lltm_jit.LLTMSequence(F, S, device="cuda")
x = torch.randn(T, B, F, device="cuda", requires_grad=True)
lstm = torch.nn.LSTM(F, S, device="cuda")
runners = {
    "ours": (lambda: torch.autograd.grad(module(x)[0].sum(), (x, module.weights_l0, module.bias_l0))),
    "lstm": (lambda: torch.autograd.grad(lstm(x)[0].sum(), (x, *lstm.parameters()))),
}
for name, fn in runners.items():
    for _ in range(20):
        fn()
torch.cuda.synchronize()
for rnd in range(3):
    for name, fn in runners.items():
        host, ev = [], []
        for _ in range(30):
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); a = time.perf_counter()
            for _ in range(10):
                fn()
            b = time.perf_counter(); e.record(); torch.cuda.synchronize()
            host.append((b - a) / 10 * 1e6); ev.append(s.elapsed_time(e) * 100)
        print(f"round {rnd} {name}: host {statistics.median(host):.0f} us/call, events {statistics.median(ev):.0f} us/call")
for name, fn in runners.items():
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(f"{out}/trace-{name}.json")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=45))
