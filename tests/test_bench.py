"""The benchmark package behind bench.py: its statistics, its run over a kind of case, its report."""

import argparse
import dataclasses
import io
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import bench
from benchmarks.ab import summary
from benchmarks.cases import Kind, Plan, Progress, Runner, run
from benchmarks.report import plot, summarize, table
from benchmarks.sequence import (SEQUENCE, SequenceSize, floor_seconds, lltm_jit_runner, lltm_runner,
                                 packed_lengths, padded)

ROOT = Path(__file__).resolve().parents[1]
from benchmarks.step import Size  # noqa: E402
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
        tolerance=lambda size, dtype: 1e-5, extras=extras or {},
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


def test_a_case_that_cannot_be_made_is_an_error_row_and_the_others_run():
    """A size that cannot be allocated (here a negative one) costs its own rows, not the run."""
    settings = Settings(torch.device("cpu"), warmup=1, repeats=MIN_ROUNDS, calls=2, budget=0.0)
    plan = Plan(matmul_kind(), sizes=[Square(-1), Square(8)], dtypes=[torch.float32], backends=["eager", "train_only"])
    _, results = run([plan], settings)
    by_size = {str(size): [r for r in results if r.size == size] for size in plan.sizes}
    assert {(r.status, r.note.split(":")[0]) for r in by_size["-1x-1"]} == {("ERROR", "ERROR RuntimeError")}
    assert len(by_size["-1x-1"]) == 4  # each backend in each mode, as a backend that raises
    assert {r.status for r in by_size["8x8"]} == {"ok"}


def test_saved_results_are_strict_json(matmul_run, tmp_path):
    """A check's error of a NaN result, or an unbounded budget, is written as a string: strict
    JSON (and so most readers other than Python's) has no NaN or Infinity."""
    import json

    machine, _, records = matmul_run
    records = [{**r, "errors": {"out": math.nan}} for r in records]
    settings = Settings(torch.device("cpu"), warmup=1, repeats=2, calls=1, budget=math.inf)
    bench.save(records, {**ENV, "budget_s": math.inf}, machine, settings, tmp_path, with_plot=False)

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    [path] = tmp_path.glob("*.json")
    document = json.loads(path.read_text(), parse_constant=refuse)
    assert document["environment"]["budget_s"] == "inf"
    assert document["results"][0]["errors"] == {"out": "nan"}


def test_a_dtype_without_a_measured_peak_has_no_floor():
    """float16 products on a CPU (torch.mm has no fast path for them) are not measured, and their
    rows show no floor rather than one far below what the kernels do."""
    from benchmarks.timing import measure_machine

    assert "float16" not in measure_machine(torch.device("cpu"), [torch.float16]).matmul_flops_per_s
    assert Machine(1e9, {"float32": 1e9}).floor(1e6, 1e3, torch.float16) == (None, None)


def test_half_types_run_in_float32_take_its_peak():
    """Where lltm_jit runs a half type's products in float32 (a CPU without its dot products), its
    floor takes float32's peak, and its own torch.mm (~1 GFLOP/s there, seconds a sample) is not
    measured."""
    from benchmarks.timing import measure_machine

    machine = measure_machine(torch.device("cpu"), [torch.bfloat16], ("bfloat16", "float16"))
    assert list(machine.matmul_flops_per_s) == ["float32"] and machine.in_float32 == ("bfloat16",)
    fast = Machine(1.0, {"float32": 4.0, "bfloat16": 1.0}, ("bfloat16",))
    assert fast.floor(8.0, 1.0, torch.bfloat16) == (2.0, "compute")
    assert fast.best(fast).in_float32 == ("bfloat16",)


def test_machine_keeps_the_best_of_two_measurements():
    slow = Machine(copy_bytes_per_s=1.0, matmul_flops_per_s={"float32": 5.0, "bfloat16": 1.0})
    fast = Machine(copy_bytes_per_s=2.0, matmul_flops_per_s={"float32": 3.0, "bfloat16": 4.0})
    assert slow.best(fast) == Machine(2.0, {"float32": 5.0, "bfloat16": 4.0})


def sequence_with_wrong_backend(off=1e-3):
    """The sequence kind plus backends whose output is off by `off` of its norm: always ("wrong"),
    from a zero state only (None, as the rows are timed), under no_grad only (the fwd rows): their
    checks must fail."""

    def wrong_where(when):
        def setup(case):
            def sequence(x, state):
                output, final = case.module(x, state)
                return padded(output) * (1 + off if when(state) else 1), final

            return lltm_runner(case, sequence)

        return setup

    wrong = {"wrong": wrong_where(lambda state: True),
             "wrong_from_zeros": wrong_where(lambda state: state is None),
             "wrong_without_grad": wrong_where(lambda state: not torch.is_grad_enabled())}
    return dataclasses.replace(SEQUENCE, backends={**SEQUENCE.backends, **wrong})


@pytest.fixture(scope="module")
def sequence_run():
    settings = Settings(torch.device("cpu"), warmup=1, repeats=MIN_ROUNDS, calls=1, budget=0.0)
    backends = ["eager", "lltm_jit", "loop", "lstm", "lltm_jit_step_kernels", "wrong", "wrong_from_zeros",
                "wrong_without_grad"]
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
        checked = ("output", "h_n", "c_n", "d_input", "d_weights_l0", "d_bias_l0")
        assert set(errors) == {*checked, "d_h0", "d_c0", *(f"{name} (zero state)" for name in checked),
                               *(f"{name} (no_grad)" for name in checked[:3])}
        assert 0 < max(errors.values()) <= SEQUENCE.tolerance(SequenceSize(3, 5, 7, 4), torch.float32)
    assert by_row["lstm", "fwd+bwd"].status == "ok" and by_row["lstm", "fwd+bwd"].errors is None
    for name, wrong in [("wrong", "output"), ("wrong_from_zeros", "output (zero state)"),
                        ("wrong_without_grad", "output (no_grad)")]:
        assert by_row[name, "fwd"].status == "FAILED"
        assert 1e-4 < by_row[name, "fwd"].errors[wrong] < 1e-2
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


def test_sequence_floor_counts_every_layer_direction_and_packed_token():
    machine = Machine(copy_bytes_per_s=math.inf, matmul_flops_per_s={"float32": 1.0})

    def products(tokens, features):  # one direction of one layer, forward
        return 2 * tokens * (7 + features) * 3 * 7

    # Layer 1 reads both directions' outputs of layer 0: 2 * 7 features.
    layered = SequenceSize(3, 5, 7, steps=4, layers=2, bidirectional=True)
    assert floor_seconds(layered, "fwd", torch.float32, machine)[0] == 2 * products(12, 5) + 2 * products(12, 14)
    packed = SequenceSize(3, 5, 7, steps=8, packed=True)  # lengths 8, 5 and 2: 15 tokens, not 24
    assert floor_seconds(packed, "fwd+bwd", torch.float32, machine)[0] == 3 * products(15, 5)
    # The machine's float32 peak is measured with TF32 off: no bound on products in TF32.
    tf32 = SequenceSize(3, 5, 7, steps=4, tf32=True)
    assert floor_seconds(tf32, "fwd", torch.float32, machine) == (None, None)
    assert floor_seconds(tf32, "fwd", torch.bfloat16, Machine(math.inf, {"bfloat16": 1.0}))[0] == products(12, 5)


def test_packed_lengths_spread_from_all_steps_to_a_quarter_unsorted():
    size = SequenceSize(64, 256, 512, steps=128, packed=True)
    lengths = packed_lengths(size)
    assert lengths.dtype == torch.int64 and lengths.shape == (64,)
    assert (lengths.min(), lengths.max()) == (32, 128)
    assert not torch.equal(lengths, lengths.sort(descending=True).values)  # nn.LSTM's enforce_sorted=False
    assert torch.equal(lengths, packed_lengths(size))  # the same batch in every run
    assert packed_lengths(SequenceSize(1, 5, 7, steps=3, packed=True)).tolist() == [3]


@pytest.mark.parametrize("spec, size, text", [
    ("16x32x128", SequenceSize(16, 32, 128, 64), "16x32x128 T=64"),
    ("256x512x1024:tf32", SequenceSize(256, 512, 1024, 64, tf32=True), "256x512x1024 T=64 tf32"),
    ("64x256x512:T128:packed", SequenceSize(64, 256, 512, 128, packed=True), "64x256x512 T=128 packed"),
    ("64x256x512:T128:L2:bi", SequenceSize(64, 256, 512, 128, layers=2, bidirectional=True),
     "64x256x512 T=128 L=2 bi"),
    (" 3x5x7:packed:bi:L3:tf32:T4", SequenceSize(3, 5, 7, 4, layers=3, bidirectional=True, packed=True, tf32=True),
     "3x5x7 T=4 L=3 bi packed tf32"),
])
def test_sequence_size_spec_parses_and_prints(spec, size, text):
    assert SequenceSize.parse(spec, steps=64) == size
    assert str(size) == text


@pytest.mark.parametrize("spec, problem", [
    ("3x5x7:T0", "unknown suffix 'T0'"), ("3x5x7:L", "unknown suffix 'L'"), ("3x5x7:fwd", "unknown suffix 'fwd'"),
    ("3x5x7:", "unknown suffix ''"), ("3x5x7:bi:L2:bi", "'bi' twice"), ("3x5x7:T4:T8", "'T8' twice"),
])
def test_a_malformed_sequence_size_is_refused(spec, problem):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        SequenceSize.parse(spec, steps=64)
    assert str(refused.value).startswith(f"size {spec!r}: {problem}; expected BxFxS, then any of :T<steps>")


def sequence_with_spy_backend(seen: list):
    """The sequence kind plus `wrong`, `ignores_lengths`, and `spy`, lltm_jit whose calls record in `seen` what torch
    runs them with: (what called, grad mode, TF32 in cuBLAS, TF32 in cuDNN, the size)."""

    def spy(case):
        """lltm_jit.LLTMSequence, watched"""
        runner = lltm_jit_runner(case)

        def watched(what, fn):
            def call():
                flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
                seen.append((what, torch.is_grad_enabled(), *flags, case.size))
                return fn()

            return call

        return Runner(watched("fwd", runner.forward), watched("fwd+bwd", runner.train),
                      check=watched("check", runner.check))

    def ignores_lengths(case):
        """lltm_jit.LLTMSequence on the padded input, as if every sequence ran all the steps"""
        return lltm_runner(case, lambda x, state: case.module(padded(x), state))

    kind = sequence_with_wrong_backend(off=0.1)  # beyond TF32's tolerance too
    return dataclasses.replace(kind, backends={**kind.backends, "spy": spy, "ignores_lengths": ignores_lengths})


VARIANTS = ["3x5x7:T4:tf32", "3x5x7:T6:packed", "3x5x7:T4:L2:bi", "3x5x7:T6:L2:bi:packed"]


@pytest.fixture(scope="module")
def variants_run():
    settings = Settings(torch.device("cpu"), warmup=1, repeats=MIN_ROUNDS, calls=1, budget=0.0)
    seen = []
    plan = Plan(sequence_with_spy_backend(seen), sizes=[SequenceSize.parse(v, steps=64) for v in VARIANTS],
                dtypes=[torch.float32], backends=["lltm_jit", "lstm", "wrong", "ignores_lengths", "spy"])
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    # As bench.py sets them: TF32 off but where a size allows it.
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        machine, results = run([plan], settings)
        after = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    return machine, results, summarize(results, machine), seen, after


@pytest.mark.parametrize("variant", VARIANTS)
def test_sequence_variants_are_checked_against_the_reference(variants_run, variant):
    _, results, _, _, _ = variants_run
    size = SequenceSize.parse(variant, steps=64)
    by_row = {(r.backend, r.mode): r for r in results if r.size == size}
    assert {mode for _, mode in by_row} == {"fwd", "fwd+bwd"}
    for backend in ("lltm_jit", "spy", "lstm"):
        for mode in ("fwd", "fwd+bwd"):
            assert by_row[backend, mode].status == "ok", by_row[backend, mode].note
    errors = by_row["lltm_jit", "fwd"].errors
    directions = ("", "_reverse")[:size.directions]
    parameters = {f"d_{kind}_l{layer}{suffix}" for kind in ("weights", "bias") for layer in range(size.layers)
                  for suffix in directions}
    checked = ("output", "h_n", "c_n", "d_input", *parameters)
    assert set(errors) == {*checked, "d_h0", "d_c0", *(f"{name} (zero state)" for name in checked),
                           *(f"{name} (no_grad)" for name in checked[:3])}
    assert 0 < max(errors.values()) <= SEQUENCE.tolerance(size, torch.float32)
    assert by_row["wrong", "fwd"].status == "FAILED"
    # Unpacked, every sequence runs all the steps: its output past a length and its h_n are wrong.
    assert by_row["ignores_lengths", "fwd"].status == ("FAILED" if size.packed else "ok")


@pytest.mark.parametrize("variant", VARIANTS)
def test_sequence_variants_show_both_modes_against_nn_lstm(variants_run, variant):
    machine, _, records, _, _ = variants_run
    size = str(SequenceSize.parse(variant, steps=64))
    lines = table(records, ENV, machine).splitlines()
    for mode in ("fwd", "fwd+bwd"):
        ours = next(r for r in records if (r["size"], r["mode"], r["backend"]) == (size, mode, "lltm_jit"))
        lstm = next(r for r in records if (r["size"], r["mode"], r["backend"]) == (size, mode, "lstm"))
        assert ours["t_over_yardstick"] == pytest.approx(ours["median_us"] / lstm["median_us"])
        start = next(i for i, line in enumerate(lines) if line.partition(":")[0] == f"{size} float32 {mode}")
        header, row = lines[start + 1].split(), lines[start + 2].split()
        assert row[0] == "lltm_jit"
        # A TF32 row has no floor (floor_seconds says why).
        assert ("t/floor" in header) == (": floor" in lines[start]) == ("tf32" not in variant)
        assert float(row[header.index("t/lstm")]) == pytest.approx(ours["t_over_yardstick"], rel=0.01, abs=0.006)


def test_no_plot_without_eager(variants_run, tmp_path, capsys):
    *_, records, _, _ = variants_run
    assert not plot(records, tmp_path / "speedups.png", "title") and not list(tmp_path.iterdir())
    assert capsys.readouterr().out == "no plot: it shows speedups over eager, which did not run\n"


def test_tf32_is_allowed_only_while_its_row_runs(variants_run):
    _, _, _, seen, after = variants_run
    # TF32 rounds float32's operands to float16's mantissa: its checks accept float16's error.
    tf32, full = SequenceSize(3, 5, 7, 4, tf32=True), SequenceSize(3, 5, 7, 4)
    assert SEQUENCE.tolerance(tf32, torch.float32) == SEQUENCE.tolerance(full, torch.float16) == 6e-2
    assert SEQUENCE.tolerance(full, torch.float32) == 1e-4
    for what in ("check", "fwd", "fwd+bwd"):
        calls = [call for call in seen if call[0] == what]
        assert {call[2:4] for call in calls if call[4].tf32} == {(True, True)}, what
        assert {call[2:4] for call in calls if not call[4].tf32} == {(False, False)}, what
    assert after == (False, False)


def test_forward_only_rows_run_without_grad(variants_run):
    _, _, _, seen, _ = variants_run
    assert {grad for what, grad, *_ in seen if what == "fwd"} == {False}
    assert {grad for what, grad, *_ in seen if what == "fwd+bwd"} == {True}


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
    # A sequence's suffixes: its own T in place of --steps.
    assert plans(parse(monkeypatch, "--kind", "sequence", "--steps", "8", "--sizes", "3x5x7:T4:packed,3x5x7:L2:bi",
                       "--backends", "lltm_jit")) == [
        ("sequence", [SequenceSize(3, 5, 7, 4, packed=True), SequenceSize(3, 5, 7, 8, layers=2, bidirectional=True)],
         [torch.float32], ["lltm_jit"]),
    ]


# Issue 21's tables, in their order; each case is timed forward only and forward + backward.
CUDNN_ROWS = [
    ("16x32x128 T=64", torch.float32), ("64x256x512 T=64", torch.bfloat16), ("256x512x1024 T=64", torch.float32),
    ("256x512x1024 T=64 tf32", torch.float32), ("256x512x1024 T=64", torch.bfloat16),
    ("1024x256x256 T=64", torch.bfloat16), ("64x256x512 T=128 packed", torch.bfloat16),
    ("64x256x512 T=128 L=2 bi", torch.float32),
    ("128x512x512 T=64", torch.float16), ("64x1024x1024 T=64", torch.float16), ("8x256x512 T=256", torch.float16),
]


# Issue 21's kinds at sizes its tables do not list: each kind of CUDNN_ROWS at least once.
CUDNN_OTHER_ROWS = [
    ("32x64x256 T=64", torch.float32), ("128x256x512 T=64", torch.bfloat16), ("32x128x384 T=64", torch.bfloat16),
    ("512x256x512 T=64", torch.float32), ("512x256x512 T=64 tf32", torch.float32),
    ("128x1024x1024 T=64 tf32", torch.float32), ("512x512x768 T=64", torch.bfloat16),
    ("128x1024x1024 T=64", torch.bfloat16), ("2048x128x256 T=64", torch.bfloat16),
    ("128x128x256 T=96 packed", torch.bfloat16), ("32x128x256 T=64 L=2 bi", torch.float32),
    ("128x256x384 T=64 L=3", torch.bfloat16), ("32x256x256 T=64", torch.float16), ("96x384x384 T=64", torch.float16),
    ("16x512x1024 T=128", torch.float16), ("8x128x256 T=256", torch.float16),
]


@pytest.mark.parametrize("plan, rows", [("cudnn", CUDNN_ROWS), ("cudnn-other", CUDNN_OTHER_ROWS)])
def test_the_cudnn_plans_run_the_issues_kinds_against_nn_lstm(plan, rows):
    # As parse_args leaves them for `bench.py --plan NAME` on a GPU (which this test need not have).
    args = argparse.Namespace(device=torch.device("cuda", 0), plan=plan, kind="all", steps=64, quick=False,
                              sizes=None, dtypes=None, backends=None)
    [kind] = bench.selected_kinds(args)
    plans = bench.plans_of(kind, args)
    assert [(str(size), dtype) for plan in plans for size in plan.sizes for dtype in plan.dtypes] == rows
    assert {(plan.kind.name, tuple(plan.backends)) for plan in plans} == {("sequence", ("lltm_jit", "lstm"))}


def bar_record(spec, dtype, ratio, floor=None, backend="lltm_jit", status="ok", mode="fwd+bwd"):
    """A record of summarize()'s with what issue21_bar reads."""
    size = SequenceSize.parse(spec, 64)
    return {"kind": "sequence", "backend": backend, "status": status, "size": str(size), "dtype": dtype, "mode": mode,
            "t_over_yardstick": ratio, "t_over_floor": floor, **dataclasses.asdict(size)}


def test_issue_21_bars():
    records = [
        bar_record("64x1024x1024", "float16", 0.74),  # cuDNN's persistent range: 0.75
        bar_record("64x1024x1024", "float16", 0.86, mode="fwd"),
        bar_record("256x256x256", "float16", 0.6),  # batch past 128: 0.5
        bar_record("96x384x384:L2", "float16", 0.6),  # two layers: 0.5
        bar_record("100x384x384", "float16", 0.6),  # a batch not a multiple of 8: 0.5
        bar_record("256x512x1024", "float32", 0.74, floor=1.10),  # near the FMA floor: met by it
        bar_record("256x512x1024", "float32", 0.74, floor=1.31),
        bar_record("16x32x128", "float32", 0.48, floor=65.0),  # met by the ratio
        bar_record("256x512x1024:tf32", "float32", 0.66),  # TF32: 0.5, no floor
        bar_record("256x512x1024", "bfloat16", 0.49, floor=3.7),
        bar_record("256x512x1024", "bfloat16", 1.0, backend="lstm"),  # not ours: no line
        bar_record("8x256x512:T256", "float16", None, status="error"),  # failed: no line
    ]
    text = bench.bars(records, bench.issue21_bar).splitlines()
    assert text[0] == "bars: 4 of 10 rows met"
    assert [line.split()[0] for line in text[1:]] == ["met", "OVER", "OVER", "OVER", "OVER", "met", "OVER", "met",
                                                      "OVER", "met"]
    assert text[1] == "  met   64x1024x1024 T=64 float16 fwd+bwd: 0.74 of nn.LSTM, bar 0.75"
    assert text[7].endswith("256x512x1024 T=64 float32 fwd+bwd: 0.74 of nn.LSTM, bar 0.5, or 1.31x its floor, bar 1.15")


def test_judge_meets_a_row_only_where_every_run_meets_it(tmp_path, monkeypatch, capsys):
    """--judge reads saved runs and meets a row only where every run that has it meets it, showing
    one run's own record of it: cuDNN's times move between processes, so one run's ratio alone can
    meet a bar that the next misses."""
    runs = [
        [bar_record("64x256x512:L2:bi", "float32", 0.44, floor=1.79),
         bar_record("16x32x128", "float32", 0.49, floor=65.0),
         bar_record("8x256x512:T256", "float16", 0.7),
         bar_record("256x512x1024", "float32", 0.45, floor=1.30),  # met by its ratio
         bar_record("64x256x512", "bfloat16", 0.3),  # in this run only
         bar_record("16x32x128", "float32", 1.0, backend="lstm")],  # not ours: no line
        [bar_record("64x256x512:L2:bi", "float32", 0.52, floor=1.81),
         bar_record("16x32x128", "float32", 0.45, floor=70.0),
         bar_record("8x256x512:T256", "float16", None),  # no nn.LSTM time in this run
         bar_record("256x512x1024", "float32", 0.60, floor=1.10),  # met by its floor
         bar_record("128x512x512", "float16", None, status="error")],  # failed: said; no run has it ok
    ]
    paths = []
    for i, results in enumerate(runs):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps({"environment": {"device_name": "GPU", "torch": "2.x", "date": f"day {i}",
                                                         "lltm_jit_build": {"key": "abc"}},
                                         "machine": {}, "results": results}))
    monkeypatch.setattr(sys, "argv", ["bench.py", "--judge", *map(str, paths)])
    assert bench.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [f"run {paths[0]}: GPU, torch 2.x, day 0, build abc",
                         f"run {paths[1]}: GPU, torch 2.x, day 1, build abc",
                         "  128x512x512 T=64 float16 fwd+bwd: error in this run",
                         "  64x256x512 T=64 bfloat16 fwd+bwd: in 1 of the 2 runs",
                         "bars: 3 of 5 rows met"]
    assert lines[5:] == [
        "  OVER  64x256x512 T=64 L=2 bi float32 fwd+bwd: 0.52 of nn.LSTM, bar 0.5, or 1.81x its floor, bar 1.15",
        "  met   16x32x128 T=64 float32 fwd+bwd: 0.49 of nn.LSTM, bar 0.5, or 65.00x its floor, bar 1.15",
        "  OVER  8x256x512 T=256 float16 fwd+bwd: no nn.LSTM time",
        "  met   256x512x1024 T=64 float32 fwd+bwd: 0.60 of nn.LSTM, bar 0.5, or 1.10x its floor, bar 1.15",
        "  met   64x256x512 T=64 bfloat16 fwd+bwd: 0.30 of nn.LSTM, bar 0.5"]
    (tmp_path / "other.json").write_text("[1, 2]")
    monkeypatch.setattr(sys, "argv", ["bench.py", "--judge", str(tmp_path / "other.json")])
    with pytest.raises(SystemExit, match=r"--judge .*other.json: not a run saved by bench.py"):
        bench.main()
    (tmp_path / "bare.json").write_text(json.dumps({"environment": {}, "results": [{"backend": "lltm_jit"}]}))
    monkeypatch.setattr(sys, "argv", ["bench.py", "--judge", str(tmp_path / "bare.json")])
    with pytest.raises(SystemExit, match=r"bare.json: not a run saved by bench.py \(no results, or records without"):
        bench.main()


@pytest.mark.parametrize("argv, error", [
    (["--kind", "step", "--backends", "loop"], "--backends loop: not a backend of --kind step"),
    (["--steps", "0"], "--steps must be at least 1"),
    (["--kind", "seq"], "argument --kind: invalid choice: 'seq'"),
    (["--kind", "sequence", "--sizes", "3x5x7:fwd"], "--sizes: size '3x5x7:fwd': unknown suffix 'fwd'; expected"),
    (["--sizes", "3x5x7:T4"], "--sizes: size '3x5x7:T4': expected BxFxS with positive integers, e.g. 16x32x128 "
                              "(a :suffix belongs to a sequence's size: --kind sequence)"),
    (["--plan", "cudnn"], "--plan cudnn runs on cuda only (its sizes are a GPU's), got device cpu"),
    (["--plan", "cudnn", "--sizes", "3x5x7", "--quick"], "--plan cudnn names its own sizes and dtypes: drop --sizes, "
                                                         "--quick"),
    (["--plan", "cudnn", "--kind", "step"], "--plan cudnn is of --kind sequence, got --kind step"),
    (["--sizes", ","], "argument --sizes: ',': expected at least one item"),
    (["--repeats", "0"], "--repeats must be at least 2 (for a spread)"),
    (["--budget", "-1"], "--warmup and --budget must not be negative"),
    (["--kind", "sequence", "--sizes", "3x5x7:tf32"], "--sizes: :tf32 is a CUDA setting"),
    (["--out", __file__], f"--out {__file__}: cannot write there"),
    (["--kind", "step", "--sizes", "3x5x7,3x5x7"], "--sizes, --dtypes: the step case 3x5x7 in float32 is given twice"),
    (["--kind", "sequence", "--sizes", "3x5x7:L2:bi,3x5x7:bi:L2"], "--sizes, --dtypes: the sequence case 3x5x7 T=64 "),
    (["--kind", "step", "--dtypes", "float64,float64"], "--sizes, --dtypes: the step case 16x32x128 in float64 is given twice"),
    (["--device", "foo"], "argument --device: 'foo': expected cpu, cuda or cuda:N"),
    (["--device", "cpu:1"], "--device cpu:1: expected cpu, cuda or cuda:N"),
    (["--judge", "run.json", "--plan", "cudnn", "--quick"], "--judge runs nothing: drop --device, --plan, --quick"),
    (["--budget", "nan"], "--warmup and --budget must not be negative (or, for --budget, nan)"),
    (["--kind", "sequence", "--backends", "lltm_jit_step_kernels"],
     "--backends lltm_jit_step_kernels: runs on CUDA only, got device cpu"),
])
def test_bench_refuses_options_that_do_not_fit(monkeypatch, capsys, argv, error):
    with pytest.raises(SystemExit) as exit:
        parse(monkeypatch, *argv)
    assert exit.value.code == 2 and f"error: {error}" in capsys.readouterr().err


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_the_verdict_says_what_was_checked():
    """The report's last line: failures first; lltm_jit rows of the reference fallback are not a
    pass; a run of peers alone checked nothing and says so."""
    from benchmarks.report import verdict

    def record(backend, status="ok", errors=None):
        return {"backend": backend, "status": status, "check_errors": errors, "size": "3x5x7", "dtype": "float32"}

    built, fallback = {"seed": 1, "lltm_jit_build": {"backend": "extension"}}, {"lltm_jit_build": {"backend": "reference"}}
    assert verdict([record("lltm_jit", errors={"output": 1e-7}), record("lstm")], built) == ("all checks passed", True)
    assert verdict([record("lstm"), record("lstmcell")], built) == (
        "no checks ran (the backends run have none: peers only)", True)
    assert verdict([record("lltm_jit", "FAILED", {"output": 1.0})], built) == (
        "NOT OK (seed 1): lltm_jit 3x5x7 float32", False)
    for backend in ("lltm_jit", "loop"):  # the loop over the step op runs the reference's step then
        line, ok = verdict([record(backend, errors={"output": 1e-7}), record("eager", errors={"output": 1e-7})],
                           fallback)
        assert not ok and line.startswith("NOT OK: lltm_jit ran the pure-PyTorch reference")


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
    assert "\nplans (--plan NAME):\n  cudnn: issue 21's two tables" in done.stdout
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


def test_ab_summary_sets_each_row_against_the_first():
    """benchmarks.ab's closing table: each label's medians of every round, and each label's least
    over the first label's ("-" where a label has no sample of a case)."""
    samples = {("main", "8x256x512:float16", "fwd"): [191.5, 189.9], ("new", "8x256x512:float16", "fwd"): [167.0, 170.2],
               ("main", "8x256x512:float16", "fwd+bwd"): [538.5, 496.2], ("new x=1", "8x256x512:float16", "fwd"): [200.0]}
    lines = summary(samples, ["main", "new", "new x=1"]).splitlines()
    assert lines[0].split() == ["size", "mode", "main", "new", "new", "x=1", "least", "/", "main"]
    assert lines[1].split() == ["8x256x512:float16", "fwd", "191.5", "189.9", "167.0", "170.2", "200.0", "0.879", "1.053"]
    assert lines[2].split() == ["8x256x512:float16", "fwd+bwd", "538.5", "496.2", "-", "-"]
