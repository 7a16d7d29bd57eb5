"""What a kind of case provides (its backends, check and floor), and the run over its cases:
every backend checked, then all of a case's steps timed together."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

import torch

from .timing import Machine, Settings, dtype_name, measure, measure_machine

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
MODES = ("fwd", "fwd+bwd")


@dataclass
class Runner:
    """One backend set up for one case."""

    forward: Callable[[], object] | None  # one step, timed under no_grad; None: no fwd row
    train: Callable[[], object]  # one step forward and backward
    # The relative errors of the backend's outputs and gradients against the float64 reference,
    # by name; only for the backends that compute the function under test.
    check: Callable[[], dict[str, float]] | None = None
    note: str = ""
    compile_s: float | None = None


@dataclass(frozen=True)
class Kind:
    """A kind of case: what its rows time, how they are checked, and what they are set against.
    step.py defines the LLTM step's, sequence.py a whole sequence's; each runs through a Plan.

    A case (what make_case returns) has `size`, a dataclass whose str() names it in the table and
    whose fields go into the JSON, and `dtype`; it is checked and timed within the kind's
    `context` for its size, where the kind has one. The report sets every row against the case's
    "eager" backend (eager/t, which every kind has), against the fastest of `peers` (peer/t),
    against the floor for `floor_backends` (t/floor), and against the `yardstick` backend where
    it ran (t/<yardstick>).
    """

    name: str
    make_case: Callable[[Any, torch.dtype, torch.device], Any]  # (size, dtype, device) -> a case
    # name -> its setup for a case; the setup's docstring says what the backend is.
    backends: dict[str, Callable[[Any], Runner]]
    # (size, dtype) -> the largest relative error a check accepts.
    tolerance: Callable[[Any, torch.dtype], float]
    peers: tuple[str, ...] = ()
    # (size, mode, dtype, machine) -> the least time a step can take, and what bounds it; (None,
    # None) where the machine's measured peaks bound nothing.
    floor: Callable[[Any, str, torch.dtype, Machine], tuple[float | None, str | None]] | None = None
    floor_backends: tuple[str, ...] = ()
    # The backend whose time every row's is divided by, in a column of its own: the one the
    # kind's target is stated against.
    yardstick: str | None = None
    call: str = ""  # what one timed call does: the heading of the kind's rows in the table
    # Column title -> a measurement of one step beyond its time (say, its peak memory), made
    # after timing: (step, device) -> a number for the table, or None.
    extras: dict[str, Callable[[Callable[[], object], torch.device], float | None]] = field(
        default_factory=dict
    )
    # size -> the settings its cases are checked and timed in (say, TF32 allowed), restored after;
    # None: torch's settings as bench.py left them.
    context: Callable[[Any], ContextManager] | None = None


@dataclass
class Plan:
    """What to run of one kind: every size x dtype, each with these backends."""

    kind: Kind
    sizes: list  # what the kind's make_case takes
    dtypes: list[torch.dtype]
    backends: list[str]


@dataclass
class Result:
    """One backend on one case in one mode."""

    kind: Kind
    size: Any
    dtype: torch.dtype
    backend: str
    mode: str
    status: str  # "ok", "FAILED" (the check), "ERROR" (it raised)
    samples: list[float]  # seconds per step; empty unless ok
    errors: dict[str, float] | None  # the check's, for the backends that have one
    note: str
    compile_s: float | None
    extra: dict[str, float | None] = field(default_factory=dict)  # by the kind's extras' titles


def random_arguments(batch, features, state, *, time=None, generator=None) -> list[torch.Tensor]:
    """Random float64 LLTM arguments on the CPU, never zeros: (input, weights, bias, h, cell), input
    (batch, features) or, given time, (time, batch, features); weights scaled so that the gates
    stay away from saturation. The benchmarks' and the tests' one factory."""
    rand = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    weights = rand(3 * state, state + features) / (state + features) ** 0.5
    input = rand(batch, features) if time is None else rand(time, batch, features)
    return [input, weights, rand(3 * state), rand(batch, state), rand(batch, state)]


def rel_err(got, want) -> float:
    """||got - want|| / ||want||, in float64 on the CPU (0 / 0 is 0)."""
    got, want = got.double().cpu(), want.double().cpu()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def relative_errors(names, got, want) -> dict[str, float]:
    """rel_err of each pair of tensors, by name; `want` in float64."""
    return {n: rel_err(g, w) for n, g, w in zip(names, got, want)}


def error_note(error: Exception) -> str:
    return f"ERROR {type(error).__name__}: {str(error).strip().partition(chr(10))[0]}"


def prepare(kind: Kind, name: str, case) -> tuple[Runner | None, dict | None, str]:
    """A backend set up and checked (where it has a check): its runner (None if it failed or
    raised), its errors against the reference, and a note."""
    try:
        runner = kind.backends[name](case)
        errors = runner.check() if runner.check else None
    except Exception as error:  # one backend's failure must not lose the others' results
        return None, None, error_note(error)
    notes = [runner.note]
    if errors is not None:
        worst = max(errors.values(), key=lambda e: (math.isnan(e), e))
        tolerance = kind.tolerance(case.size, case.dtype)
        if not worst <= tolerance:
            return None, errors, f"FAILED: error {worst:.1e} > {tolerance:.0e}"
        notes.append(f"error {worst:.0e}")
    return runner, errors, ", ".join(filter(None, notes))


def timed_step(runner: Runner, mode: str) -> Callable[[], object] | None:
    """What is timed of a backend in a mode: its forward under no_grad, or its training step."""
    if mode == "fwd":
        return torch.no_grad()(runner.forward) if runner.forward else None
    return runner.train


def run_case(
    kind: Kind, case, backends: list[str], settings: Settings, progress: Progress
) -> list[Result]:
    """Every backend checked, then all of them timed together in every mode they have
    (interleaved, see measure); a result per backend and mode."""
    label = f"{case.size} {dtype_name(case.dtype)}"
    prepared = {}  # name -> (runner, errors, note)
    for name in backends:
        progress.show(f"{label} {name}")
        prepared[name] = prepare(kind, name, case)
        progress.advance()
    progress.show(f"{label}: timing")
    steps = {
        (name, mode): step
        for name, (runner, _, _) in prepared.items() if runner
        for mode in MODES if (step := timed_step(runner, mode))
    }
    timed = measure(list(steps.values()), settings.device, settings.warmup, settings.repeats,
                    settings.budget, graphs=settings.graphs, calls=settings.calls)
    samples = dict(zip(steps, timed))
    results = []
    for mode in MODES:  # grouped by mode for the report, backends in their order
        for name, (runner, errors, note) in prepared.items():
            if runner and (name, mode) not in steps:
                continue  # a backend without this mode
            taken, extra = samples.get((name, mode), []), {}
            if runner is None:
                status = "FAILED" if note.startswith("FAILED") else "ERROR"
            elif isinstance(taken, Exception):
                status, note, taken = "ERROR", error_note(taken), []
            else:
                status = "ok"
                try:
                    step = steps[name, mode]
                    extra = {title: how(step, settings.device) for title, how in kind.extras.items()}
                except Exception as error:
                    status, note, taken = "ERROR", error_note(error), []
            results.append(Result(kind, case.size, case.dtype, name, mode, status, taken, errors, note,
                                  runner.compile_s if runner else None, extra))
    return results


class Progress:
    """Progress on stderr: a one-line bar redrawn in a terminal; in a log, a line per stage."""

    def __init__(self, total: int, stream=None):
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.redraw = self.stream.isatty()
        self.start = time.perf_counter()

    def show(self, label: str) -> None:
        if self.redraw:
            filled = 30 * self.done // self.total
            line = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {label}"
            print(f"\r{line:<79}", end="", file=self.stream, flush=True)
        else:
            elapsed = time.perf_counter() - self.start
            print(f"[{elapsed:6.1f} s] {self.done}/{self.total} {label}", file=self.stream, flush=True)

    def advance(self) -> None:
        self.done += 1

    def close(self) -> None:
        self.show("done")
        if self.redraw:
            print(file=self.stream, flush=True)


def products_in_float32(device: torch.device) -> tuple[str, ...]:
    """The half types whose products lltm_jit runs in float32 on `device`: on a CPU without their
    dot products (build_info()["cpu_products"])."""
    if device.type != "cpu":
        return ()
    import lltm_jit  # here: bench.py --help builds nothing

    products = lltm_jit.build_info().get("cpu_products", {})
    return tuple(name for name in ("bfloat16", "float16") if products.get(name) == "float")


def run(plans: list[Plan], settings: Settings) -> tuple[Machine, list[Result]]:
    """The machine's peaks, every plan's cases, checked and timed, and the peaks again (the best of
    both counts); progress on stderr."""
    dtypes = list(dict.fromkeys(d for plan in plans for d in plan.dtypes))
    progress = Progress(2 + sum(len(p.sizes) * len(p.dtypes) * len(p.backends) for p in plans))
    progress.show("measuring copy bandwidth and matmul peak")
    in_float32 = products_in_float32(settings.device)
    machine = measure_machine(settings.device, dtypes, in_float32)
    progress.advance()
    results = []
    for plan in plans:
        for size in plan.sizes:
            for dtype in plan.dtypes:
                try:
                    case = plan.kind.make_case(size, dtype, settings.device)
                except Exception as error:  # out of memory, say: its rows say so, the other cases run
                    results += [Result(plan.kind, size, dtype, name, mode, "ERROR", [], None, error_note(error), None)
                                for mode in MODES for name in plan.backends]
                    for _ in plan.backends:
                        progress.advance()
                    continue
                with plan.kind.context(size) if plan.kind.context else contextlib.nullcontext():
                    results += run_case(plan.kind, case, plan.backends, settings, progress)
    progress.show("measuring copy bandwidth and matmul peak again")
    machine = machine.best(measure_machine(settings.device, dtypes, in_float32))
    progress.advance()
    progress.close()
    return machine, results
