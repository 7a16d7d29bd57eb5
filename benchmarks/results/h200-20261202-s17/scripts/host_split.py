"""16x32x128 fp32 T=64: host time of the sequence ops called directly, against autograd's."""
import statistics, time, collections, torch, lltm_jit
from lltm_jit import lltm_sequence
from torch.profiler import profile, ProfilerActivity
torch.manual_seed(0)
T, B, F, S = 64, 16, 32, 128
dev = "cuda"
x = torch.randn(T, B, F, device=dev)
w = (torch.randn(3 * S, S + F, device=dev) / (S + F) ** 0.5).requires_grad_()
b = torch.randn(3 * S, device=dev).requires_grad_()
ops = torch.ops.lltm_jit
with torch.no_grad():
    output, h_n, c_n, gates, cells = ops.sequence_forward(x, w, b, None, None, None, True)
go = torch.randn_like(output)
g2 = gates.clone()
y = torch.randn(T, B, S, device=dev, requires_grad=True)
V = {
  "fwd op direct (no_grad)": lambda: torch.no_grad()(lambda: ops.sequence_forward(x, w, b, None, None, None, True))(),
  "gates.clone()": lambda: gates.clone(),
  "bwd op direct + clone": lambda: ops.sequence_backward(go, None, None, x, w, None, None, None, output, gates.clone(), cells, [False, True, True]),
  "bwd op direct, same gates": lambda: ops.sequence_backward(go, None, None, x, w, None, None, None, output, g2, cells, [False, True, True]),
  "autograd.grad trivial": lambda: torch.autograd.grad((y * 2).sum(), [y]),
  "op grads w,b": lambda: torch.autograd.grad(lltm_sequence(x, w, b)[0].sum(), [w, b]),
}
for k, f in V.items():
    for _ in range(10): f()
torch.cuda.synchronize()
host = {k: [] for k in V}
wall = {k: [] for k in V}
for _ in range(20):
    for k, f in V.items():
        torch.cuda.synchronize()
        h0 = time.perf_counter()
        for _ in range(10): f()
        h1 = time.perf_counter()
        torch.cuda.synchronize()
        h2 = time.perf_counter()
        host[k].append((h1 - h0) / 10 * 1e6); wall[k].append((h2 - h0) / 10 * 1e6)
for k in V:
    print(f"{k:28} host {statistics.median(host[k]):7.1f} us/call  wall {statistics.median(wall[k]):7.1f}")
for name in ("bwd op direct, same gates", "op grads w,b"):
    f = V[name]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10): f()
        torch.cuda.synchronize()
    tot = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CPU:
            tot[e.name][0] += 1; tot[e.name][1] += e.self_cpu_time_total
    print(f"== {name}: CPU self time per call (profiler on)")
    for n, (c, t) in sorted(tot.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"  {t / 10:8.1f} us {c / 10:5.1f}x  {n[:90]}")
