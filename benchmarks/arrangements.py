#!/usr/bin/env python3
"""Which arrangement of the matrix products is cheaper: one product over a copy of [old_h, input]
or two products, one per block of weights' columns. Device time (CUDA graph replays) on CUDA,
wall time on the CPU; the kernels' choice of arrangement (src/) rests on these numbers
(benchmarks/NOTES.md).

  PYTHONPATH=. python3 benchmarks/arrangements.py [--device cuda] [--sizes 4096x1024x1024:bfloat16,...]
"""

import argparse

import torch

from benchmarks.cases import DTYPES
from benchmarks.timing import median_seconds


def times_us(fns, device: torch.device) -> list[float]:
    """Median device (CUDA graph replays) or wall time of each, interleaved (timing.measure)."""
    medians = median_seconds(fns, device, warmup=10, repeats=200, budget=1.0, graphs=device.type == "cuda")
    return [t * 1e6 for t in medians]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", default="16x32x128:float32,256x512x1024:float32,4096x1024x1024:bfloat16")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"{'size':>16} {'dtype':>9} | {'fwd cat+addmm':>13} {'fwd 2 addmm':>11} | {'dW cat+mm':>9} {'dW 2 mm_out':>11}  (us)")
    for spec in args.sizes.split(","):
        size, dtype_name = spec.split(":")
        b, f, s = (int(v) for v in size.split("x"))
        kw = {"device": device, "dtype": DTYPES[dtype_name]}
        h, x = torch.randn(b, s, **kw), torch.randn(b, f, **kw)
        weights, bias = torch.randn(3 * s, s + f, **kw), torch.randn(3 * s, **kw)
        d_gates = torch.randn(b, 3 * s, **kw)
        gates, d_weights = torch.empty(b, 3 * s, **kw), torch.empty(3 * s, s + f, **kw)
        w_h, w_x = weights[:, :s].t(), weights[:, s:].t()
        dw_h, dw_x = d_weights[:, :s], d_weights[:, s:]

        def forward_split():
            torch.addmm(bias, h, w_h, out=gates)
            gates.addmm_(x, w_x)

        def d_weights_split():
            torch.mm(d_gates.t(), h, out=dw_h)
            torch.mm(d_gates.t(), x, out=dw_x)

        times = times_us([
            lambda: torch.addmm(bias, torch.cat([h, x], 1), weights.t()),
            forward_split,
            lambda: torch.mm(d_gates.t(), torch.cat([h, x], 1)),
            d_weights_split,
        ], device)
        print(f"{size:>16} {dtype_name:>9} | {times[0]:13.1f} {times[1]:11.1f} | {times[2]:9.1f} {times[3]:11.1f}")


if __name__ == "__main__":
    main()
