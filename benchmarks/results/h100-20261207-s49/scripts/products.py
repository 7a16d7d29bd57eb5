"""Session 49: the step path's per-step products timed alone, as replays of a CUDA graph of 64
(device time a product): cuBLAS as torch calls it, with a float output, and split over k into
`s` batched products of float partial sums (split-K, whose sum a step kernel could read), at
the sizes of issue 21's rows that run the step path.

    PYTHONPATH=. python3 benchmarks/results/h100-20261207-s49/scripts/products.py [lt]
"""
import statistics
import sys

import torch

REPS = 64


def graph_time(fn, rounds=15):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(REPS):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / REPS)
    return statistics.median(times)


def timed(fn):
    try:
        return graph_time(fn)
    except Exception as error:  # an out_dtype this torch lacks: the row goes on without it
        print("failed:", str(error).splitlines()[0])
        torch.cuda.synchronize()
        return float("inf")


def product(a, b, out_float):
    return torch.mm(a, b, out_dtype=torch.float32) if out_float else torch.mm(a, b)


def split_k(a, b, s, out_float):
    m, k = a.shape
    n = b.shape[1]
    pa = a.view(m, s, k // s).transpose(0, 1)
    pb = b.view(s, k // s, n)
    return torch.bmm(pa, pb, out_dtype=torch.float32) if out_float else torch.bmm(pa, pb)


# (name, m, k, n, dtype, b transposed): the forward's h W_h^T and the backward's d_gates W_h
CASES = [
    ("bwd 256x512x1024 bf16", 256, 3072, 1024, torch.bfloat16, False),
    ("fwd 256x512x1024 bf16", 256, 1024, 3072, torch.bfloat16, True),
    ("bwd 128x1024x1024 bf16", 128, 3072, 1024, torch.bfloat16, False),
    ("bwd 256x512x1024 fp32", 256, 3072, 1024, torch.float32, False),
    ("fwd 256x512x1024 fp32", 256, 1024, 3072, torch.float32, True),
    ("bwd 512x256x512 fp32", 512, 1536, 512, torch.float32, False),
    ("fwd 512x256x512 fp32", 512, 512, 1536, torch.float32, True),
]

torch.backends.cuda.matmul.allow_tf32 = False
gen = torch.Generator(device="cuda").manual_seed(0)
print(torch.cuda.get_device_name(), torch.__version__)
print("us a product (median of 15 replays of 64); split s: s batched products of k/s, float out")
if not sys.argv[1:]:
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for name, m, k, n, dtype, transposed in CASES:
            if tf32 and dtype != torch.float32:
                continue
            a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
            w = torch.randn(n, k, device="cuda", generator=gen).to(dtype) if transposed else \
                torch.randn(k, n, device="cuda", generator=gen).to(dtype)
            b = w.t() if transposed else w
            half = dtype != torch.float32
            flop = 2 * m * k * n
            row = {}
            row["mm"] = timed(lambda: product(a, b, False))
            if half:
                row["mm->f32"] = timed(lambda: product(a, b, True))
            for s in (2, 3, 4, 6, 8):
                if k % s == 0:
                    row[f"split{s}"] = timed(lambda: split_k(a, b, s, half))
            best = min(row, key=row.get)
            line = "  ".join(f"{key} {v:.2f}" for key, v in row.items())
            print(f"{name}{' tf32' if tf32 else ''}: {line}  | best {best} {flop / row[best] / 1e6:.0f} TFLOP/s "
                  f"(mm {flop / row['mm'] / 1e6:.0f})")

if sys.argv[1:] == ["lt"]:  # torch's products through cuBLASLt (its heuristic's first algorithm)
    torch.backends.cuda.preferred_blas_library("cublaslt")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for name, m, k, n, dtype, transposed in CASES:
            if tf32 and dtype != torch.float32:
                continue
            a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
            w = torch.randn(n, k, device="cuda", generator=gen).to(dtype) if transposed else \
                torch.randn(k, n, device="cuda", generator=gen).to(dtype)
            b = w.t() if transposed else w
            t = graph_time(lambda: torch.mm(a, b))
            print(f"{name}{' tf32' if tf32 else ''} cublaslt mm: {t:.2f} ({2 * m * k * n / t / 1e6:.0f} TFLOP/s)")
