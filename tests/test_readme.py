"""The README's examples run as written."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parent.parent / "README.md"


def test_use_snippet_runs():
    """The first Python block (the Use section) on whatever device this machine has."""
    snippet = re.search(r"```python\n(.*?)```", README.read_text(), re.DOTALL).group(1)
    namespace = {}
    exec(compile(snippet, str(README), "exec"), namespace)
    assert namespace["h"].shape == namespace["c"].shape == (16, 128)
    assert namespace["h1"].shape == (128,)
    assert namespace["h_n1"].shape == (16, 128) and namespace["h_n"].shape == (4, 16, 128)  # the sequence lines
    assert namespace["output"].data.shape[1] == 256
    assert namespace["cell"].weights.grad is not None and torch.isfinite(namespace["cell"].weights.grad).all()
