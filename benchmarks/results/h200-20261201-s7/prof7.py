"""Wall and device time of one sequence fwd+bwd (T=64) at a size, its kernels, and its host ops."""
import statistics, sys, time
import torch
import lltm_jit
from torch.profiler import ProfilerActivity, profile

torch.backends.cuda.matmul.allow_tf32 = False
B, F, S = (int(v) for v in sys.argv[1].split("x"))
T = 64
dtype = getattr(torch, sys.argv[2])
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, F, device="cuda", generator=g, dtype=dtype).requires_grad_()
w = (torch.randn(3 * S, S + F, device="cuda", generator=g) / (S + F) ** 0.5).to(dtype).requires_grad_()
b = torch.randn(3 * S, device="cuda", generator=g, dtype=dtype).requires_grad_()

def run():
    out, (h, c) = lltm_jit.lltm_sequence(x, w, b)
    out.sum().backward()

def fwd():
    with torch.no_grad():
        lltm_jit.lltm_sequence(x, w, b)

for f, name in ((run, "fwd+bwd"), (fwd, "fwd-nograd")):
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    walls = []
    for _ in range(30):
        t0 = time.perf_counter(); f(); torch.cuda.synchronize(); walls.append(time.perf_counter() - t0)
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            f()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in events) / 5
    print(f"{sys.argv[1]} {dtype} {name}: wall median {statistics.median(walls) * 1e6:.0f} us, "
          f"p10 {sorted(walls)[3] * 1e6:.0f}; device {total:.0f} us per call")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:8]:
        print(f"   {e.self_device_time_total / 5:8.0f} us {e.count // 5:4d}x  {e.key[:100]}")
    cpu = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    print("   host, self:")
    for e in sorted(cpu, key=lambda e: -e.self_cpu_time_total)[:8]:
        print(f"   {e.self_cpu_time_total / 5:8.0f} us {e.count // 5:4d}x  {e.key[:100]}")
