"""The front page's and the reference's examples run as written."""

import re
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


def run_python_blocks(path: Path) -> dict:
    """Every ```python block of a Markdown file, in order, in one namespace, on whatever device this
    machine has; returns the namespace."""
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL)
    assert blocks, f"{path} has no python block"
    namespace = {}
    for block in blocks:
        exec(compile(block, str(path), "exec"), namespace)
    return namespace


def test_front_page_snippet_runs():
    ns = run_python_blocks(ROOT / "README.md")
    assert ns["h"].shape == ns["c"].shape == (16, 128)
    assert ns["output"].shape == (50, 16, 256) and ns["h_n"].shape == ns["c_n"].shape == (4, 16, 128)
    for module in (ns["cell"], ns["layer"]):
        for name, p in module.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("page", ["cell.md", "sequences.md"])
def test_reference_snippets_run(page):
    ns = run_python_blocks(ROOT / "docs" / page)
    if page == "cell.md":
        assert ns["h"].shape == ns["c"].shape == (16, 128) and ns["h1"].shape == (128,)
        assert ns["gates"].shape == (16, 3 * 128)
    else:
        assert ns["h_n1"].shape == (16, 128) and ns["h_n"].shape == (4, 16, 128)
        assert ns["output"].data.shape[1] == 256  # packed: (sum of lengths, 2 * state_size)


def test_front_page_fits_a_screenful_or_two():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120


def test_relative_links_resolve():
    """Every relative link of the front page, docs/ and the examples' page names a file of the
    checkout."""
    for page in [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"
