"""Host-side profile of one 64x256x512 sequence fwd+bwd (T=64): where the host's time goes."""
import sys, time
import torch
import lltm_jit
from torch.profiler import ProfilerActivity, profile

torch.backends.cuda.matmul.allow_tf32 = False
T, B, F, S = 64, 64, 256, 512
for dtype in (torch.float32, torch.bfloat16):
    x = torch.randn(T, B, F, device="cuda", dtype=dtype).requires_grad_()
    w = (torch.randn(3 * S, S + F, device="cuda") / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = torch.randn(3 * S, device="cuda", dtype=dtype).requires_grad_()
    def run():
        out, _ = lltm_jit.lltm_sequence(x, w, b)
        out.sum().backward()
    for _ in range(10):
        run()
    torch.cuda.synchronize()
    for mode in ("fwd", "fwd+bwd"):
        walls = []
        for _ in range(20):
            torch.cuda.synchronize(); t0 = time.perf_counter()
            if mode == "fwd":
                with torch.no_grad():
                    lltm_jit.lltm_sequence(x, w, b)
            else:
                run()
            t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
            walls.append((t1 - t0, t2 - t0))
        walls.sort()
        print(f"{dtype} {mode}: host return {walls[10][0]*1e6:.0f} us, wall {walls[10][1]*1e6:.0f} us (median of 20)")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            run()
        torch.cuda.synchronize()
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:10]
    for e in rows:
        print(f"   self cpu {e.self_cpu_time_total / 3:8.0f} us  {e.count // 3:5d}x  {e.key[:80]}")
