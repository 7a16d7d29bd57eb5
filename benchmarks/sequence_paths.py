"""The CUDA sequence op's two paths against each other: the persistent kernels (one launch each way,
W_h held on chip) and the per-step path (a cuBLAS product and a fused kernel per step, forced by
LLTM_JIT_SEQUENCE_KERNEL=step), forward + backward over T = 64 steps at sizes whose W_h needs a
group of blocks. Median wall time of 20 calls each, synchronized, the two paths interleaved; TF32 off.

    PYTHONPATH=. python3 benchmarks/sequence_paths.py [--sizes 8x64x512,64x256x512] [--dtype bfloat16]
"""

import argparse
import os
import statistics
import time

import torch

import lltm_jit
from benchmarks.cases import DTYPES, random_arguments

# (batch x features x state, dtype): the sizes session 7 compared (benchmarks/NOTES.md).
SIZES = [("8x64x512", "float32"), ("32x128x384", "float32"), ("128x256x256", "float32"),
         ("64x256x512", "bfloat16"), ("100x64x200", "float16"), ("256x256x512", "float32")]
PATHS = ("persistent", "step")


def fwd_bwd_seconds(size: str, dtype: torch.dtype, time_steps: int = 64, rounds: int = 25, warmup: int = 5):
    """Median seconds of one forward + backward on each path, by path."""
    batch, features, state = (int(v) for v in size.split("x"))
    args = random_arguments(batch, features, state, time=time_steps, generator=torch.Generator().manual_seed(0))
    x, w, b = (a.to("cuda", dtype).requires_grad_() for a in args[:3])
    times = {path: [] for path in PATHS}
    for i in range(rounds):
        for path in PATHS:
            os.environ["LLTM_JIT_SEQUENCE_KERNEL"] = path  # read at each call
            torch.cuda.synchronize()
            start = time.perf_counter()
            torch.autograd.grad(lltm_jit.lltm_sequence(x, w, b)[0].sum(), (x, w, b))
            torch.cuda.synchronize()
            if i >= warmup:
                times[path].append(time.perf_counter() - start)
    os.environ.pop("LLTM_JIT_SEQUENCE_KERNEL")
    return {path: statistics.median(t) for path, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", help="comma-separated BxFxS (default: the six of SIZES, each in its dtype)")
    parser.add_argument("--dtype", default="float32", choices=list(DTYPES), help="the dtype of --sizes")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sequence_paths: needs a CUDA GPU (the CPU has one path)")
    torch.backends.cuda.matmul.allow_tf32 = False
    sizes = [(s, args.dtype) for s in args.sizes.split(",")] if args.sizes else SIZES
    print(f"{'size':>14} {'dtype':>9} {'persistent us':>14} {'step us':>9} {'ratio':>6}")
    for size, dtype in sizes:
        t = fwd_bwd_seconds(size, DTYPES[dtype])
        print(f"{size:>14} {dtype:>9} {t['persistent'] * 1e6:14.0f} {t['step'] * 1e6:9.0f} "
              f"{t['persistent'] / t['step']:6.2f}")


if __name__ == "__main__":
    main()
