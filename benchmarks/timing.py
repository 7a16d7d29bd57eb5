"""Timing: samples of several steps taken in turns, CUDA graph capture, and the machine's peaks."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

# The fewest rounds that give a spread: with fewer samples, the 90th percentile sample is the
# slowest one, so a single sample stalled by other work on the machine would become the p90.
MIN_ROUNDS = 10


@dataclass(frozen=True)
class Settings:
    """How each step is timed; see `measure`."""

    device: torch.device
    warmup: int
    repeats: int
    calls: int
    budget: float
    graphs: bool = False


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


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
    graphs: bool = False, calls: int = 1, host: bool = False,
) -> list[list[float] | Exception]:
    """Seconds per call of each of `fns`, one sample per repeat, after `warmup` calls of each; or
    the exception a function raised (it is then dropped, the others go on).

    A sample is the mean over `calls` back-to-back calls, as a training loop makes them. The
    functions take turns, one sample each per round, so that a slow spell of the machine (a
    shared host, a clock change) falls on all of them alike and their ratios stay fair. Stops
    once `budget` seconds per function have passed, after at least MIN_ROUNDS rounds (or
    `repeats`, if fewer). On CUDA the samples come from CUDA events, each sample starting on an
    idle device: the device's time, which includes its idling while the host is still launching
    the kernels of a small step; with `graphs`, around replays of each function captured in a
    CUDA graph, which leaves that idling out; with `host`, the host's wall time instead of the
    device's (what launching the calls costs, when the device keeps up).
    """
    cuda = device.type == "cuda"
    events = cuda and not host
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
    samples = {i: [] for i in active}  # with events: (start, end) pairs, converted at the end
    enough = min(MIN_ROUNDS, repeats)
    deadline = time.perf_counter() + budget * len(active)
    rounds = 0
    while active and rounds < repeats and (rounds < enough or time.perf_counter() < deadline):
        for i, timed in list(active.items()):
            try:
                # Untimed: otherwise a sample starts behind the work another function left
                # queued (a device-bound one leaves milliseconds).
                synchronize(device)
                if events:
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                begin = time.perf_counter()
                for _ in range(calls):
                    timed()
                wall = time.perf_counter() - begin
                if events:
                    end.record()
                samples[i].append((start, end) if events else wall / calls)
            except Exception as error:
                results[i] = error
                del active[i], samples[i]
        rounds += 1
    synchronize(device)
    for i, taken in samples.items():
        results[i] = [start.elapsed_time(end) / 1e3 / calls for start, end in taken] if events else taken
    return results


def median_seconds(fns: list[Callable[[], object]], device: torch.device, **options) -> list[float]:
    """The median of each function's samples from `measure` (same options); raises what a
    function raised."""
    taken = measure(fns, device, **options)
    for samples in taken:
        if isinstance(samples, Exception):
            raise samples
    return [statistics.median(samples) for samples in taken]


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p10, median, p90); p10 and p90 are samples themselves (nearest rank): a tenth of the
    samples are faster than p10, a tenth slower than p90."""
    ordered = sorted(samples)

    def rank(tenths: int) -> float:  # the ceil(n * tenths / 10)-th smallest, in integers
        return ordered[max(-(-len(ordered) * tenths // 10), 1) - 1]

    return rank(1), statistics.median(ordered), rank(9)


@dataclass
class Machine:
    """What this device does at best, measured in this run."""

    copy_bytes_per_s: float  # bytes read + written per second by a large copy
    matmul_flops_per_s: dict[str, float]  # by dtype name: a large square matmul
    # dtype names whose products lltm_jit runs in float32 here (a CPU's half types where it lacks
    # their dot products): their floors take float32's peak
    in_float32: tuple[str, ...] = ()

    def floor(self, flops: float, bytes_moved: float, dtype: torch.dtype) -> tuple[float | None, str | None]:
        """The least time work of `flops` in matrix products of `dtype` and `bytes_moved` through
        memory can take here, and what bounds it ("compute" or "memory"); (None, None) for a dtype
        whose products were not measured."""
        name = "float32" if dtype_name(dtype) in self.in_float32 else dtype_name(dtype)
        if name not in self.matmul_flops_per_s:
            return None, None
        compute = flops / self.matmul_flops_per_s[name]
        memory = bytes_moved / self.copy_bytes_per_s
        return (compute, "compute") if compute >= memory else (memory, "memory")

    def best(self, other: Machine) -> Machine:
        """The faster of two measurements of each peak."""
        flops = {d: max(f, other.matmul_flops_per_s[d]) for d, f in self.matmul_flops_per_s.items()}
        return Machine(max(self.copy_bytes_per_s, other.copy_bytes_per_s), flops, self.in_float32)


def measure_machine(device: torch.device, dtypes: list[torch.dtype], in_float32: tuple[str, ...] = ()) -> Machine:
    """The fastest sample of each, not the median: a floor must not be above what is possible. The
    copy and the products take turns (as `measure` does), so that a busy spell of a shared machine
    slows one sample of each rather than every sample of one; `run` measures again after the cases
    and keeps the best of the two. The dtypes named in `in_float32` take float32's peak
    (Machine.in_float32): theirs is not measured."""
    cuda = device.type == "cuda"
    # torch.mm in float16 has no fast CPU path: ~1 GFLOP/s, tens of seconds to measure, and no
    # bound on a kernel of its own. Such rows show no floor, unless they run in float32.
    measured = [dtype for dtype in dtypes if dtype_name(dtype) not in in_float32 and (cuda or dtype != torch.float16)]
    in_float32 = tuple(name for name in in_float32 if name in map(dtype_name, dtypes))
    dtypes = list(dict.fromkeys([*measured, *([torch.float32] if in_float32 else [])]))
    src = torch.ones((1 << 30 if cuda else 1 << 28) // 4, device=device)  # 1 GiB; 256 MiB on a CPU
    dst = torch.empty_like(src)
    n = 8192 if cuda else 1024  # a GPU needs this much to reach its peak; a CPU takes ~50 ms at 1024
    operands = [tuple(torch.randn(n, n, device=device, dtype=dtype) for _ in range(3)) for dtype in dtypes]
    products = [lambda a=a, b=b, out=out: torch.mm(a, b, out=out) for a, b, out in operands]
    taken = measure([lambda: dst.copy_(src), *products], device, 2, 20, 1.0)
    copy_bytes_per_s = 2 * src.nbytes / min(taken[0])
    peaks = {dtype_name(dtype): 2 * n**3 / min(samples) for dtype, samples in zip(dtypes, taken[1:])}
    return Machine(copy_bytes_per_s, peaks, in_float32)
