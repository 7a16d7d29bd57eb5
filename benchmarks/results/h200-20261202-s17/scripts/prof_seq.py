import sys
from collections import defaultdict
import torch
from torch.profiler import profile, ProfilerActivity
from lltm_jit import lltm_sequence

for spec in sys.argv[1:]:
    size, dt = spec.split(":")
    B, F, S = map(int, size.split("x"))
    torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
    dtype = torch.float32 if dt == "tf32" else getattr(torch, dt)
    x = torch.randn(64, B, F, device="cuda").to(dtype)
    w = (torch.randn(3 * S, S + F, device="cuda") / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = torch.zeros(3 * S, device="cuda", dtype=dtype, requires_grad=True)
    f = lambda: torch.autograd.grad(lltm_sequence(x, w, b)[0].float().sum(), [w, b])
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            f()
        torch.cuda.synchronize()
    per = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = e.time_range.elapsed_us()
            per[e.name][0] += 1
            per[e.name][1] += t
    total = sum(v[1] for v in per.values()) / 3
    print(f"== {spec} fwd+bwd device total {total:.0f} us a call")
    for name, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"  {t / 3:8.0f} us {n // 3:4d}x  {name[:110]}")
