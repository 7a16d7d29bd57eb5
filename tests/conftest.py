import pytest
import torch

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def make_inputs(batch, features, state, *, dtype=torch.float64, device="cpu", seed=0,
                noncontiguous=False, bias_2d=False, requires_grad=True):
    """Random LLTM arguments (input, weights, bias, old_h, old_cell), never zeros.

    noncontiguous: every argument is a strided view of a larger tensor (weights column-major).
    """
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        if noncontiguous:  # every other column of a tensor twice as wide
            wide = torch.randn(*shape[:-1], 2 * shape[-1], generator=gen, dtype=torch.float64)
            return wide[..., ::2]
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    weights = rand(3 * state, state + features) / (state + features) ** 0.5
    if noncontiguous:
        weights = weights.t().contiguous().t()
    bias = rand(1, 3 * state) if bias_2d else rand(3 * state)
    tensors = [rand(batch, features), weights, bias, rand(batch, state), rand(batch, state)]
    return [_keep_strides(t, device, dtype).requires_grad_(requires_grad) for t in tensors]


def _keep_strides(t, device, dtype):
    """t moved and cast with its strides kept (Tensor.to may copy into a dense layout)."""
    return torch.empty_strided(t.size(), t.stride(), device=device, dtype=dtype).copy_(t)


def rel_err(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()
