"""Session 23: a persistent sequence call's time against its length T, to split it into a fixed
part (launches, the input projection's setup, the prologue that loads W_h, the epilogue) and a
part per step. Forward under no_grad and forward + backward, CUDA events, the median of 9 samples
of 5 back-to-back calls, µs.

    PYTHONPATH=. python3 benchmarks/results/h200-20261203-s23/scripts/sweep.py 8x256x512:float16 ...
"""
import sys

import torch

from lltm_jit import lltm_sequence


def timed(fn):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(9):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / 5)
    return sorted(samples)[len(samples) // 2]


print(f"{'size':>22} {'T':>4} {'fwd us':>9} {'fwd+bwd us':>11}")
for spec in sys.argv[1:]:
    size, dtype = spec.split(":")
    B, F, S = map(int, size.split("x"))
    dtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for T in (1, 2, 4, 16, 64, 256):
        x = torch.randn(T, B, F, device="cuda", generator=gen).to(dtype)
        w = (torch.randn(3 * S, S + F, device="cuda", generator=gen) / (S + F) ** 0.5).to(dtype).requires_grad_()
        b = (torch.randn(3 * S, device="cuda", generator=gen) * 0.1).to(dtype).requires_grad_()

        def forward():
            with torch.no_grad():
                lltm_sequence(x, w, b)

        def both():
            torch.autograd.grad(lltm_sequence(x, w, b)[0].float().sum(), [w, b])

        f, fb = timed(forward), timed(both)
        rows.append((T, f, fb))
        print(f"{size + ':' + str(dtype)[6:]:>22} {T:>4} {f:9.1f} {fb:11.1f}", flush=True)
    (t1, f1, b1), (t2, f2, b2) = rows[-2], rows[-1]
    fs, bs = (f2 - f1) / (t2 - t1), (b2 - b1) / (t2 - t1)
    print(f"{'':>22} per step (T 64 -> 256): fwd {fs:.2f} us, fwd+bwd {bs:.2f} us; fixed: fwd {f2 - fs * t2:.1f}, "
          f"fwd+bwd {b2 - bs * t2:.1f}", flush=True)
