"""The C++ side, built with CMake (tests/cpp, which adds examples/cpp) and run as programs with no
Python: training steps on the C++ API against the same steps in Python, an AOTInductor package
run by libtorch against eager PyTorch, and the C++ API's errors against Python's."""

import math
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import make_inputs
from test_errors import CASES as STEP_CASES

import lltm_jit
from lltm_jit.jit import env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
DTYPES = ["float32", "bfloat16"]


def cmake() -> str | None:
    """cmake on PATH, else the one of the `cmake` package beside this Python (the test extra's)."""
    beside = Path(sys.executable).parent / "cmake"
    return shutil.which("cmake") or (str(beside) if beside.exists() else None)


def run(command, **kwargs) -> str:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{shlex.join(map(str, command))}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> tuple[Path, Path]:
    """The folders of the built programs: train_sequence and run_package (examples/cpp), api_errors."""
    if cmake() is None:
        pytest.skip("needs cmake (`pip install cmake`; the test extra installs it)")
    build = tmp_path_factory.mktemp("cpp-build")
    # The command a user runs: it names the library this session loaded, and libtorch.
    definitions = run([sys.executable, "-m", "lltm_jit", "build", "--cmake"]).strip()
    assert f"-DLLTM_JIT_LIBRARY={lltm_jit.build_info()['library']}" in definitions
    run([cmake(), "-S", REPO / "tests" / "cpp", "-B", build, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={env.ninja_path()}",
         *shlex.split(definitions)])
    run([cmake(), "--build", build])
    return build / "examples", build


def program(programs, name) -> Path:
    path = next(folder / name for folder in programs if (folder / name).exists())
    # Nothing of Python's is linked: the programs run on libtorch and the library alone.
    assert "libpython" not in run(["ldd", path])
    return path


def test_library_finds_its_dependencies_by_itself():
    """A program that links the library needs no LD_LIBRARY_PATH: torch's libraries (libc10_cuda
    among them, which no libtorch program names) resolve from the library's own run path."""
    library = lltm_jit.build_info()["library"]
    resolved = run(["ldd", library], env=without_python_env())
    assert "not found" not in resolved, resolved
    assert "libc10.so" in resolved and (not torch.cuda.is_available() or "libc10_cuda.so" in resolved)


def without_python_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


# ---------------------------------------------------------------------------------------------
# train_sequence.cpp against the same steps in Python

def python_losses(device, steps):
    """train_sequence.cpp's steps in Python: the same draws from the same seed, the same model."""
    torch.manual_seed(0)
    time, batch, features, state, layers = 12, 6, 4, 16, 2
    x = torch.randn(time, batch, features)
    target = x[:, :, 0].cumsum(0).tanh().unsqueeze(2)
    lengths = torch.tensor([12, 9, 5, 12, 1, 7])
    mask = (torch.arange(time)[:, None] < lengths[None]).float()
    bound = 1 / math.sqrt(state)

    def parameter(*shape):
        return torch.empty(shape).uniform_(-bound, bound).to(device).requires_grad_()

    parameters = []
    for layer in range(layers):
        parameters += [parameter(3 * state, state + (features if layer == 0 else state)), parameter(3 * state)]
    head_weight, head_bias = parameter(1, state), parameter(1)
    optimizer = torch.optim.Adam([*parameters, head_weight, head_bias], lr=1e-2)
    input, wanted, valid = x.to(device), target.to(device), mask.to(device)

    def loss_of():
        h = input
        for layer in range(layers):
            h = lltm_jit.lltm_sequence(h, parameters[2 * layer], parameters[2 * layer + 1], lengths=lengths)[0]
        error = (h @ head_weight.t() + head_bias - wanted).squeeze(2)
        return (error.pow(2) * valid).sum() / valid.sum()

    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of()
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses + [loss_of().item()]


def test_training_on_the_cpp_api_matches_python(programs, device):
    stdout = run([program(programs, "train_sequence"), device, "5"], env=without_python_env())
    losses = [float(row.split()[-1]) for row in stdout.splitlines()]
    expected = python_losses(device, 5)
    assert len(losses) == len(expected) == 6
    assert losses[-1] < 0.8 * losses[0]  # it learns: the gradients reach every parameter
    for ours, theirs in zip(losses, expected):
        assert ours == pytest.approx(theirs, rel=1e-4)


# ---------------------------------------------------------------------------------------------
# run_package.cpp on export_model.py's package

@pytest.mark.parametrize("dtype", DTYPES)
def test_aoti_package_runs_in_cpp_and_matches_eager(programs, device, dtype, tmp_path):
    run([sys.executable, REPO / "examples" / "cpp" / "export_model.py", "--out", tmp_path, "--device", device,
         "--dtype", dtype])
    stdout = run([program(programs, "run_package"), tmp_path / "model.pt2", tmp_path / "data.pt"],
                 env=without_python_env())
    assert f"outputs match eager (on {device})" in stdout
    assert stdout.count("relative error") == 3


# ---------------------------------------------------------------------------------------------
# api_errors.cpp: the C++ API's errors are Python's

B, T, F, S = 4, 3, 6, 5


def sequence_case(index, value):
    """[input, weights, bias, h0, c0, lengths] for lltm_sequence with argument `index` replaced."""
    gen = torch.Generator().manual_seed(0)
    args = [torch.randn(shape, generator=gen, dtype=torch.float64)
            for shape in ((T, B, F), (3 * S, S + F), (3 * S,), (B, S), (B, S))] + [torch.tensor([3, 0, 2, 1])]
    args[index] = value
    return args


def error_cases():
    """name -> (op, arguments); every step case of test_errors.py, sequence ones, and good calls."""
    double = {"dtype": torch.float64}
    cases = {f"lltm {name}": ("lltm", args) for name, (args, _) in STEP_CASES.items()}
    cases.update({
        "lltm good": ("lltm", make_inputs(B, F, S, requires_grad=False)),
        "lltm input undefined": ("lltm", [None, *make_inputs(B, F, S, requires_grad=False)[1:]]),
        "lltm old_cell undefined": ("lltm", [*make_inputs(B, F, S, requires_grad=False)[:4], None]),
        "sequence good": ("lltm_sequence", sequence_case(0, torch.randn(T, B, F, **double))),
        "sequence good, no state or lengths": ("lltm_sequence", sequence_case(3, None)[:3] + [None, None, None]),
        "sequence input rank": ("lltm_sequence", sequence_case(0, torch.randn(B, F, **double))),
        "sequence input undefined": ("lltm_sequence", sequence_case(0, None)),
        "sequence weights features": ("lltm_sequence", sequence_case(1, torch.randn(3 * S, S + F + 1, **double))),
        "sequence bias size": ("lltm_sequence", sequence_case(2, torch.randn(3 * S + 3, **double))),
        "sequence h0 batch": ("lltm_sequence", sequence_case(3, torch.randn(B + 1, S, **double))),
        "sequence c0 state": ("lltm_sequence", sequence_case(4, torch.randn(B, S + 1, **double))),
        "sequence c0 dtype": ("lltm_sequence", sequence_case(4, torch.randn(B, S))),
        "sequence lengths dtype": ("lltm_sequence", sequence_case(5, torch.tensor([3, 0, 2, 1], dtype=torch.int32))),
        "sequence lengths batch": ("lltm_sequence", sequence_case(5, torch.tensor([3, 0, 2]))),
        "sequence lengths range": ("lltm_sequence", sequence_case(5, torch.tensor([3, 0, 4, 1]))),
        "sequence lengths negative": ("lltm_sequence", sequence_case(5, torch.tensor([3, -1, 2, 1]))),
        "sequence empty features": ("lltm_sequence", sequence_case(0, torch.randn(T, B, 0, **double))),
    })
    return cases


def python_error(op, args):
    """(error type as api_errors.cpp names it, message) of the Python entry point on args."""
    try:
        if op == "lltm":
            lltm_jit.lltm(*args)
        else:
            input, weights, bias, h0, c0, lengths = args
            state = None if h0 is None and c0 is None else (h0, c0)
            lltm_jit.lltm_sequence(input, weights, bias, state, lengths=lengths)
    except TypeError as error:  # a None where a Tensor must be: C++'s undefined tensor
        return "TypeError", str(error).replace("got None", "got an undefined one")
    except RuntimeError as error:
        return "Error", str(error)
    return "none", ""


def test_cpp_api_errors_are_pythons(programs, tmp_path):
    cases = error_cases()
    torch.save({"cases": [[name, op, args] for name, (op, args) in cases.items()]}, tmp_path / "cases.pt")
    stdout = run([program(programs, "api_errors"), tmp_path / "cases.pt"], env=without_python_env())
    got = {name: (kind, message) for name, kind, message in (row.split("\t") for row in stdout.splitlines())}
    assert list(got) == list(cases)
    for name, (op, args) in cases.items():
        assert got[name] == python_error(op, args), name
    assert sum(kind == "none" for kind, _ in got.values()) == 3  # the good calls, and only they, return
    assert sum(kind == "TypeError" for kind, _ in got.values()) == 3
