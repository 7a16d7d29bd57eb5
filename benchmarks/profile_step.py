#!/usr/bin/env python3
"""Where the time of one training step goes: every kernel of a forward + backward step of a
backend (lltm_jit by default), with its device time per step, from torch.profiler; with --host,
the host's time per step in each operator instead (what bounds a small step). With --kind
sequence, a whole sequence's step (bench.py's sizes, e.g. 64x256x512:T128:L2:bi).

  PYTHONPATH=. python3 benchmarks/profile_step.py [--kind step] [--size 4096x1024x1024] [--dtype bfloat16] [--backend lltm_jit] [--host]
"""

import argparse
import contextlib
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.cases import DTYPES
from benchmarks.sequence import SEQUENCE, SequenceSize, precision
from benchmarks.step import STEP, Size

KINDS = {"step": STEP, "sequence": SEQUENCE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", default="step", choices=KINDS)
    parser.add_argument("--size", default="4096x1024x1024", help="the kind's size, as bench.py takes it")
    parser.add_argument("--dtype", default="bfloat16", choices=DTYPES)
    parser.add_argument("--backend", default="lltm_jit", help="a backend of the kind, as bench.py names it")
    parser.add_argument("--steps", default=20, type=int)
    parser.add_argument("--forward", action="store_true", help="the forward alone, under no_grad")
    parser.add_argument("--host", action="store_true", help="host time per operator, not kernels")
    args = parser.parse_args()
    kind = KINDS[args.kind]
    if args.backend not in kind.backends:
        parser.error(f"--backend {args.backend!r}: {args.kind} has {', '.join(kind.backends)}")
    device = torch.device("cuda")
    size = Size.parse(args.size) if args.kind == "step" else SequenceSize.parse(args.size, steps=64)
    with precision(size) if args.kind == "sequence" else contextlib.nullcontext():
        case = kind.make_case(size, DTYPES[args.dtype], device)
        runner = kind.backends[args.backend](case)
        train = torch.no_grad()(runner.forward) if args.forward else runner.train
        for _ in range(5):
            train()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.steps):
            train()
        end.record()
        end.synchronize()
        wall = start.elapsed_time(end) * 1e3 / args.steps  # us per step, unprofiled
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
    print(f"{args.backend} {args.size} {args.dtype}: kernels' device time per "
          f"{'forward' if args.forward else 'forward + backward'} step")
    for name, t in sorted(per_kernel.items(), key=lambda item: -item[1]):
        print(f"{t:9.1f} us  {name[:110]}")
    print(f"{total:9.1f} us  total")
    print(f"{wall:9.1f} us  wall (CUDA events, unprofiled)")


if __name__ == "__main__":
    main()
