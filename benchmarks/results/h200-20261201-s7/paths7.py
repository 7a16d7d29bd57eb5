"""Sequence fwd+bwd (T=64) through the persistent kernels against the per-step path, at sizes whose
W_h needs several blocks: median device-inclusive wall time of 20 calls each, interleaved."""
import os, statistics, time
import torch
import lltm_jit

torch.backends.cuda.matmul.allow_tf32 = False
print(f"{'size':>14} {'dtype':>9} {'persistent us':>14} {'step us':>9} {'ratio':>6}")
for size, dtype in (("8x64x512", torch.float32), ("32x128x384", torch.float32), ("128x256x256", torch.float32),
                    ("64x256x512", torch.bfloat16), ("100x64x200", torch.float16), ("256x256x512", torch.float32)):
    B, F, S = (int(v) for v in size.split("x"))
    x = torch.randn(64, B, F, device="cuda", dtype=dtype, requires_grad=True)
    w = (torch.randn(3 * S, S + F, device="cuda") / (S + F) ** 0.5).to(dtype).requires_grad_()
    b = torch.randn(3 * S, device="cuda", dtype=dtype, requires_grad=True)
    times = {"persistent": [], "step": []}
    for i in range(25):
        for path in times:
            os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = path
            torch.cuda.synchronize(); t0 = time.perf_counter()
            torch.autograd.grad(lltm_jit.lltm_sequence(x, w, b)[0].sum(), (x, w, b))
            torch.cuda.synchronize()
            if i >= 5:
                times[path].append(time.perf_counter() - t0)
    p, s = (statistics.median(times[k]) * 1e6 for k in times)
    print(f"{size:>14} {str(dtype)[6:]:>9} {p:14.0f} {s:9.0f} {p / s:6.2f}")
