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
     per round, so that the machine's slow spells fall on all of them alike.
  3. each time is set against a physical floor, measured on this device in the same run:
     max(FLOPs / matmul peak, bytes moved / copy bandwidth).

The table goes to stdout at the end; every number and the environment are saved as JSON, with a
plot of the speedups over eager, in --out.

examples:
  python bench.py                          # this machine's defaults (CUDA if there is a GPU)
  python bench.py --quick                  # one small size, a few seconds
  python bench.py --sizes 64x256x256 --dtypes float32,bfloat16 --backends eager,lltm_jit
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import random
import re
import shlex
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Callable

import torch
from torch import nn

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
# The largest relative error ||out - ref|| / ||ref|| accepted against the float64 reference.
TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 3e-2}
MODES = ("fwd", "fwd+bwd")
PEERS = ("compile", "lstmcell", "lstm")  # what lltm_jit competes with
DEFAULT_SIZES = {
    "cpu": "16x32x128,64x256x256,256x512x1024",
    "cuda": "16x32x128,256x512x1024,1024x1024x1024,4096x1024x1024",
}
QUICK_SIZE = "16x32x128"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------------------------------------
# Timing


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def capture(fn: Callable[[], object], warmup: int) -> Callable[[], object]:
    """`fn` captured in a CUDA graph (warmed up on a side stream first, as capture requires):
    its replay costs the device's time alone, with no host overhead between kernels."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(max(warmup, 3)):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def measure(
    fns: list[Callable[[], object]], device: torch.device, warmup: int, repeats: int, budget: float,
    graphs: bool = False, calls: int = 1,
) -> list[list[float] | Exception]:
    """Seconds per call of each of `fns`, one sample per repeat, after `warmup` calls of each; or
    the exception a function raised (it is then dropped, the others go on).

    A sample is the mean over `calls` back-to-back calls, as a training loop makes them. The
    functions take turns, one sample each per round, so that a slow spell of the machine (a
    shared host, a clock change) falls on all of them alike and their ratios stay fair. Stops
    once `budget` seconds per function have passed, after at least 5 rounds. On CUDA the samples
    come from CUDA events, each sample starting on an idle device: the device's time, which
    includes its idling while the host is still launching the kernels of a small step; with
    `graphs`, around replays of each function captured in a CUDA graph, which leaves that idling
    out.
    """
    cuda = device.type == "cuda"
    results: list[list[float] | Exception] = [[] for _ in fns]
    active = {}  # index -> the callable timed
    for i, fn in enumerate(fns):
        try:
            timed = capture(fn, warmup) if graphs else fn
            for _ in range(warmup):
                timed()
            active[i] = timed
        except Exception as error:
            results[i] = error
    synchronize(device)
    samples = {i: [] for i in active}  # CUDA: (start, end) event pairs, converted at the end
    enough = min(5, repeats)
    deadline = time.perf_counter() + budget * len(active)
    rounds = 0
    while active and rounds < repeats and (rounds < enough or time.perf_counter() < deadline):
        for i, timed in list(active.items()):
            try:
                if cuda:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    # Untimed: otherwise a sample starts behind the work another function left
                    # queued (a device-bound one leaves milliseconds), which skewed the host-bound
                    # samples that followed it by up to 30% on an H200 (benchmarks/NOTES.md).
                    synchronize(device)
                    start.record()
                    for _ in range(calls):
                        timed()
                    end.record()
                    samples[i].append((start, end))
                else:
                    begin = time.perf_counter()
                    for _ in range(calls):
                        timed()
                    samples[i].append((time.perf_counter() - begin) / calls)
            except Exception as error:
                results[i] = error
                del active[i], samples[i]
        rounds += 1
    if cuda:
        synchronize(device)
    for i, taken in samples.items():
        results[i] = [start.elapsed_time(end) / 1e3 / calls for start, end in taken] if cuda else taken
    return results


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p10, median, p90)."""
    deciles = statistics.quantiles(samples, n=10, method="inclusive")
    return deciles[0], statistics.median(samples), deciles[-1]


# ---------------------------------------------------------------------------------------------
# The physical floor


@dataclass
class Machine:
    """What this device does at best, measured in this run."""

    copy_bytes_per_s: float  # bytes read + written per second by a large copy
    matmul_flops_per_s: dict[str, float]  # by dtype name: a large square matmul


def measure_machine(device: torch.device, dtypes: list[torch.dtype]) -> Machine:
    """The fastest of a few repeats, not the median: a floor must not be above what is possible."""
    cuda = device.type == "cuda"
    src = torch.ones((1 << 30 if cuda else 1 << 28) // 4, device=device)  # 1 GiB; 256 MiB on a CPU
    dst = torch.empty_like(src)
    copy_s = min(measure([lambda: dst.copy_(src)], device, 2, 20, 1.0)[0])
    copy_bytes_per_s = 2 * src.nbytes / copy_s
    del src, dst
    n = 8192 if cuda else 1024  # a GPU needs this much to reach its peak; a CPU takes ~50 ms at 1024
    peaks = {}
    for dtype in dtypes:
        a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
        out = torch.empty_like(a)
        seconds = min(measure([lambda: torch.mm(a, b, out=out)], device, 2, 10, 1.0)[0])
        peaks[dtype_name(dtype)] = 2 * n**3 / seconds
    return Machine(copy_bytes_per_s, peaks)


@dataclass(frozen=True)
class Size:
    batch: int
    features: int
    state: int

    @classmethod
    def parse(cls, text: str) -> Size:
        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)", text.strip())
        if not match or 0 in map(int, match.groups()):
            raise argparse.ArgumentTypeError(
                f"size {text!r}: expected BxFxS with positive integers, e.g. 16x32x128"
            )
        return cls(*map(int, match.groups()))

    def __str__(self) -> str:
        return f"{self.batch}x{self.features}x{self.state}"


def floor_seconds(size: Size, mode: str, dtype: torch.dtype, machine: Machine) -> tuple[float, str]:
    """The least time one LLTM step can take here, and what bounds it ("compute" or "memory").

    FLOPs: the matrix products, 2 * B * (S + F) * 3S each: the gates in the forward, then
    d_[old_h, input] = d_gates @ weights and d_weights = d_gates^T @ [old_h, input] in the
    backward. The elementwise work (tens of FLOPs per B * S element) is left out.

    Bytes: every tensor that must cross memory, read or written once:
      forward   reads input (B*F), old_h, old_cell (B*S each), weights (3S * (S+F)), bias (3S);
                writes new_h, new_cell (B*S each) and, when a backward follows, what it keeps
                besides its inputs: the gate pre-activations (3 * B*S);
      backward  reads grad_h, grad_cell (B*S each), the kept gates, old_cell, input, old_h and
                weights; writes the gradients of input, weights, bias, old_h, old_cell.
    d_gates is not counted: a kernel that fused the elementwise pass into the products would
    never store it.
    """
    b, f, s = size.batch, size.features, size.state
    weights = 3 * s * (s + f)
    gemm_flops = 2 * b * (s + f) * 3 * s
    forward = (b * f + 2 * b * s + weights + 3 * s) + 2 * b * s
    if mode == "fwd":
        flops, elements = gemm_flops, forward
    else:
        kept = 3 * b * s
        backward_reads = 2 * b * s + kept + b * s + b * f + b * s + weights
        backward_writes = b * f + weights + 3 * s + 2 * b * s
        flops, elements = 3 * gemm_flops, forward + kept + backward_reads + backward_writes
    compute = flops / machine.matmul_flops_per_s[dtype_name(dtype)]
    memory = elements * dtype.itemsize / machine.copy_bytes_per_s
    return (compute, "compute") if compute >= memory else (memory, "memory")


# ---------------------------------------------------------------------------------------------
# The backends


@dataclass
class Case:
    """The tensors of one (size, dtype), allocated once and shared by the backends."""

    size: Size
    dtype: torch.dtype
    module: nn.Module  # an lltm_jit.LLTM; its parameters serve eager, lltm_jit and compile
    input: torch.Tensor  # the leaves, requiring grad
    old_h: torch.Tensor
    old_cell: torch.Tensor
    grads: tuple[torch.Tensor, torch.Tensor]  # incoming gradients of new_h and new_cell

    @classmethod
    def make(cls, size: Size, dtype: torch.dtype, device: torch.device) -> Case:
        def randn(columns, requires_grad=False):
            shape = (size.batch, columns)
            return torch.randn(shape, device=device, dtype=dtype, requires_grad=requires_grad)

        module = lltm_jit.LLTM(size.features, size.state, device=device, dtype=dtype)
        leaves = randn(size.features, True), randn(size.state, True), randn(size.state, True)
        return cls(size, dtype, module, *leaves, (randn(size.state), randn(size.state)))


@dataclass
class Runner:
    """One backend set up for one case."""

    forward: Callable[[], object]  # one step; timed under no_grad
    train: Callable[[], object]  # one step forward and backward
    # (input, old_h, old_cell) -> (new_h, new_cell) with the case's module parameters; for the
    # correctness check, so only for the backends that compute the LLTM function.
    lltm: Callable | None = None
    note: str = ""
    compile_s: float | None = None


def backward_step(forward: Callable[[], tuple], leaves: tuple, grads: tuple) -> Callable[[], object]:
    # autograd.grad rather than .backward(): nothing accumulates into .grad between repeats.
    return lambda: torch.autograd.grad(forward(), leaves, grads)


def lltm_runner(case: Case, step: Callable) -> Runner:
    leaves = (case.input, case.module.weights, case.module.bias, case.old_h, case.old_cell)

    def forward():
        return step(case.input, case.old_h, case.old_cell)

    return Runner(forward, backward_step(forward, leaves, case.grads), lltm=step)


def eager_runner(case: Case) -> Runner:
    """the pure-PyTorch reference, eager"""
    m = case.module
    return lltm_runner(case, lambda x, h, c: lltm_jit.reference_lltm(x, m.weights, m.bias, h, c))


def lltm_jit_runner(case: Case) -> Runner:
    """lltm_jit.LLTM"""
    return lltm_runner(case, lambda x, h, c: case.module(x, (h, c)))


def compile_runner(case: Case) -> Runner:
    """torch.compile of the reference (compile time reported apart)"""
    # Dynamo keeps a few graphs per function (8 by default), then silently runs eager: sizes x
    # dtypes x {no_grad, grad} would overflow that, so each case starts from an empty cache.
    torch.compiler.reset()
    compiled = torch.compile(lltm_jit.reference_lltm, dynamic=False)
    m = case.module
    runner = lltm_runner(case, lambda x, h, c: compiled(x, m.weights, m.bias, h, c))
    start = time.perf_counter()
    with torch.no_grad():
        runner.forward()
    runner.train()  # the training graph, with its backward
    synchronize(case.input.device)
    runner.compile_s = time.perf_counter() - start
    runner.note = f"compiled in {runner.compile_s:.1f} s"
    return runner


def lstmcell_runner(case: Case) -> Runner:
    """nn.LSTMCell, hidden_size = state_size (a different cell: speed peer only)"""
    s = case.size
    cell = nn.LSTMCell(s.features, s.state, device=case.input.device, dtype=case.dtype)

    def forward():
        return cell(case.input, (case.old_h, case.old_cell))

    leaves = (case.input, case.old_h, case.old_cell, *cell.parameters())
    return Runner(forward, backward_step(forward, leaves, case.grads), note="peer (different cell)")


def lstm_runner(case: Case) -> Runner:
    """nn.LSTM, one time step, cuDNN on CUDA (a different cell: speed peer only)"""
    s = case.size
    lstm = nn.LSTM(s.features, s.state, device=case.input.device, dtype=case.dtype)
    # Built on the device directly, its weights are not yet in cuDNN's one buffer, and every call
    # would copy them there ("RNN module weights are not part of single contiguous chunk").
    lstm.flatten_parameters()
    # (seq_len = 1, batch, features) leaves sharing the case's memory.
    x, h, c = (t.detach().unsqueeze(0).requires_grad_() for t in (case.input, case.old_h, case.old_cell))

    def forward():
        return lstm(x, (h, c))[1]  # (h_n, c_n)

    leaves = (x, h, c, *lstm.parameters())
    grads = tuple(g.unsqueeze(0) for g in case.grads)
    return Runner(forward, backward_step(forward, leaves, grads), note="peer (different cell)")


def gemm_runner(case: Case) -> Runner:
    """the matrix products of lltm_jit alone (default on CUDA only)"""
    weights, bias = case.module.weights.detach(), case.module.bias.detach()
    # The same products as src/lltm.h, on operands made once so that only the products are timed.
    x = torch.cat([case.old_h.detach(), case.input.detach()], dim=1)
    weights_t = weights.t()
    d_gates = torch.randn(case.size.batch, 3 * case.size.state, device=x.device, dtype=case.dtype)
    d_gates_t = d_gates.t()

    def forward():
        return torch.addmm(bias, x, weights_t)

    def train():
        forward()
        torch.mm(d_gates, weights)
        torch.mm(d_gates_t, x)

    return Runner(forward, train)


# name -> what sets it up for a case; its docstring is its line in --help.
BACKENDS = {
    "eager": eager_runner,
    "lltm_jit": lltm_jit_runner,
    "compile": compile_runner,
    "lstmcell": lstmcell_runner,
    "lstm": lstm_runner,
    "gemm": gemm_runner,
}
FLOOR_BACKENDS = ("eager", "lltm_jit", "compile", "gemm")  # those doing the LLTM step's work


def check(step: Callable, case: Case) -> dict[str, float]:
    """Relative errors ||out - ref|| / ||ref|| of new_h, new_cell and the gradients of the five
    inputs against the reference in float64, on fresh random inputs (the case's parameters)."""
    m = case.module
    x, h, c = (torch.randn_like(t).requires_grad_() for t in (case.input, case.old_h, case.old_cell))
    grads = tuple(torch.randn_like(g) for g in case.grads)
    leaves = (x, m.weights, m.bias, h, c)
    outputs = step(x, h, c)
    got = (*outputs, *torch.autograd.grad(outputs, leaves, grads))
    # The reference sees the very values the backend saw, so rounding the inputs is not counted.
    leaves64 = tuple(t.detach().double().requires_grad_() for t in leaves)
    outputs64 = lltm_jit.reference_lltm(*leaves64)
    want = (*outputs64, *torch.autograd.grad(outputs64, leaves64, [g.double() for g in grads]))
    names = ("new_h", "new_cell", "d_input", "d_weights", "d_bias", "d_old_h", "d_old_cell")
    return {n: ((g.double() - w).norm() / w.norm()).item() for n, g, w in zip(names, got, want)}


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    """One backend on one case in one mode."""

    size: Size
    dtype: torch.dtype
    backend: str
    mode: str
    status: str  # "ok", "FAILED" (the check), "ERROR" (it raised)
    samples: list[float]  # seconds per step; empty unless ok
    errors: dict[str, float] | None  # the check's, for the backends computing the LLTM function
    note: str
    compile_s: float | None


def error_note(error: Exception) -> str:
    return f"ERROR {type(error).__name__}: {str(error).strip().partition(chr(10))[0]}"


def prepare(name: str, case: Case) -> tuple[Runner | None, dict | None, str]:
    """A backend set up and checked (where the check applies): its runner (None if it failed or
    raised), its errors against the reference, and a note."""
    try:
        runner = BACKENDS[name](case)
        errors = check(runner.lltm, case) if runner.lltm else None
    except Exception as error:  # one backend's failure must not lose the others' results
        return None, None, error_note(error)
    notes = [runner.note]
    if errors is not None:
        worst = max(errors.values(), key=lambda e: (math.isnan(e), e))
        tolerance = TOLERANCES[case.dtype]
        if not worst <= tolerance:
            return None, errors, f"FAILED: error {worst:.1e} > {tolerance:.0e}"
        notes.append(f"error {worst:.0e}")
    return runner, errors, ", ".join(filter(None, notes))


def run_case(case: Case, args: argparse.Namespace, progress: Progress) -> list[Result]:
    """Every backend checked, then all of them timed together in both modes (interleaved, see
    measure); a result per backend and mode."""
    prepared = {}  # name -> (runner, errors, note)
    for name in args.backends:
        progress.show(f"{case.size} {dtype_name(case.dtype)} {name}")
        prepared[name] = prepare(name, case)
        progress.advance()
    progress.show(f"{case.size} {dtype_name(case.dtype)}: timing")
    timers = [
        (name, mode, torch.no_grad()(runner.forward) if mode == "fwd" else runner.train)
        for name, (runner, _, _) in prepared.items() if runner
        for mode in MODES
    ]
    timed = measure([fn for _, _, fn in timers], args.device, args.warmup, args.repeats,
                    args.budget, args.graphs, args.calls)
    samples = {(name, mode): taken for (name, mode, _), taken in zip(timers, timed)}
    results = []
    for mode in MODES:  # grouped by mode for the report, backends in their order
        for name, (runner, errors, note) in prepared.items():
            taken = samples.get((name, mode), [])
            if runner is None:
                status = "FAILED" if note.startswith("FAILED") else "ERROR"
            elif isinstance(taken, Exception):
                status, note, taken = "ERROR", error_note(taken), []
            else:
                status = "ok"
            results.append(Result(case.size, case.dtype, name, mode, status, taken, errors, note,
                                  runner.compile_s if runner else None))
    return results


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int):
        self.total, self.done = total, 0

    def show(self, label: str) -> None:
        filled = 30 * self.done // self.total
        line = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {label}"
        print(f"\r{line:<79}", end="", file=sys.stderr, flush=True)

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        self.show("done")
        print(file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> tuple[Machine, list[Result]]:
    progress = Progress(1 + len(args.sizes) * len(args.dtypes) * len(args.backends))
    progress.show("measuring copy bandwidth and matmul peak")
    machine = measure_machine(args.device, args.dtypes)
    progress.advance()
    results = []
    for size in args.sizes:
        for dtype in args.dtypes:
            results += run_case(Case.make(size, dtype, args.device), args, progress)
    progress.close()
    return machine, results


# ---------------------------------------------------------------------------------------------
# Reporting


def us(seconds: float | None) -> float | None:
    return seconds * 1e6 if seconds is not None else None


def summarize(results: list[Result], machine: Machine) -> list[dict]:
    """One flat record per result with every derived number: what the table, JSON and plot show.

    Ratios compare medians: eager_over_t and peer_over_t are speedups (over eager, over the best
    peer that ran), t_over_floor and t_over_gemm how far a time is from the floor / the products.
    """
    medians = {
        (r.size, r.dtype, r.mode, r.backend): percentiles(r.samples)[1] for r in results if r.samples
    }

    def ratio(a, b):
        return a / b if a is not None and b is not None else None

    records = []
    for r in results:
        key = (r.size, r.dtype, r.mode)
        p10, median, p90 = percentiles(r.samples) if r.samples else (None, None, None)
        peers = {p: medians[(*key, p)] for p in PEERS if (*key, p) in medians}
        best_peer = min(peers, key=peers.get, default=None)
        floor, bound = floor_seconds(r.size, r.mode, r.dtype, machine)
        records.append({
            "size": str(r.size), "batch": r.size.batch, "input_features": r.size.features,
            "state_size": r.size.state, "dtype": dtype_name(r.dtype), "mode": r.mode,
            "backend": r.backend, "status": r.status, "note": r.note,
            "median_us": us(median), "p10_us": us(p10), "p90_us": us(p90), "repeats": len(r.samples),
            "eager_over_t": ratio(medians.get((*key, "eager")), median),
            "best_peer": best_peer, "peer_over_t": ratio(peers.get(best_peer), median),
            "floor_us": us(floor), "floor_bound": bound,
            "t_over_floor": ratio(median, floor) if r.backend in FLOOR_BACKENDS else None,
            "t_over_gemm": (
                ratio(median, medians.get((*key, "gemm"))) if r.backend == "lltm_jit" else None
            ),
            "compile_s": r.compile_s, "check_errors": r.errors,
            "tolerance": TOLERANCES[r.dtype] if r.errors is not None else None,
            "samples_us": [us(t) for t in r.samples],
        })
    return records


RATIOS = ("eager_over_t", "peer_over_t", "t_over_floor")  # the table's ratio columns


def fmt_us(t: float | None) -> str:
    return "-" if t is None else f"{t:.1f}" if t < 1000 else f"{t:.0f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def table(records: list[dict], env: dict, machine: Machine) -> str:
    """The report, within 100 columns."""
    peaks = ", ".join(f"{d} {f / 1e9:.0f}" for d, f in machine.matmul_flops_per_s.items())
    row = "  {:<9}{:>10}  {:<13}{:>8}{:>8}{:>8}  {}"
    lines = [
        f"lltm_jit {env['lltm_jit']} ({env['lltm_jit_build']['backend']}), torch {env['torch']}, "
        f"on {env['device']}: {env['device_name']}, {env['threads']} threads, "
        f"load {env['load_average'][0]:.1f}, timing {env['timing']}",
        f"copy bandwidth {machine.copy_bytes_per_s / 1e9:.1f} GB/s; matmul peak GFLOP/s: {peaks}",
        "us: median time per step; p10/p90: relative to it; eager/t, peer/t: speedups over eager",
        "and over the best peer; t/floor: over max(FLOPs / peak, bytes / bandwidth); t/gemm: over",
        "the products alone; error: the check's largest relative error against float64",
    ]
    for (size, dtype, mode), group in groupby(records, key=lambda r: (r["size"], r["dtype"], r["mode"])):
        group = list(group)
        first = group[0]
        peer = f", best peer {first['best_peer']}" if first["best_peer"] else ""
        bound = f"{fmt_us(first['floor_us'])} us ({first['floor_bound']}-bound)"
        lines += ["", f"{size} {dtype} {mode}: floor {bound}{peer}"]
        lines.append(row.format("backend", "us", "p10/p90", "eager/t", "peer/t", "t/floor", "note"))
        for r in group:
            spread = "-"
            if r["median_us"] is not None:
                low, high = (r[p] / r["median_us"] - 1 for p in ("p10_us", "p90_us"))
                spread = f"{low:+.0%}/{high:+.0%}"
            notes = [r["note"], r["t_over_gemm"] and f"t/gemm {fmt_ratio(r['t_over_gemm'])}"]
            cells = (fmt_us(r["median_us"]), spread, *(fmt_ratio(r[k]) for k in RATIOS))
            lines.append(row.format(r["backend"], *cells, ", ".join(filter(None, notes)))[:100].rstrip())
    failed = sorted({f"{r['backend']} {r['size']} {r['dtype']}" for r in records if r["status"] != "ok"})
    lines += ["", f"NOT OK (seed {env['seed']}): {'; '.join(failed)}" if failed else "all checks passed"]
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(args: argparse.Namespace) -> dict:
    device = args.device
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model(),
        "cpu": cpu_model(),
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),  # other work on the machine skews CPU timings
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "lltm_jit": lltm_jit.__version__,
        "lltm_jit_build": lltm_jit.build_info(),
        "command": shlex.join([sys.executable, *sys.argv]),
        "seed": args.seed,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "calls_per_sample": args.calls,
        "budget_s": args.budget,
        "timing": "CUDA graph replays" if args.graphs else "eager calls",
    }


def plot(records: list[dict], path: Path, title: str) -> bool:
    """Speedup over eager against size: a panel per dtype and mode, a line per backend."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install matplotlib)")
        return False
    sizes = list(dict.fromkeys(r["size"] for r in records))
    panels = list(dict.fromkeys((r["dtype"], r["mode"]) for r in records))
    backends = list(dict.fromkeys(r["backend"] for r in records if r["backend"] != "eager"))
    columns = len(MODES)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.8 * rows), squeeze=False)
    for ax, (dtype, mode) in zip(axes.flat, panels):
        for backend in backends:
            points = [
                (sizes.index(r["size"]), r["eager_over_t"])
                for r in records
                if (r["dtype"], r["mode"], r["backend"]) == (dtype, mode, backend) and r["eager_over_t"]
            ]
            if points:
                ax.plot(*zip(*points), marker="o", label=backend)
        ax.axhline(1.0, color="grey", linestyle="--", label="eager")
        ax.set_ylim(bottom=0)
        ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
        ax.set_title(f"{dtype}, {mode}")
        ax.set_xlabel("batch x input_features x state_size")
        ax.set_ylabel("speedup over eager")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def save(records: list[dict], env: dict, machine: Machine, args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    timing = "-graphs" if args.graphs else ""
    stem = f"{args.device.type}{timing}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    json_path = args.out / f"{stem}.json"
    document = {
        "environment": env,
        "machine": dataclasses.asdict(machine),
        "results": records,
    }
    json_path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"saved {json_path}")
    png_path = args.out / f"{stem}.png"
    title = f"lltm_jit {env['lltm_jit']} on {env['device_name']}, torch {env['torch']}"
    if not args.no_plot and plot(records, png_path, title):
        print(f"saved {png_path}")


# ---------------------------------------------------------------------------------------------
# Command line


def comma_list(parse: Callable[[str], object]) -> Callable[[str], list]:
    return lambda text: [parse(item) for item in text.split(",") if item.strip()]


def parse_dtype(name: str) -> torch.dtype:
    if name.strip() not in DTYPES:
        raise argparse.ArgumentTypeError(f"dtype {name!r}: expected one of {', '.join(DTYPES)}")
    return DTYPES[name.strip()]


def parse_backend(name: str) -> str:
    if name.strip() not in BACKENDS:
        raise argparse.ArgumentTypeError(f"backend {name!r}: expected one of {', '.join(BACKENDS)}")
    return name.strip()


def parse_args() -> argparse.Namespace:
    backends = "\n".join(f"  {name:<9} {runner.__doc__}" for name, runner in BACKENDS.items())
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
        "measurement stops taking samples, once it has 5 rounds (default 2; quick 0.2)",
    )
    parser.add_argument(
        "--seed", type=int, default=random.randrange(2**31), help="for all inputs (default: random)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent / "benchmarks" / "results",
        help="where to save <device>-<date>-<time>.json and .png "
        "(default: benchmarks/results next to this file)",
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
        name for name in BACKENDS if not (name == "compile" and quick or name == "gemm" and not cuda)
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
    # Imported only now, so that --help answers without building the kernels first.
    global lltm_jit
    import lltm_jit

    torch.manual_seed(args.seed)
    machine, results = run(args)
    records = summarize(results, machine)
    env = environment(args)
    if not args.no_save:
        save(records, env, machine, args)
    print(table(records, env, machine))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
