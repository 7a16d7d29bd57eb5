#!/usr/bin/env python3
"""Where the time of one training step goes: every kernel of a forward + backward step of a
backend (lltm_jit by default), with its device time per step, from torch.profiler; with --host,
the host's time per step in each operator instead (what bounds a small step).

  PYTHONPATH=. python3 benchmarks/profile_step.py [--size 4096x1024x1024] [--dtype bfloat16] [--backend lltm_jit] [--host]
"""

import argparse
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.cases import DTYPES
from benchmarks.step import STEP, Case, Size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="4096x1024x1024", type=Size.parse)
    parser.add_argument("--dtype", default="bfloat16", choices=DTYPES)
    parser.add_argument("--backend", default="lltm_jit", choices=STEP.backends)
    parser.add_argument("--steps", default=20, type=int)
    parser.add_argument("--host", action="store_true", help="host time per operator, not kernels")
    args = parser.parse_args()
    device = torch.device("cuda")
    case = Case.make(args.size, DTYPES[args.dtype], device)
    train = STEP.backends[args.backend](case).train
    for _ in range(5):
        train()
    torch.cuda.synchronize()
    activity = ProfilerActivity.CPU if args.host else ProfilerActivity.CUDA
    with profile(activities=[activity]) as prof:
        for _ in range(args.steps):
            train()
        torch.cuda.synchronize()
    if args.host:
        print(f"{args.backend} {args.size} {args.dtype}: host time per forward + backward step "
              f"(self time of each operator, profiler overhead included)")
        rows = [(e.self_cpu_time_total / args.steps, e.count // args.steps, e.key) for e in prof.key_averages()]
        for t, count, name in sorted(rows, reverse=True)[:25]:
            print(f"{t:9.1f} us  {count:3d}x  {name[:100]}")
        print(f"{sum(r[0] for r in rows):9.1f} us  total")
        return
    per_kernel = defaultdict(float)  # name -> us per step
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            per_kernel[event.name] += event.device_time / args.steps
    total = sum(per_kernel.values())
    print(f"{args.backend} {args.size} {args.dtype}: kernels' device time per forward + backward step")
    for name, t in sorted(per_kernel.items(), key=lambda item: -item[1]):
        print(f"{t:9.1f} us  {name[:110]}")
    print(f"{total:9.1f} us  total")


if __name__ == "__main__":
    main()
