#!/usr/bin/env python3
"""Benchmark lltm_jit against PyTorch: correctness first, then the time of one step.

For every size (batch x input_features x state_size) and dtype:
  1. the backends that compute the LLTM function (lltm_jit, the eager reference, torch.compile of
     the reference) are checked against the reference in float64 on fresh random inputs: both
     outputs and the gradients of all five inputs, each within a relative error of 1e-10 (float64),
     1e-4 (float32) or 3e-2 (bfloat16, float16). A backend that fails is reported as FAILED and
     not timed, and the exit status is 1.
  2. one step is timed, forward only (under no_grad) and forward + backward (gradients of every
     input and parameter), for those backends and for PyTorch's LSTM cells, nn.LSTMCell and nn.LSTM
     (a different cell with four gates: speed peers only), and on CUDA for `gemm`, the matrix
     products of lltm_jit alone: the floor that its fused elementwise work is judged against.
     All of a case's steps take turns, one sample (the mean of --calls back-to-back calls) each
     per round, so that the machine's slow spells fall on all of them alike. float32 runs at
     full precision on every side: TF32 is off in cuBLAS and cuDNN.
  3. each time is set against a physical floor, measured on this device in the same run:
     max(FLOPs / matmul peak, bytes moved / copy bandwidth).

The table goes to stdout at the end; every number and the environment are saved as JSON, with a
plot of the speedups over eager, in --out. The work is done by the benchmarks/ package: timing.py
(samples, CUDA graphs, the machine's peaks), cases.py and step.py (the backends and their cases),
report.py (table, JSON, plot).

examples:
  python bench.py                          # this machine's defaults (CUDA if there is a GPU)
  python bench.py --quick                  # one small size, a few seconds
  python bench.py --sizes 64x256x256 --dtypes float32,bfloat16 --backends eager,lltm_jit
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Callable

import torch

from benchmarks.cases import DTYPES, Plan, run
from benchmarks.report import environment, save, summarize, table
from benchmarks.step import STEP, Size
from benchmarks.timing import MIN_ROUNDS, Settings

DEFAULT_SIZES = {
    "cpu": "16x32x128,64x256x256,256x512x1024",
    "cuda": "16x32x128,256x512x1024,1024x1024x1024,4096x1024x1024",
}
QUICK_SIZE = "16x32x128"


def comma_list(parse: Callable[[str], object]) -> Callable[[str], list]:
    return lambda text: [parse(item) for item in text.split(",") if item.strip()]


def parse_dtype(name: str) -> torch.dtype:
    if name.strip() not in DTYPES:
        raise argparse.ArgumentTypeError(f"dtype {name!r}: expected one of {', '.join(DTYPES)}")
    return DTYPES[name.strip()]


def parse_backend(name: str) -> str:
    if name.strip() not in STEP.backends:
        raise argparse.ArgumentTypeError(f"backend {name!r}: expected one of {', '.join(STEP.backends)}")
    return name.strip()


def parse_args() -> argparse.Namespace:
    backends = "\n".join(f"  {name:<9} {setup.__doc__}" for name, setup in STEP.backends.items())
    parser = argparse.ArgumentParser(
        description=__doc__,
        epilog=f"backends:\n{backends}\n\n"
        "exit status: 1 if a correctness check failed or a backend raised, else 0.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--device", type=torch.device, help="cpu, cuda or cuda:N (default: cuda if available, else cpu)"
    )
    parser.add_argument(
        "--sizes", type=comma_list(Size.parse), metavar="BxFxS,...",
        help="batch x input_features x state_size "
        f"(default: cpu {DEFAULT_SIZES['cpu']}; cuda {DEFAULT_SIZES['cuda']})",
    )
    parser.add_argument(
        "--dtypes", type=comma_list(parse_dtype), metavar="DTYPE,...",
        help=f"of {', '.join(DTYPES)} (default: float32, and bfloat16 on CUDA)",
    )
    parser.add_argument(
        "--backends", type=comma_list(parse_backend), metavar="NAME,...",
        help="which to run, see below (default: all; gemm on CUDA only)",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help=f"a smoke run: {QUICK_SIZE} float32, few repeats, no compile unless in --backends",
    )
    parser.add_argument(
        "--repeats", type=int, help="timed samples per measurement, at most (default 100; quick 20)"
    )
    parser.add_argument(
        "--calls", type=int, default=10,
        help="back-to-back calls per timed sample, whose mean is the sample (default 10)",
    )
    parser.add_argument(
        "--warmup", type=int, help="untimed calls before each measurement (default 10; quick 3)"
    )
    parser.add_argument(
        "--budget", type=float,
        help="seconds per timed step (backend and mode) after which a case's interleaved "
        f"measurement stops taking samples, once it has {MIN_ROUNDS} rounds (default 2; quick 0.2)",
    )
    parser.add_argument(
        "--seed", type=int, default=random.randrange(2**31), help="for all inputs (default: random)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "bench-results",
        help="where to save <device>-<date>-<time>.json and .png "
        "(default: bench-results next to this file, ignored by git)",
    )
    parser.add_argument(
        "--graphs", action="store_true",
        help="CUDA: time replays of each step captured in a CUDA graph: the device's time, without "
        "the host's launch and autograd overhead (which dominates small steps)",
    )
    parser.add_argument("--no-save", action="store_true", help="write no files")
    parser.add_argument("--no-plot", action="store_true", help="save no plot")
    args = parser.parse_args()

    if args.device is None:
        args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.device.type == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: torch sees no CUDA device")
        # CUDA events record on the current device: make it the benchmarked one.
        index = torch.cuda.current_device() if args.device.index is None else args.device.index
        args.device = torch.device("cuda", index)
        torch.cuda.set_device(args.device)
    elif args.device.type != "cpu":
        parser.error(f"--device {args.device}: expected cpu or cuda")
    if args.graphs and args.device.type != "cuda":
        parser.error("--graphs needs a CUDA device")
    cuda = args.device.type == "cuda"
    quick = args.quick
    default_sizes = QUICK_SIZE if quick else DEFAULT_SIZES[args.device.type]
    args.sizes = args.sizes or comma_list(Size.parse)(default_sizes)
    args.dtypes = args.dtypes or [torch.float32] + ([torch.bfloat16] if cuda and not quick else [])
    # compile takes tens of seconds on a small CPU, too long for a smoke run. gemm is the
    # yardstick of the CUDA kernels; on a CPU it runs when asked for.
    args.backends = args.backends or [
        name for name in STEP.backends if not (name == "compile" and quick or name == "gemm" and not cuda)
    ]
    args.repeats = args.repeats or (20 if quick else 100)
    args.warmup = args.warmup if args.warmup is not None else (3 if quick else 10)
    args.budget = args.budget if args.budget is not None else (0.2 if quick else 2.0)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2 (for a spread)")
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    settings = Settings(args.device, args.warmup, args.repeats, args.calls, args.budget, args.graphs)
    torch.manual_seed(args.seed)
    # Equal precision: float32 products in full precision on every side, ours (cuBLAS) and
    # nn.LSTM's (cuDNN, which allows TF32 by default).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    machine, results = run([Plan(STEP, args.sizes, args.dtypes, args.backends)], settings)
    records = summarize(results, machine)
    env = environment(settings, args.seed)
    if not args.no_save:
        save(records, env, machine, settings, args.out, with_plot=not args.no_plot)
    print(table(records, env, machine))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
