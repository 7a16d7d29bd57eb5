"""Deployment: torch.export and AOTInductor of models with the cell and with a 2-layer
bidirectional sequence module with lengths, against eager, in float32 and bfloat16; and the
Python steps of docs/deployment.md."""

import functools
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import rel_err
from torch import nn
from torch.export import Dim

import lltm_jit

# The error of a compiled graph against eager: the kernels are the same, the head's product may
# be Inductor's rather than aten's.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2}
DTYPES = list(TOLERANCE)


class CellModel(nn.Module):
    """One step of the cell and a linear head: (x (batch, 8), h, c (batch, 16)) -> (y, h, c)."""

    def __init__(self):
        super().__init__()
        self.cell = lltm_jit.LLTM(8, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x, h, c):
        h, c = self.cell(x, (h, c))
        return self.head(h), h, c


def _example(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The model, LLTMSequence(8, 16, num_layers=2, bidirectional=True) and a linear head, as
# the C++ example exports it: (x (time, batch, 8), lengths (batch,)) -> (y (time, batch, 4), h_n, c_n).
SequenceModel = _example(Path(__file__).resolve().parent.parent / "examples" / "cpp" / "export_model.py").Tagger


def cell_inputs(batch, dtype, device, seed=0, time=None):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, n, generator=gen).to(device, dtype) for n in (8, 16, 16))


def sequence_inputs(batch, dtype, device, seed=0, time=6):
    """lengths on the CPU, as nn.utils.rnn keeps them; every length from 0 to time among them."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(time, batch, 8, generator=gen).to(device, dtype)
    lengths = torch.randint(0, time + 1, (batch,), generator=gen)
    lengths[0] = time
    return x, lengths


# (model, inputs, dynamic shapes: batch everywhere, and time for the sequence)
BATCH, TIME = Dim("batch", min=1, max=4096), Dim("time", min=1, max=4096)
MODELS = {
    "cell": (CellModel, cell_inputs, ({0: BATCH}, {0: BATCH}, {0: BATCH})),
    "sequence": (SequenceModel, sequence_inputs, ({0: TIME, 1: BATCH}, {0: BATCH})),
}


def trained_model(name, dtype, device):
    """The model in eval mode with parameters that require a gradient, as a trained one's do."""
    torch.manual_seed(0)
    model = MODELS[name][0]().to(device, dtype).eval()
    assert all(p.requires_grad for p in model.parameters())
    return model


def assert_matches_eager(model, run, inputs, dtype):
    with torch.no_grad():
        expected = model(*inputs)
    got = run(*inputs)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
        assert rel_err(a, b) <= TOLERANCE[dtype]


def export(model, inputs, dynamic, name):
    return torch.export.export(model, inputs, dynamic_shapes=MODELS[name][2] if dynamic else None)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", MODELS)
def test_export_matches_eager(device, name, dynamic, dtype):
    model, make = trained_model(name, dtype, device), MODELS[name][1]
    exported = export(model, make(3, dtype, device), dynamic, name)
    targets = {node.target for node in exported.graph.nodes}
    ops = [torch.ops.lltm_jit.forward.default] if name == "cell" else [torch.ops.lltm_jit.sequence_forward.default]
    assert set(ops) <= targets  # the operators themselves, not a decomposition
    assert_matches_eager(model, exported.module(), make(3, dtype, device), dtype)
    if dynamic:  # other sizes, batch 1 among them, run without a new export
        for batch, time in ((5, 9), (1, 2)):
            assert_matches_eager(model, exported.module(), make(batch, dtype, device, seed=1, time=time), dtype)


# A package of a plain model, loaded: lltm_jit plays no part.
PLAIN_PACKAGE = """
import sys, torch
model = torch.nn.Linear(4, 2).eval()
x = torch.randn(3, 4)
path = torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)), package_path=sys.argv[1])
assert torch.allclose(torch._inductor.aoti_load_package(path)(x), model(x))
"""


@functools.cache
def aoti_load_crash() -> str | None:
    """Why aoti_load_package crashes in this process whatever the model, or None. Seen with torch
    2.11 and GCC 13 (docs/deployment.md): the package's library binds parts of std::locale to the
    libstdc++ pieces that torch's libraries export. Where the compiler is an older GCC or
    libstdc++ is preloaded, nothing is probed; elsewhere a plain package is loaded in a child."""
    if "libstdc++" in os.environ.get("LD_PRELOAD", ""):
        return None
    compiler = torch._inductor.cpp_builder.get_cpp_compiler()
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    major = subprocess.run([compiler, "-dumpversion"], capture_output=True, text=True).stdout.split(".")[0]
    if "Free Software Foundation" in version and major.isdigit() and int(major) < 13:
        return None
    package = Path(os.environ.get("TMPDIR", "/tmp")) / f"lltm_jit-plain-{os.getpid()}.pt2"
    child = subprocess.run([sys.executable, "-c", PLAIN_PACKAGE, str(package)], capture_output=True, timeout=900)
    package.unlink(missing_ok=True)
    if child.returncode >= 0:
        return None
    return (f"torch {torch.__version__}'s aoti_load_package dies of signal {-child.returncode} here for a plain "
            f"nn.Linear package too ({version.splitlines()[0]}); run with "
            "LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6), as docs/deployment.md says")


@pytest.fixture
def aoti_loads():
    if reason := aoti_load_crash():
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", MODELS)
def test_aoti_package_matches_eager(device, name, dtype, tmp_path, aoti_loads):
    """aoti_compile_and_package of the dynamic-shape export, loaded with aoti_load_package, on
    sizes other than the export's."""
    model, make = trained_model(name, dtype, device), MODELS[name][1]
    exported = export(model, make(3, dtype, device), True, name)
    path = torch._inductor.aoti_compile_and_package(exported, package_path=str(tmp_path / f"{name}.pt2"))
    compiled = torch._inductor.aoti_load_package(path)
    for batch, time in ((3, 6), (5, 9), (1, 2)):
        assert_matches_eager(model, compiled, make(batch, dtype, device, seed=1, time=time), dtype)



@pytest.mark.slow
def test_deployment_doc_python_steps_run(tmp_path, monkeypatch, aoti_loads):
    """docs/deployment.md's Python blocks (export, package, load) run as written, in order, and the
    loaded package's output is eager's."""
    doc = Path(__file__).resolve().parent.parent / "docs" / "deployment.md"
    monkeypatch.chdir(tmp_path)  # the package is written to the working directory
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.DOTALL):
        exec(compile(block, str(doc), "exec"), namespace)
    with torch.no_grad():
        expected = namespace["model"](namespace["x"], namespace["lengths"])
    assert rel_err(namespace["y"], expected[0]) <= TOLERANCE[torch.float32]
    assert (tmp_path / "tagger.pt2").exists()
