import pytest
from helpers import DEVICES

from lltm_jit import ops


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(params=["extension", "reference"])
def backend(request, monkeypatch):
    """The compiled operators, or the pure-PyTorch fallback (a build that failed, LLTM_JIT_FALLBACK=1)."""
    if request.param == "reference":
        monkeypatch.setattr(ops, "_forward", None)
        monkeypatch.setattr(ops, "_sequence_forward", None)
    return request.param
