import pytest
from helpers import DEVICES


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
