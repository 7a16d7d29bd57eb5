"""The report: one flat record per result, shown as a table, saved as JSON and plotted."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import platform
import shlex
import socket
import sys
import textwrap
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import torch

from .cases import MODES, Result
from .timing import Machine, Settings, dtype_name, percentiles


def us(seconds: float | None) -> float | None:
    return seconds * 1e6 if seconds is not None else None


def summarize(results: list[Result], machine: Machine) -> list[dict]:
    """One flat record per result with every derived number: what the table, JSON and plot show.

    Ratios compare medians: eager_over_t and peer_over_t are speedups (over eager, over the best
    peer that ran), t_over_floor and t_over_yardstick how far a time is from the floor / from the
    kind's yardstick backend.
    """
    medians = {
        (r.kind.name, r.size, r.dtype, r.mode, r.backend): percentiles(r.samples)[1]
        for r in results if r.samples
    }

    def ratio(a, b):
        return a / b if a is not None and b is not None else None

    records = []
    for r in results:
        key = (r.kind.name, r.size, r.dtype, r.mode)
        p10, median, p90 = percentiles(r.samples) if r.samples else (None, None, None)
        peers = {p: medians[(*key, p)] for p in r.kind.peers if (*key, p) in medians}
        best_peer = min(peers, key=peers.get, default=None)
        floor, bound = r.kind.floor(r.size, r.mode, r.dtype, machine) if r.kind.floor else (None, None)
        size_fields = dataclasses.asdict(r.size)
        yardstick = r.kind.yardstick
        records.append({
            "kind": r.kind.name, "call": r.kind.call, "size": str(r.size), **size_fields,
            "size_label": " x ".join(size_fields), "dtype": dtype_name(r.dtype), "mode": r.mode,
            "backend": r.backend, "status": r.status, "note": r.note,
            "median_us": us(median), "p10_us": us(p10), "p90_us": us(p90), "repeats": len(r.samples),
            "eager_over_t": ratio(medians.get((*key, "eager")), median),
            "best_peer": best_peer, "peer_over_t": ratio(peers.get(best_peer), median),
            "floor_us": us(floor), "floor_bound": bound,
            "t_over_floor": ratio(median, floor) if r.backend in r.kind.floor_backends else None,
            "yardstick": yardstick,
            "t_over_yardstick": ratio(median, medians.get((*key, yardstick))) if yardstick else None,
            "compile_s": r.compile_s, "check_errors": r.errors,
            "tolerance": r.kind.tolerance(r.size, r.dtype) if r.errors is not None else None,
            "extra": r.extra,
            "samples_us": [us(t) for t in r.samples],
        })
    return records


RATIOS = {"eager_over_t": "eager/t", "peer_over_t": "peer/t", "t_over_floor": "t/floor"}  # by column


def ratio_columns(group: list[dict]) -> dict[str, str]:
    """The ratio columns a group of rows has a value in (record key -> title), t/<yardstick> last."""
    titles = {**RATIOS, "t_over_yardstick": f"t/{group[0]['yardstick']}"}
    return {key: title for key, title in titles.items() if any(r[key] is not None for r in group)}


def below_floor(r: dict) -> bool:
    return r["t_over_floor"] is not None and r["t_over_floor"] < 1


def fmt_number(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def fmt_spread(r: dict) -> str:
    if r["median_us"] is None:
        return "-"
    low, high = (r[p] / r["median_us"] - 1 for p in ("p10_us", "p90_us"))
    return f"{low:+.0%}/{high:+.0%}"


def table(records: list[dict], env: dict, machine: Machine) -> str:
    """The report, within 100 columns: a section per kind, a group of rows per case and mode. A
    group shows the ratio columns it has a value in and the extra columns its records carry."""
    peaks = ", ".join(f"{d} {f / 1e9:.0f}" for d, f in machine.matmul_flops_per_s.items()) or "none measured"
    if machine.in_float32:
        peaks += f" ({'/'.join(machine.in_float32)} run in float32 here)"
    products = env["lltm_jit_build"].get("cpu_products")
    lines = [
        f"lltm_jit {env['lltm_jit']} ({env['lltm_jit_build']['backend']}), torch {env['torch']}, "
        f"on {env['device']}: {env['device_name']}, {env['threads']} threads, "
        f"load {env['load_average'][0]:.1f}, timing {env['timing']}",
        f"copy bandwidth {machine.copy_bytes_per_s / 1e9:.1f} GB/s; matmul peak GFLOP/s: {peaks}",
        *([f"CPU sequence products: float32 {products['float32']}, bfloat16 {products['bfloat16']}, "
           f"float16 {products.get('float16', '-')}"
           + ("" if products.get("amx", "available") == "available" else f" (AMX: {products['amx']})")]
          if products and env["device"] == "cpu" else []),
        *textwrap.wrap(
            f"us: median time per call, over samples that each are the mean of {env['calls_per_sample']} "
            "back-to-back calls; p10/p90: the 10th and 90th percentile samples, relative to the median: "
            "a tenth of the samples were faster than p10, a tenth slower than p90 (a p90 far above the "
            "median: other work on the machine stalled some samples); eager/t, peer/t: speedups over "
            "eager and over the best peer; t/floor: over max(FLOPs / peak, bytes / bandwidth); "
            "t/<backend>: over that backend's time (gemm: the products alone; lstm: nn.LSTM); error: "
            "the check's largest relative error against float64",
            width=96,
        ),
    ]
    name_width = max([9, *(len(r["backend"]) + 1 for r in records)])
    kind = None
    for (_, size, dtype, mode), group in groupby(records, key=itemgetter("kind", "size", "dtype", "mode")):
        group = list(group)
        first = group[0]
        if first["kind"] != kind:
            kind = first["kind"]
            lines += ["", f"== {kind}" + (f": one call = {first['call']}" if first["call"] else "")]
        ratios = ratio_columns(group)
        titles = list(dict.fromkeys(title for r in group for title in r["extra"]))
        row = f"  {{:<{name_width}}}{{:>10}}  {{:<13}}" + "{:>8}" * len(ratios)
        row += "".join(f"{{:>{max(8, len(title) + 1)}}}" for title in titles) + "  {}"
        peer = f", best peer {first['best_peer']}" if first["best_peer"] else ""
        floor = ""
        if first["floor_us"] is not None:
            floor = f": floor {fmt_number(first['floor_us'])} us ({first['floor_bound']}-bound)"
        lines += ["", f"{size} {dtype} {mode}{floor}{peer}"]
        lines.append(
            row.format("backend", "us", "p10/p90", *ratios.values(), *titles, "note")
        )
        for r in group:
            cells = (
                fmt_number(r["median_us"]), fmt_spread(r),
                *(fmt_ratio(r[k]) + ("!" if k == "t_over_floor" and below_floor(r) else "") for k in ratios),
                *(fmt_number(r["extra"].get(title)) for title in titles),
            )
            lines.append(row.format(r["backend"], *cells, r["note"])[:100].rstrip())
    if any(below_floor(r) for r in records):
        lines += ["", *textwrap.wrap(
            "!: t/floor below 1, faster than the floor: the floor is no bound there. Either the "
            "machine's peaks were measured slower than they are (other work on a shared machine while "
            "they were measured, before and after the cases: rerun on an idle machine), or the case's "
            "products outrun torch.mm's, whose best rate the matmul peak is (on a CPU, our own kernels "
            "can)", width=96)]
    lines += ["", verdict(records, env)[0]]
    return "\n".join(lines)


# The backends that call lltm_jit's operators (the step loop too): its fallback makes them the
# reference's.
OPERATOR_BACKENDS = ("lltm_jit", "lltm_jit_step_kernels", "loop")


def verdict(records: list[dict], env: dict) -> tuple[str, bool]:
    """The report's last line and whether the run is good: nothing failed, and lltm_jit's rows,
    if any, were its kernels (not the reference it falls back to when its build fails). A run of
    peers alone, which have no check, says that no check ran."""
    failed = sorted({f"{r['backend']} {r['size']} {r['dtype']}" for r in records if r["status"] != "ok"})
    if failed:
        return f"NOT OK (seed {env['seed']}): {'; '.join(failed)}", False
    if env["lltm_jit_build"]["backend"] == "reference" and any(r["backend"] in OPERATOR_BACKENDS for r in records):
        return ("NOT OK: lltm_jit ran the pure-PyTorch reference (its build failed, LLTM_JIT_FALLBACK=1): "
                "its rows checked and timed the reference, not the kernels"), False
    if not any(r["check_errors"] is not None for r in records):
        return "no checks ran (the backends run have none: peers only)", True
    return "all checks passed", True


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(settings: Settings, seed: int) -> dict:
    import lltm_jit  # loaded by now: the cases import it before they run

    device = settings.device
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
        "allow_tf32": {
            "cuda_matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32
        },
        "lltm_jit": lltm_jit.__version__,
        "lltm_jit_build": lltm_jit.build_info(),
        "command": shlex.join([sys.executable, *sys.argv]),
        "seed": seed,
        "warmup": settings.warmup,
        "repeats": settings.repeats,
        "calls_per_sample": settings.calls,
        "budget_s": settings.budget,
        "timing": "CUDA graph replays" if settings.graphs else "eager calls",
    }


def plot(records: list[dict], path: Path, title: str) -> bool:
    """Speedup over eager against size: a panel per kind, dtype and mode, a line per backend; no
    plot where eager did not run (as in `--plan cudnn`), since every panel would be empty."""
    if not any(r["eager_over_t"] for r in records):
        print("no plot: it shows speedups over eager, which did not run")
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install matplotlib)")
        return False
    panels = list(dict.fromkeys((r["kind"], r["dtype"], r["mode"]) for r in records))
    several_kinds = len({kind for kind, _, _ in panels}) > 1
    columns = len(MODES)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.8 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        kind, dtype, mode = panel
        rows_of_kind = [r for r in records if r["kind"] == kind]
        sizes = list(dict.fromkeys(r["size"] for r in rows_of_kind))
        backends = list(dict.fromkeys(r["backend"] for r in rows_of_kind if r["backend"] != "eager"))
        for backend in backends:
            points = [
                (sizes.index(r["size"]), r["eager_over_t"])
                for r in rows_of_kind
                if (r["dtype"], r["mode"], r["backend"]) == (dtype, mode, backend) and r["eager_over_t"]
            ]
            if points:
                ax.plot(*zip(*points), marker="o", label=backend)
        ax.axhline(1.0, color="grey", linestyle="--", label="eager")
        ax.set_ylim(bottom=0)
        ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
        ax.set_title(f"{kind}: {dtype}, {mode}" if several_kinds else f"{dtype}, {mode}")
        ax.set_xlabel(rows_of_kind[0]["size_label"])
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


def _strict(value):
    """`value` with each float that strict JSON has no number for (nan, inf: a check's error of a
    NaN result, an unbounded --budget) as its name, a string."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def save(records: list[dict], env: dict, machine: Machine, settings: Settings, out: Path,
         with_plot: bool = True) -> None:
    """<device>[-graphs]-<date>-<time>.json (every number and the environment) and .png in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    timing = "-graphs" if settings.graphs else ""
    stem = f"{settings.device.type}{timing}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    json_path = out / f"{stem}.json"
    document = {
        "environment": env,
        "machine": dataclasses.asdict(machine),
        "results": records,
    }
    json_path.write_text(json.dumps(_strict(document), indent=1, allow_nan=False) + "\n")
    print(f"saved {json_path}")
    png_path = out / f"{stem}.png"
    title = f"lltm_jit {env['lltm_jit']} on {env['device_name']}, torch {env['torch']}"
    if with_plot and plot(records, png_path, title):
        print(f"saved {png_path}")
