"""examples/quickstart.ipynb ships without outputs and runs from top to bottom in a fresh kernel."""

import os
import sys
from pathlib import Path

import pytest

# The test extra installs these (as CI does); an environment without them (a bare GPU image)
# skips the notebook's tests, saying so with -rs.
MISSING = "{} is missing: pip install -e '.[test]'"
nbformat = pytest.importorskip("nbformat", reason=MISSING.format("nbformat"))

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, "no code cells"
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, f"clear the outputs of:\n{cell.source}"


def stdout_of(notebook, tag):
    cells = [cell for cell in notebook.cells if tag in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"one cell should be tagged {tag!r}"
    return "".join(out.text for out in cells[0].outputs if out.output_type == "stream" and out.name == "stdout")


@pytest.mark.slow
def test_notebook_runs():
    for module in ("nbclient", "ipykernel"):
        pytest.importorskip(module, reason=MISSING.format(module))
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    from lltm_jit import jit

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # kernel_dirs=[] leaves only ipykernel's native python3 kernel, which runs this interpreter
    # (the venv's), whatever kernels the user or the system has installed.
    kernel = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    assert kernel.kernel_spec.argv[0] == sys.executable
    # This test's cache (warm: importing lltm_jit here built it), with a relative path made
    # absolute, as the kernel starts in examples/; the checkout on the path, as a checkout
    # that is not installed needs.
    env = {
        **os.environ,
        "LLTM_JIT_CACHE_DIR": str(jit.Cache.default().root),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    client = NotebookClient(notebook, km=kernel, timeout=600, resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute(env=env)  # raises CellExecutionError, with the traceback, if a cell fails

    assert all(cell.execution_count for cell in notebook.cells if cell.cell_type == "code")
    edited = stdout_of(notebook, "edited-kernel")
    assert "now running lltm_jit_" in edited, edited
    assert "edited kernel: new_h == 2 * original new_h: True" in edited, edited
    restored = stdout_of(notebook, "restored-kernel")
    assert "now running lltm_jit (built now: False)" in restored, restored
    assert "restored kernel: new_h == original new_h: True" in restored, restored
