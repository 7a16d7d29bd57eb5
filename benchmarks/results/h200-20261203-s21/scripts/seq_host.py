"""Session 21: where bench.py's 16x32x128 fp32 sequence row (T = 64) loses time against the A/B
harness's (587 against 355 us in session 20): each variant timed as bench.py times it (CUDA
events around 10 back-to-back calls from an idle device) and by the host's wall time alone.

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s21/scripts/seq_host.py
"""
import math

import torch

import lltm_jit
from benchmarks.timing import median_seconds
from lltm_jit import lltm_sequence

T, B, F, S = 64, 16, 32, 128
device = torch.device("cuda")
torch.manual_seed(0)
model = lltm_jit.LLTMSequence(F, S).to(device)
w, b = model.weights_l0, model.bias_l0
x = torch.randn(T, B, F, device=device)
xg = x.clone().requires_grad_()
lstm = torch.nn.LSTM(F, S).to(device)
ops = torch.ops.lltm_jit
out, h_n, c_n, gates, cells = ops.sequence_forward(x, w.detach(), b.detach(), None, None, None, True)
grad = torch.randn_like(out)
rows = {
    "functional, grad (w, b)": lambda: torch.autograd.grad(lltm_sequence(x, w, b)[0].sum(), [w, b]),
    "functional, grad (x, w, b)": lambda: torch.autograd.grad(lltm_sequence(xg, w, b)[0].sum(), [xg, w, b]),
    "module, grad (x, params) [bench]": lambda: torch.autograd.grad(model(xg)[0].sum(), [xg, w, b]),
    "module, grad (params)": lambda: torch.autograd.grad(model(x)[0].sum(), [w, b]),
    "module, .backward()": lambda: model(xg)[0].sum().backward(),
    "nn.LSTM, grad (x, params)": lambda: torch.autograd.grad(lstm(xg)[0].sum(), [xg, *lstm.parameters()]),
    "op sequence_forward (for backward)": lambda: ops.sequence_forward(x, w, b, None, None, None, True),
    "op sequence_backward (x, w, b)": lambda: ops.sequence_backward(grad, None, None, x, w, None, None, None, out,
                                                                     gates, cells, [True, True, True]),
    "op sequence_backward (w, b)": lambda: ops.sequence_backward(grad, None, None, x, w, None, None, None, out,
                                                                  gates, cells, [False, True, True]),
    "op sequence_backward (nothing)": lambda: ops.sequence_backward(grad, None, None, x, w, None, None, None, out,
                                                                     gates, cells, [False, False, False]),
    "torch.mm (1024x384 @ 384x32)": lambda: torch.mm(gates.view(-1, 3 * S), w.detach()[:, S:]),
}
print(f"us a call, {B}x{F}x{S} T={T} float32, {torch.cuda.get_device_name()}, torch {torch.__version__}")
print(f"{'events':>8} {'host':>8}  variant")
for name, fn in rows.items():
    ctx = torch.no_grad() if name.startswith("op ") or name.startswith("torch.mm") else torch.enable_grad()
    with ctx:
        [events] = median_seconds([fn], device, warmup=10, repeats=15, budget=math.inf, calls=10)
        [host] = median_seconds([fn], device, warmup=10, repeats=15, budget=math.inf, calls=10, host=True)
    print(f"{events * 1e6:8.1f} {host * 1e6:8.1f}  {name}", flush=True)

# What in a call waits for the device: torch's synchronizing calls (sync debug mode), and every
# CUDA runtime call of ten calls with its host time (the profiler's), for bench.py's variant.
import warnings  # noqa: E402

from torch.profiler import ProfilerActivity, profile  # noqa: E402

bench_call = rows["module, grad (x, params) [bench]"]
torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode("warn")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    bench_call()
torch.cuda.set_sync_debug_mode("default")
print(f"synchronizing calls in one bench call: {len(caught)}")
for w in caught[:5]:
    print("  ", str(w.message)[:300])
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(10):
        bench_call()
    torch.cuda.synchronize()
runtime = {}
for e in prof.events():
    if e.name.startswith("cuda") or e.name.startswith("cu"):
        n, us = runtime.get(e.name, (0, 0.0))
        runtime[e.name] = (n + 1, us + e.cpu_time_total)
print("CUDA runtime calls of 10 bench calls: count, host us in all")
for name, (n, us) in sorted(runtime.items(), key=lambda kv: -kv[1][1])[:15]:
    print(f"  {n:5d} {us:9.1f}  {name}")
