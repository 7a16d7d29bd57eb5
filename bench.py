#!/usr/bin/env python3
"""Benchmark lltm_jit against PyTorch: correctness first, then the time of one step and of a
whole sequence.

Two kinds of case, each with its own backends (listed below): step, one LLTM step of a batch,
and sequence, T steps (--steps) of a batch from a zero state, where the loss of fwd+bwd is the
sum of the outputs. For every kind, size (batch x input_features x state_size) and dtype:
  1. the backends that compute the LLTM function (lltm_jit, the eager reference, torch.compile of
     the reference, a loop over the step op) are checked against the reference in float64 on
     fresh random inputs: every output and the gradients of all inputs and the initial state
     (a sequence's also from a zero state, as its rows are timed, and its outputs under no_grad,
     as its fwd rows run), each within a relative error of 1e-10 (float64), 1e-4 (float32) or
     3e-2 (bfloat16, float16; 6e-2 for a sequence). A backend that fails is reported as FAILED and
     not timed, and the exit status is 1, as it is when lltm_jit runs its pure-PyTorch fallback
     (its build failed): its rows would check and time the reference.
  2. one call (a step, or a whole sequence) is timed, forward only (under no_grad) and forward +
     backward (gradients of every input and parameter), for those backends and for PyTorch's
     LSTM, nn.LSTMCell and nn.LSTM (a different cell with four gates: speed peers only), and on
     CUDA for gemm, the matrix products of the lltm_jit step alone: the floor that its fused
     elementwise work is judged against. All of a case's calls take turns, one sample (the mean
     of --calls back-to-back calls) each per round, so that the machine's slow spells fall on
     all of them alike. float32 runs at full precision on every side: TF32 is off in cuBLAS and
     cuDNN, but for a sequence's :tf32 cases (below).
  3. each time is set against a physical floor, measured on this device in the same run:
     max(FLOPs / matmul peak, bytes moved / copy bandwidth); a step's against the products alone
     (t/gemm), a sequence's against cuDNN's LSTM (t/lstm). On CUDA a sequence's rows also show
     the peak memory of one call.

The table goes to stdout at the end; every number and the environment are saved as JSON, with a
plot of the speedups over eager, in --out. The work is done by the benchmarks/ package: timing.py
(samples, CUDA graphs, the machine's peaks), cases.py (the run of a kind's cases), step.py and
sequence.py (the two kinds: their backends, checks and floors), report.py (table, JSON, plot).

A sequence's size may go on with suffixes: :T<steps> (in place of --steps), :L<layers>, :bi
(bidirectional), :packed (a PackedSequence of lengths from T down to T/4, fed to every backend)
and :tf32 (TF32 allowed on both sides while that case runs; checked at float16's tolerance, and
no floor, as the float32 peak is measured with TF32 off).

examples:
  python bench.py                          # this machine's defaults (CUDA if there is a GPU)
  python bench.py --quick                  # one small size of each kind, seconds
  python bench.py --kind sequence --steps 128
  python bench.py --sizes 64x256x256 --dtypes float32,bfloat16 --backends eager,lltm_jit
  python bench.py --kind sequence --sizes 64x256x512:T128:L2:bi,64x256x512:T128:packed
  python bench.py --plan cudnn             # issue 21's rows against cuDNN's nn.LSTM (CUDA)
  python bench.py --plan cudnn-other       # the same kinds at other sizes
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from benchmarks.cases import DTYPES, Kind, Plan, run
from benchmarks.report import environment, save, summarize, table, verdict
from benchmarks.sequence import SEQUENCE, SPEC, SequenceSize
from benchmarks.step import STEP, Size
from benchmarks.timing import MIN_ROUNDS, Settings

KINDS = {kind.name: kind for kind in (STEP, SEQUENCE)}
# kind -> device type -> "sizes:dtypes", one Plan each: every size in every dtype.
DEFAULT_PLANS = {
    "step": {
        "cpu": ["16x32x128,64x256x256,256x512x1024:float32"],
        "cuda": ["16x32x128,256x512x1024,1024x1024x1024,4096x1024x1024:float32,bfloat16"],
    },
    "sequence": {
        "cpu": ["16x32x128,64x256x512:float32", "16x32x128:bfloat16"],
        "cuda": ["16x32x128,64x256x512,256x512x1024:float32", "256x512x1024:bfloat16"],
    },
}
QUICK_PLANS = {"step": "16x32x128:float32", "sequence": "16x32x128:float32"}


def issue21_bar(r: dict) -> tuple[str, bool]:
    """Issue 21's bar for one of lltm_jit's rows against nn.LSTM (a record of summarize()): its
    words and whether the row meets it. float16 where PyTorch picks cuDNN's persistent algorithm
    on an H100-class GPU (one layer, one direction, unpacked, batch a multiple of 8 up to 128,
    features and state multiples of 128, state up to 1024: RNN.cpp's get_algo): 0.75 of cuDNN's
    time; float32 with TF32 off: 0.5, or 1.15 times the FMA floor where cuDNN too is near it;
    every other row 0.5."""
    ratio, floor = r["t_over_yardstick"], r["t_over_floor"]
    persistent = (r["dtype"] == "float16" and r["layers"] == 1 and not r["bidirectional"] and not r["packed"]
                  and r["batch"] % 8 == 0 and r["batch"] <= 128 and r["input_features"] % 128 == 0
                  and r["state_size"] % 128 == 0 and r["state_size"] <= 1024)
    bar = 0.75 if persistent else 0.5
    words = f"{ratio:.2f} of nn.LSTM, bar {bar}" if ratio is not None else "no nn.LSTM time"
    met = ratio is not None and ratio <= bar
    if r["dtype"] == "float32" and not r["tf32"] and floor is not None:
        words += f", or {floor:.2f}x its floor, bar 1.15"
        met = met or floor <= 1.15
    return words, met


def bars(records: list[dict], bar: Callable[[dict], tuple[str, bool]]) -> str:
    """A line for each of lltm_jit's rows: its bar's words and whether it meets it."""
    rows = [(r, *bar(r)) for r in records if r["backend"] == "lltm_jit" and r["status"] == "ok"]
    lines = [f"  {'met ' if met else 'OVER'}  {r['size']} {r['dtype']} {r['mode']}: {words}" for r, words, met in rows]
    return "\n".join([f"bars: {sum(met for *_, met in rows)} of {len(rows)} rows met", *lines])


RECORD_KEYS = ("kind", "backend", "status", "size", "dtype", "mode", "t_over_yardstick", "t_over_floor")


def ours_in_sequence(r: dict) -> bool:
    """Whether a saved record is one of lltm_jit's sequence rows, those that issue 21's bars judge."""
    return r["kind"] == "sequence" and r["backend"] == "lltm_jit"


def judged(runs: list[list[dict]], bar: Callable[[dict], tuple[str, bool]]) -> tuple[list[dict], list[str]]:
    """lltm_jit's sequence rows over several saved runs, for bars(): each row as one run measured
    it, that run being one whose record misses the bar if any does (the one furthest from it by
    its ratio), else the one nearest it; and a line for each row that some runs lack. cuDNN's
    times at its per-step sizes move by up to 2x between processes, ours by about 2%: one run's
    ratio can meet a bar that the next one misses, so a row is met only where every run that has
    it meets it."""
    by_row: dict[tuple, list[dict]] = {}
    for records in runs:
        for r in records:
            if ours_in_sequence(r) and r["status"] == "ok":
                by_row.setdefault((r["size"], r["dtype"], r["mode"]), []).append(r)

    def distance(r: dict) -> float:  # a missing ratio is the furthest of all
        return math.inf if r["t_over_yardstick"] is None else r["t_over_yardstick"]

    rows, missing = [], []
    for (size, dtype, mode), records in by_row.items():
        failing = [r for r in records if not bar(r)[1]]
        rows.append(max(failing or records, key=distance))
        if len(records) < len(runs):
            missing.append(f"  {size} {dtype} {mode}: in {len(records)} of the {len(runs)} runs")
    return rows, missing


def read_runs(paths: list[Path]) -> list[dict]:
    """Each saved run (bench.py's JSON: environment, machine, results); SystemExit naming the file
    that is none."""
    runs = []
    for path in paths:
        try:
            run = json.loads(path.read_text())
            if not isinstance(run, dict) or not isinstance(run.get("environment"), dict):
                raise ValueError("no environment")
            results = run.get("results")
            if not isinstance(results, list) or not all(
                    isinstance(r, dict) and all(key in r for key in RECORD_KEYS) for r in results):
                raise ValueError("no results, or records without " + ", ".join(RECORD_KEYS))
        except (OSError, ValueError) as error:
            raise SystemExit(f"--judge {path}: not a run saved by bench.py ({error})") from None
        runs.append(run)
    return runs


def judge(paths: list[Path]) -> str:
    """What --judge prints: a line for each run (what ran where: different builds are different
    code) and its rows of lltm_jit's that did not run ok, the rows that some runs lack, then the
    bars over all of them."""
    runs = read_runs(paths)
    lines = []
    for path, run in zip(paths, runs, strict=True):
        env = run["environment"]
        build = env.get("lltm_jit_build")
        key = build.get("key", "?") if isinstance(build, dict) else "?"
        lines.append(f"run {path}: {env.get('device_name', '?')}, torch {env.get('torch', '?')}, "
                     f"{env.get('date', '?')}, build {key}")
        # A row that failed in a run is judged on the others: say so, as that run's table did.
        lines += [f"  {r['size']} {r['dtype']} {r['mode']}: {r['status']} in this run" for r in run["results"]
                  if ours_in_sequence(r) and r["status"] != "ok"]
    rows, missing = judged([run["results"] for run in runs], issue21_bar)
    return "\n".join([*lines, *missing, bars(rows, issue21_bar)])


@dataclass(frozen=True)
class NamedPlan:
    """Rows run by name with --plan, in place of the defaults and on one device type only."""

    about: str  # its line in --help
    kind: str
    device: str
    backends: tuple[str, ...]
    plans: tuple[str, ...]  # "sizes:dtypes", as above, in the order of the report
    bar: Callable[[dict], tuple[str, bool]] | None = None  # each of lltm_jit's rows against its goal


def cudnn_plan(about: str, plans: tuple[str, ...]) -> NamedPlan:
    """Sequences on CUDA, lltm_jit against nn.LSTM (cuDNN) alone, each row against issue 21's bar:
    the issue's columns only, as eager and loop would take minutes a case at these sizes."""
    return NamedPlan(about, kind="sequence", device="cuda", backends=("lltm_jit", "lstm"), plans=plans,
                     bar=issue21_bar)


NAMED_PLANS = {
    "cudnn": cudnn_plan(
        "issue 21's two tables: lltm_jit against cuDNN's nn.LSTM at equal precision (T = 64 unless "
        "a size says otherwise), each case forward + backward and forward only (its fwd rows)",
        (
            "16x32x128:float32", "64x256x512:bfloat16", "256x512x1024:float32", "256x512x1024:tf32:float32",
            "256x512x1024:bfloat16", "1024x256x256:bfloat16", "64x256x512:T128:packed:bfloat16",
            "64x256x512:T128:L2:bi:float32",
            "128x512x512,64x1024x1024,8x256x512:T256:float16",
        ),
    ),
    "cudnn-other": cudnn_plan(
        "the kinds of issue 21's rows at sizes its tables do not list, where its bars are to hold too, "
        "as --plan cudnn runs them",
        (
            "32x64x256:float32", "128x256x512,32x128x384:bfloat16", "512x256x512:float32",
            "512x256x512:tf32,128x1024x1024:tf32:float32", "512x512x768,128x1024x1024,2048x128x256:bfloat16",
            "128x128x256:T96:packed:bfloat16", "32x128x256:L2:bi:float32", "128x256x384:L3:bfloat16",
            # float16 in cuDNN's persistent range, as issue21_bar takes it
            "32x256x256,96x384x384,16x512x1024:T128,8x128x256:T256:float16",
        ),
    ),
}
# Left out of the default backends: compile in a smoke run (tens of seconds to compile on a small
# CPU); off CUDA, gemm (the yardstick of the CUDA kernels, run on a CPU when asked for) and the
# sequence op's per-step path of CUDA kernels, which runs on CUDA only.
NOT_QUICK = {"compile"}
CUDA_ONLY = {"lltm_jit_step_kernels"}
NOT_ON_CPU = {"gemm", *CUDA_ONLY}


def comma_list(parse: Callable[[str], object]) -> Callable[[str], list]:
    def parse_list(text: str) -> list:
        items = [parse(item) for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r}: expected at least one item")
        return items

    return parse_list


def parse_dtype(name: str) -> torch.dtype:
    if name.strip() not in DTYPES:
        raise argparse.ArgumentTypeError(f"dtype {name!r}: expected one of {', '.join(DTYPES)}")
    return DTYPES[name.strip()]


def parse_device(text: str) -> torch.device:
    try:
        return torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected cpu, cuda or cuda:N") from None


def parse_backend(name: str) -> str:
    names = dict.fromkeys(name for kind in KINDS.values() for name in kind.backends)
    if name.strip() not in names:
        raise argparse.ArgumentTypeError(f"backend {name!r}: expected one of {', '.join(names)}")
    return name.strip()


def parse_size(kind: Kind, text: str, steps: int):
    """A size of the kind: a step's BxFxS, or a sequence's spec, of `steps` steps unless it says."""
    return SequenceSize.parse(text, steps) if kind is SEQUENCE else Size.parse(text)


def parse_plan(text: str, kind: Kind, steps: int) -> tuple[list, list[torch.dtype]]:
    """A "sizes:dtypes" plan's sizes of the kind and its dtypes, which follow the last colon (a
    sequence's sizes may have colons of their own)."""
    sizes, _, dtypes = text.rpartition(":")
    return comma_list(lambda size: parse_size(kind, size, steps))(sizes), comma_list(parse_dtype)(dtypes)


def in_words(plan: str) -> str:
    sizes, _, dtypes = plan.rpartition(":")
    return f"{sizes} in {dtypes}"


def epilog() -> str:
    """The backends and default sizes of each kind, and the named plans, for --help."""
    lines = []
    for kind in KINDS.values():
        width = max(map(len, kind.backends)) + 1
        lines.append(f"{kind.name} backends:")
        lines += [f"  {name:<{width}} {setup.__doc__}" for name, setup in kind.backends.items()]
        lines += [f"  default on {device}: {' and '.join(map(in_words, plans))}"
                  for device, plans in DEFAULT_PLANS[kind.name].items()]
        lines.append("")
    lines.append("plans (--plan NAME):")
    for name, named in NAMED_PLANS.items():
        lines += textwrap.wrap(f"{name}: {named.about}. {named.kind} on {named.device}, "
                               f"{' and '.join(named.backends)}: {'; '.join(map(in_words, named.plans))}",
                               width=96, initial_indent="  ", subsequent_indent="    ")
    lines.append("")
    return "\n".join(lines) + ("\nexit status: 1 if a correctness check failed, a backend raised or lltm_jit ran "
                               "its pure-PyTorch fallback (its build failed), else 0.")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=epilog(), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kind", choices=[*KINDS, "all"], default="all", help="which kind of case to run (default: all)"
    )
    parser.add_argument(
        "--steps", type=int, help="time steps T of a sequence (default 64; quick 16)"
    )
    parser.add_argument(
        "--device", type=parse_device, help="cpu, cuda or cuda:N (default: cuda if available, else cpu)"
    )
    parser.add_argument(
        "--sizes", type=comma_list(str.strip), metavar="BxFxS,...",
        help=f"batch x input_features x state_size, for every kind run; a sequence's is {SPEC} (see "
        "above). Default: each kind's, see below; with --dtypes alone, all the kind's default sizes",
    )
    parser.add_argument(
        "--dtypes", type=comma_list(parse_dtype), metavar="DTYPE,...",
        help=f"of {', '.join(DTYPES)}, for every kind run (default: each kind's, see below; with "
        "--sizes alone, float32 and on CUDA bfloat16)",
    )
    parser.add_argument(
        "--backends", type=comma_list(parse_backend), metavar="NAME,...",
        help="which to run, see below; a kind runs those it has, and a kind with none is not run "
        f"(default: all; {', '.join(sorted(NOT_ON_CPU))} on CUDA only, where "
        f"{', '.join(sorted(CUDA_ONLY))} runs at all)",
    )
    parser.add_argument(
        "--plan", choices=NAMED_PLANS,
        help="run a named set of rows (see below) in place of the defaults; --backends may replace "
        "its backends",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="a smoke run: one size of each kind ("
        + ", ".join(f"{kind} {plan.replace(':', ' in ')}" for kind, plan in QUICK_PLANS.items())
        + "), few repeats, no compile unless in --backends",
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
    parser.add_argument(
        "--judge", type=Path, nargs="+", metavar="RUN.json",
        help="run nothing: judge saved runs of a --plan together against issue 21's bars, each of "
        "lltm_jit's rows met only where every run that has it meets it (cuDNN's times move between "
        "processes: run the plan in several)",
    )
    args = parser.parse_args()
    if args.judge:
        given = [option for option, value in (
            ("--kind", args.kind != "all"), ("--steps", args.steps), ("--device", args.device), ("--sizes", args.sizes),
            ("--dtypes", args.dtypes), ("--backends", args.backends), ("--plan", args.plan), ("--quick", args.quick),
            ("--repeats", args.repeats), ("--warmup", args.warmup), ("--budget", args.budget),
            ("--graphs", args.graphs)) if value]
        if given:
            parser.error(f"--judge runs nothing: drop {', '.join(given)}")
        return args

    if args.device is None:
        args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.device.type == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: torch sees no CUDA device")
        # CUDA events record on the current device: make it the benchmarked one.
        index = torch.cuda.current_device() if args.device.index is None else args.device.index
        args.device = torch.device("cuda", index)
        torch.cuda.set_device(args.device)
    elif args.device.type != "cpu" or args.device.index not in (None, 0):
        parser.error(f"--device {args.device}: expected cpu, cuda or cuda:N")
    if args.graphs and args.device.type != "cuda":
        parser.error("--graphs needs a CUDA device")
    args.steps = args.steps if args.steps is not None else (16 if args.quick else 64)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.plan:
        named = NAMED_PLANS[args.plan]
        given = [option for option, value in (("--sizes", args.sizes), ("--dtypes", args.dtypes),
                                              ("--quick", args.quick)) if value]
        if given:
            parser.error(f"--plan {args.plan} names its own sizes and dtypes: drop {', '.join(given)}")
        if args.kind not in ("all", named.kind):
            parser.error(f"--plan {args.plan} is of --kind {named.kind}, got --kind {args.kind}")
        if args.device.type != named.device:
            parser.error(f"--plan {args.plan} runs on {named.device} only (its sizes are a GPU's), "
                         f"got device {args.device}")
    if args.backends:
        unknown = set(args.backends) - {n for kind in selected_kinds(args) for n in kind.backends}
        if unknown:
            parser.error(f"--backends {', '.join(sorted(unknown))}: not a backend of --kind {args.kind}")
        if args.device.type != "cuda" and (cuda_only := CUDA_ONLY & set(args.backends)):
            parser.error(f"--backends {', '.join(sorted(cuda_only))}: runs on CUDA only, got device {args.device}")
    try:
        args.plans = [plan for kind in selected_kinds(args) for plan in plans_of(kind, args)]
    except argparse.ArgumentTypeError as error:  # a size that the kind does not take
        parser.error(f"--sizes: {error}")
    cases = [(plan.kind.name, str(size), dtype) for plan in args.plans for size in plan.sizes for dtype in plan.dtypes]
    if twice := next((case for i, case in enumerate(cases) if case in cases[:i]), None):
        # A table's ratios are of rows measured together: two runs of one case would mix them.
        kind, size, dtype = twice
        parser.error(f"--sizes, --dtypes: the {kind} case {size} in {str(dtype).removeprefix('torch.')} is given twice")
    if args.device.type != "cuda" and any(getattr(size, "tf32", False) for plan in args.plans for size in plan.sizes):
        parser.error("--sizes: :tf32 is a CUDA setting (cuBLAS's and cuDNN's float32 products); this run is on the CPU")
    args.repeats = args.repeats if args.repeats is not None else (20 if args.quick else 100)
    args.warmup = args.warmup if args.warmup is not None else (3 if args.quick else 10)
    args.budget = args.budget if args.budget is not None else (0.2 if args.quick else 2.0)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2 (for a spread)")
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    if args.warmup < 0 or not args.budget >= 0:
        parser.error("--warmup and --budget must not be negative (or, for --budget, nan)")
    if not args.no_save:  # now, not after the run, whose results would then be lost
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            probe = args.out / f".bench-{os.getpid()}"
            probe.touch()
            probe.unlink()
        except OSError as error:
            parser.error(f"--out {args.out}: cannot write there ({error.strerror or error}); pick another "
                         "folder or pass --no-save")
    return args


def selected_kinds(args: argparse.Namespace) -> list[Kind]:
    if args.plan:
        return [KINDS[NAMED_PLANS[args.plan].kind]]
    return list(KINDS.values()) if args.kind == "all" else [KINDS[args.kind]]


def plans_of(kind: Kind, args: argparse.Namespace) -> list[Plan]:
    """The kind's plans from the options: --plan's, or its defaults for this device (or --quick's)
    replaced by --sizes and --dtypes where given; none if --backends names none of the kind's.
    Raises argparse.ArgumentTypeError for a size that the kind does not take."""
    cuda = args.device.type == "cuda"
    named = NAMED_PLANS[args.plan] if args.plan else None
    if args.backends or named:
        wanted = set(args.backends or named.backends)
    else:
        wanted = set(kind.backends) - (NOT_QUICK if args.quick else set()) - (set() if cuda else NOT_ON_CPU)
    backends = [name for name in kind.backends if name in wanted]
    if named:
        defaults = named.plans
    else:
        defaults = [QUICK_PLANS[kind.name]] if args.quick else DEFAULT_PLANS[kind.name][args.device.type]
    pairs = [parse_plan(plan, kind, args.steps) for plan in defaults]
    if args.sizes or args.dtypes:
        default_sizes = list(dict.fromkeys(size for sizes, _ in pairs for size in sizes))
        default_dtypes = [torch.float32] + ([torch.bfloat16] if cuda and not args.quick else [])
        sizes = [parse_size(kind, size, args.steps) for size in args.sizes or []] or default_sizes
        pairs = [(sizes, args.dtypes or default_dtypes)]
    return [Plan(kind, sizes, dtypes, backends) for sizes, dtypes in pairs] if backends else []


def main() -> int:
    args = parse_args()
    if args.judge:
        print(judge(args.judge))
        return 0
    settings = Settings(args.device, args.warmup, args.repeats, args.calls, args.budget, args.graphs)
    torch.manual_seed(args.seed)
    # Equal precision: float32 products in full precision on every side, ours (cuBLAS) and
    # nn.LSTM's (cuDNN, which allows TF32 by default).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    machine, results = run(args.plans, settings)
    records = summarize(results, machine)
    env = environment(settings, args.seed)
    print(table(records, env, machine))
    named = NAMED_PLANS.get(args.plan)
    if named and named.bar:
        print("\n" + bars(records, named.bar))
    if not args.no_save:
        save(records, env, machine, settings, args.out, with_plot=not args.no_plot)
    return 0 if verdict(records, env)[1] else 1


if __name__ == "__main__":
    sys.exit(main())
