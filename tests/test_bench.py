"""The benchmark package behind bench.py: its statistics, its run over a kind of case, its report."""

import dataclasses
import io
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import bench
from benchmarks.cases import Kind, Plan, Progress, Runner, run
from benchmarks.report import summarize, table
from benchmarks.sequence import SEQUENCE, SequenceSize, floor_seconds, lltm_runner

ROOT = Path(__file__).resolve().parents[1]
from benchmarks.step import STEP, Size  # noqa: E402
from benchmarks.timing import MIN_ROUNDS, Machine, Settings, measure, percentiles  # noqa: E402


def test_percentiles_are_samples_a_tenth_from_either_end():
    # Two stalled samples in twenty: nearest ranks leave them out, as interpolation did not.
    samples = [1.0 + i / 100 for i in range(18)] + [50.0, 80.0]
    p10, median, p90 = percentiles(samples)
    assert (p10, p90) == (1.01, 1.17)
    assert median == pytest.approx(1.095)
    assert percentiles([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)


def test_measure_takes_enough_rounds_for_a_spread():
    calls = []
    [taken] = measure([lambda: calls.append(1)], torch.device("cpu"), warmup=2, repeats=100, budget=0.0, calls=3)
    assert len(taken) == MIN_ROUNDS
    assert len(calls) == 2 + 3 * MIN_ROUNDS


@dataclass(frozen=True)
class Square:
    n: int

    def __str__(self):
        return f"{self.n}x{self.n}"


def matmul_kind(extras=None):
    """A second kind of case, built from the registry alone: x @ w against a float64 reference."""

    class Case:
        def __init__(self, size, dtype, device):
            self.size, self.dtype = size, dtype
            self.x = torch.randn(size.n, size.n, dtype=dtype, device=device, requires_grad=True)
            self.w = torch.randn(size.n, size.n, dtype=dtype, device=device)

    def runner(op, case):
        def check():
            want = case.x.detach().double() @ case.w.double()
            return {"out": ((op(case.x, case.w).double() - want).norm() / want.norm()).item()}

        return Runner(lambda: op(case.x, case.w), lambda: op(case.x, case.w).sum().backward(), check=check)

    def eager(case):
        """torch.mm"""
        return runner(torch.mm, case)

    def wrong(case):
        """x @ w + 1: fails its check"""
        return runner(lambda x, w: x @ w + 1, case)

    def sequence_only(case):
        """no forward-only step"""
        return Runner(None, lambda: (case.x @ case.w).sum().backward())

    return Kind(
        name="matmul", make_case=Case, backends={"eager": eager, "wrong": wrong, "train_only": sequence_only},
        tolerances={torch.float32: 1e-5}, extras=extras or {},
    )


ENV = {
    "lltm_jit": "0", "lltm_jit_build": {"backend": "test"}, "torch": torch.__version__, "device": "cpu",
    "device_name": "cpu", "threads": 1, "load_average": (0.0,), "timing": "eager calls",
    "calls_per_sample": 2, "seed": 0,
}


def peak(step, device):
    return 12.5 if step() is None else None  # a value for the fwd+bwd rows (whose step returns None)


@pytest.fixture(scope="module")
def matmul_run():
    settings = Settings(torch.device("cpu"), warmup=1, repeats=MIN_ROUNDS, calls=2, budget=0.0)
    plan = Plan(matmul_kind({"peak MiB": peak}), sizes=[Square(8)], dtypes=[torch.float32],
                backends=["eager", "wrong", "train_only"])
    machine, results = run([plan], settings)
    return machine, results, summarize(results, machine)


def test_a_second_kind_runs_through_the_same_timing_and_report(matmul_run):
    machine, results, records = matmul_run
    statuses = {(r.backend, r.mode): r.status for r in results}
    assert statuses == {
        ("eager", "fwd"): "ok", ("wrong", "fwd"): "FAILED",
        ("eager", "fwd+bwd"): "ok", ("wrong", "fwd+bwd"): "FAILED", ("train_only", "fwd+bwd"): "ok",
    }
    eager = next(r for r in records if (r["backend"], r["mode"]) == ("eager", "fwd+bwd"))
    assert eager["repeats"] == MIN_ROUNDS and eager["eager_over_t"] == 1.0
    assert eager["size_label"] == "n" and eager["floor_us"] is None  # a kind without a floor
    lines = table([{**r, "extra": {}} for r in records], ENV, machine).splitlines()
    assert "8x8 float32 fwd+bwd" in lines
    assert lines[-1] == "NOT OK (seed 0): wrong 8x8 float32"
    assert not any("MiB" in line for line in lines)


def test_a_kind_extra_column_shows_where_measured(matmul_run):
    machine, _, records = matmul_run
    assert {r["backend"]: r["extra"] for r in records if r["mode"] == "fwd"}["eager"] == {"peak MiB": None}
    lines = table(records, ENV, machine).splitlines()
    header = next(line for line in lines if line.strip().startswith("backend"))
    # No peers and no floor in this kind: no peer/t or t/floor column.
    assert header.split() == ["backend", "us", "p10/p90", "eager/t", "peak", "MiB", "note"]
    train_rows = [line.split() for line in lines[lines.index("8x8 float32 fwd+bwd"):]]
    assert next(row for row in train_rows if row[:1] == ["eager"])[4] == "12.5"
    assert next(row for row in train_rows if row[:1] == ["wrong"])[4] == "-"


def test_a_time_under_the_floor_is_flagged(matmul_run):
    """A t/floor below 1 cannot be: the peaks were measured slow. The table says so, not "0.44"."""
    machine, _, records = matmul_run
    rows = [{**r, "extra": {}, "t_over_floor": ratio} for r, ratio in zip(records, [0.44, 1.5, None, None, None])]
    lines = table(rows, ENV, machine).splitlines()
    header = next(line for line in lines if line.strip().startswith("backend") and "t/floor" in line)
    cells = [line.split()[:5] for line in lines[lines.index(header) + 1:lines.index(header) + 3]]
    assert [row[0] for row in cells] == ["eager", "wrong"]
    assert "0.44!" in cells[0] and "1.50" in cells[1], cells
    assert any(line.startswith("!: t/floor below 1") for line in lines), lines


def test_machine_keeps_the_best_of_two_measurements():
    slow = Machine(copy_bytes_per_s=1.0, matmul_flops_per_s={"float32": 5.0, "bfloat16": 1.0})
    fast = Machine(copy_bytes_per_s=2.0, matmul_flops_per_s={"float32": 3.0, "bfloat16": 4.0})
    assert slow.best(fast) == Machine(2.0, {"float32": 5.0, "bfloat16": 4.0})


def sequence_with_wrong_backend():
    """The sequence kind plus a backend whose output is off by 1e-3 of its norm: its check must fail."""

    def wrong(case):
        """lltm_jit.lltm_sequence with output * (1 + 1e-3)"""
        from lltm_jit import lltm_sequence

        def sequence(x, state):
            output, final = lltm_sequence(x, case.module.weights_l0, case.module.bias_l0, state)
            return output * (1 + 1e-3), final

        return lltm_runner(case, sequence)

    return dataclasses.replace(SEQUENCE, backends={**SEQUENCE.backends, "wrong": wrong})


@pytest.fixture(scope="module")
def sequence_run():
    settings = Settings(torch.device("cpu"), warmup=1, repeats=MIN_ROUNDS, calls=1, budget=0.0)
    backends = ["eager", "lltm_jit", "loop", "lstm", "lltm_jit_step_kernels", "wrong"]
    plan = Plan(sequence_with_wrong_backend(), sizes=[SequenceSize(3, 5, 7, steps=4)], dtypes=[torch.float32],
                backends=backends)
    machine, results = run([plan], settings)
    return machine, results, summarize(results, machine)


def test_sequence_rows_are_checked_against_the_reference(sequence_run):
    _, results, _ = sequence_run
    by_row = {(r.backend, r.mode): r for r in results}
    for backend in ("eager", "lltm_jit", "loop"):
        for mode in ("fwd", "fwd+bwd"):
            assert by_row[backend, mode].status == "ok", by_row[backend, mode].note
        errors = by_row[backend, "fwd"].errors
        assert set(errors) == {"output", "h_n", "c_n", "d_input", "d_weights", "d_bias", "d_h0", "d_c0"}
        assert 0 < max(errors.values()) <= SEQUENCE.tolerances[torch.float32]
    assert by_row["lstm", "fwd+bwd"].status == "ok" and by_row["lstm", "fwd+bwd"].errors is None
    assert by_row["wrong", "fwd"].status == "FAILED"
    assert 1e-4 < by_row["wrong", "fwd"].errors["output"] < 1e-2
    step_kernels = by_row["lltm_jit_step_kernels", "fwd"]
    assert step_kernels.status == "ERROR" and "CUDA only" in step_kernels.note


def test_sequence_rows_show_their_time_over_cudnn_lstm(sequence_run):
    machine, _, records = sequence_run
    train = {r["backend"]: r for r in records if r["mode"] == "fwd+bwd"}
    ours, lstm = train["lltm_jit"], train["lstm"]
    assert ours["t_over_yardstick"] == pytest.approx(ours["median_us"] / lstm["median_us"])
    assert ours["extra"] == {"peak MiB": None}  # measured on CUDA only
    lines = table(records, ENV, machine).splitlines()
    assert "== sequence: one call = T steps over a batch from a zero state (fwd+bwd: loss = output.sum())" in lines
    start = next(i for i, line in enumerate(lines) if line.startswith("3x5x7 T=4 float32 fwd+bwd"))
    end = lines.index("", start)
    header, *rows = (line.split() for line in lines[start + 1:end])
    column = header.index("t/lstm")
    assert header[:column + 1] == ["backend", "us", "p10/p90", "eager/t", "t/floor", "t/lstm"]  # no peers
    row = next(row for row in rows if row[0] == "lltm_jit")
    assert float(row[column]) == pytest.approx(ours["t_over_yardstick"], rel=0.01, abs=0.006)


def test_sequence_floor_counts_the_products_of_all_steps():
    size = SequenceSize(batch=3, input_features=5, state_size=7, steps=4)
    # A machine of 1 FLOP/s and endless bandwidth: the floor is the FLOP count.
    machine = Machine(copy_bytes_per_s=math.inf, matmul_flops_per_s={"float32": 1.0})
    forward = 2 * 4 * 3 * (7 + 5) * 3 * 7
    assert floor_seconds(size, "fwd", torch.float32, machine) == (forward, "compute")
    assert floor_seconds(size, "fwd+bwd", torch.float32, machine) == (3 * forward, "compute")


def parse(monkeypatch, *argv):
    monkeypatch.setattr(sys, "argv", ["bench.py", "--device", "cpu", *argv])
    return bench.parse_args()


def plans(args):
    return [(plan.kind.name, plan.sizes, plan.dtypes, plan.backends) for plan in args.plans]


def test_bench_runs_both_kinds_by_default(monkeypatch):
    sequence_sizes = [SequenceSize(16, 32, 128, 64), SequenceSize(64, 256, 512, 64)]
    assert plans(parse(monkeypatch)) == [
        ("step", [Size(16, 32, 128), Size(64, 256, 256), Size(256, 512, 1024)], [torch.float32],
         ["eager", "lltm_jit", "compile", "lstmcell", "lstm"]),
        ("sequence", sequence_sizes, [torch.float32], ["eager", "lltm_jit", "loop", "lstm"]),
        ("sequence", sequence_sizes[:1], [torch.bfloat16], ["eager", "lltm_jit", "loop", "lstm"]),
    ]
    quick = plans(parse(monkeypatch, "--quick"))
    assert [(kind, sizes) for kind, sizes, _, _ in quick] == [
        ("step", [Size(16, 32, 128)]), ("sequence", [SequenceSize(16, 32, 128, 16)])
    ]


def test_bench_selects_a_kind_and_its_sizes(monkeypatch):
    args = parse(monkeypatch, "--kind", "sequence", "--steps", "8", "--sizes", "4x5x6", "--dtypes", "float64")
    assert plans(args) == [("sequence", [SequenceSize(4, 5, 6, 8)], [torch.float64],
                            ["eager", "lltm_jit", "loop", "lstm"])]
    assert [kind for kind, *_ in plans(parse(monkeypatch, "--kind", "step"))] == ["step"]
    # A kind runs the named backends it has; a kind with none of them does not run.
    assert plans(parse(monkeypatch, "--backends", "loop,lltm_jit", "--sizes", "4x5x6")) == [
        ("step", [Size(4, 5, 6)], [torch.float32], ["lltm_jit"]),
        ("sequence", [SequenceSize(4, 5, 6, 64)], [torch.float32], ["lltm_jit", "loop"]),
    ]
    assert [kind for kind, *_ in plans(parse(monkeypatch, "--backends", "gemm"))] == ["step"]


@pytest.mark.parametrize("argv", [["--kind", "step", "--backends", "loop"], ["--steps", "0"], ["--kind", "seq"]])
def test_bench_refuses_options_that_do_not_fit(monkeypatch, capsys, argv):
    with pytest.raises(SystemExit) as exit:
        parse(monkeypatch, *argv)
    assert exit.value.code == 2 and "error" in capsys.readouterr().err


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty", [True, False])
def test_progress_redraws_only_in_a_terminal(tty):
    stream = Stream(tty)
    progress = Progress(2, stream)
    for label in ("first", "second"):
        progress.show(label)
        progress.advance()
    progress.close()
    text = stream.getvalue()
    if tty:
        assert text.count("\r") == 3 and text.count("\n") == 1
    else:
        assert "\r" not in text
        assert [line.split("] ", 1)[1] for line in text.splitlines()] == ["0/2 first", "1/2 second", "2/2 done"]


def test_bench_help_answers_without_building():
    code = (
        "import runpy, sys\n"
        "sys.argv = ['bench.py', '--help']\n"
        "try:\n    runpy.run_path('bench.py', run_name='__main__')\n"
        "except SystemExit as exit:\n    assert exit.code == 0\n"
        "print('imported lltm_jit:', 'lltm_jit' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "  lltm_jit  lltm_jit.LLTM\n" in done.stdout
    assert done.stdout.rstrip().endswith("imported lltm_jit: False")
    assert "`" not in done.stdout  # plain text, no markup from the docstrings


def test_command_line_help_is_plain_text():
    done = subprocess.run([sys.executable, "-m", "lltm_jit", "--help"], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    assert done.stdout.startswith("usage: python -m lltm_jit") and "`" not in done.stdout, done.stdout


@pytest.mark.slow
def test_bench_quick_checks_pass_and_writes_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench.py"), "--quick", "--no-save"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("all checks passed")
    assert "16x32x128 float32 fwd+bwd" in done.stdout and list(tmp_path.iterdir()) == []
    assert "16x32x128 T=16 float32 fwd+bwd" in done.stdout
