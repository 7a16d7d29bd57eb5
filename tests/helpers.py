"""What the tests share: random LLTM arguments, error measures, the comparisons with the
reference, and the device list. Imported as ``from helpers import ...`` (pytest puts tests/ on
sys.path, as it has no __init__.py)."""

import collections
import os
import platform
from pathlib import Path

import pytest
import torch

import lltm_jit
from benchmarks.cases import random_arguments, rel_err  # noqa: F401  rel_err: for the tests
from lltm_jit import lltm, reference_lltm

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def same_error_real_and_fake(op, args):
    """op on args and on fakes of them raise the same exception type and message."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with pytest.raises((RuntimeError, TypeError)) as real:
        op(*args)
    with FakeTensorMode() as mode, pytest.raises((RuntimeError, TypeError)) as fake:
        op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args])
    assert (type(fake.value), str(fake.value)) == (type(real.value), str(real.value))
    return str(real.value)


def make_inputs(batch, features, state, *, time=None, dtype=torch.float64, device="cpu", seed=0,
                noncontiguous=False, bias_2d=False, requires_grad=True):
    """Random LLTM arguments (input, weights, bias, old_h, old_cell), never zeros: the one factory,
    benchmarks.cases.random_arguments, moved and laid out as asked. Given time, input is a sequence
    (time, batch, features).

    noncontiguous: every argument is a strided view of a larger tensor (weights column-major).
    """
    tensors = random_arguments(batch, features, state, time=time, generator=torch.Generator().manual_seed(seed))
    if bias_2d:
        tensors[2] = tensors[2][None]
    if noncontiguous:  # every other column of a tensor twice as wide
        tensors = [_every_other_column(t) for t in tensors]
        tensors[1] = tensors[1].t().contiguous().t()
    return [_keep_strides(t, device, dtype).requires_grad_(requires_grad) for t in tensors]


def _every_other_column(t):
    wide = t.new_empty(*t.shape[:-1], 2 * t.shape[-1]).fill_(float("nan"))
    wide[..., ::2] = t
    return wide[..., ::2]


def _keep_strides(t, device, dtype):
    """t moved and cast with its strides kept (Tensor.to may copy into a dense layout)."""
    return torch.empty_strided(t.size(), t.stride(), device=device, dtype=dtype).copy_(t)


def forward_backward(fn, args, seed=1):
    """Outputs and the gradients of all five arguments under random upstream gradients."""
    new_h, new_cell = fn(*args)
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t) for t in (new_h, new_cell)]
    return [new_h, new_cell, *torch.autograd.grad((new_h, new_cell), args, grads)]


def assert_matches_reference(args, ours=lltm, ref=reference_lltm):
    """`ours` against `ref` on float64 args: the outputs and all five gradients of the same shapes
    and equal to round-off. Returns ours."""
    names = ["new_h", "new_cell", "d_input", "d_weights", "d_bias", "d_old_h", "d_old_cell"]
    outs = forward_backward(ours, args)
    for name, a, b in zip(names, outs, forward_backward(ref, args), strict=True):
        assert a.shape == b.shape, name
        assert rel_err(a, b) < 1e-12, name
    return outs


def assert_within_torch_own_error(args64, dtype):
    """Ours on args64 cast to dtype: outputs and gradients finite, of that dtype, and with an error
    against float64 at most a small multiple of eager PyTorch's in that dtype. Returns the cast args."""
    exact = forward_backward(reference_lltm, args64)
    args = [a.detach().to(dtype).requires_grad_() for a in args64]
    ours = forward_backward(lltm, args)
    theirs = forward_backward(reference_lltm, args)
    eps = torch.finfo(dtype).eps
    for a, b, e in zip(ours, theirs, exact):
        assert a.dtype == dtype
        assert torch.isfinite(a).all()
        assert rel_err(a, e) <= 3 * rel_err(b, e) + 4 * eps
    return args


def cuda_kernels(fn):
    """The names of the CUDA kernels that fn launches."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.key for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA}


def ran(kernels, name):
    return any(name in k for k in kernels)


def aten_calls(fn):
    """How many times fn called each operator (names as "aten::mm"), by the profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return collections.Counter(event.name for event in prof.events())


def product_dtypes(fn):
    """The dtypes of the operands of the matrix products (aten::mm, addmm, addmm_) that fn calls, by
    the profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    return {dtype for event in prof.profiler.kineto_results.events()
            if event.name() in ("aten::mm", "aten::addmm", "aten::addmm_")
            for dtype, shape in zip(event.dtypes(), event.shapes(), strict=True) if shape}


def cpu_has_dot_products(dtype):
    """Whether this CPU has dtype's dot-product instructions, where torch's own products of a half
    type run in it (src/cpu_bf16.h's native_half_products): AVX512-BF16 or AVX512-FP16 on x86, and
    anything else."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return True
    flags = set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").exists() else set()
    return {"avx512f", "avx512_bf16" if dtype == torch.bfloat16 else "avx512_fp16"} <= flags


def use_half_products(path, dtype, monkeypatch):
    """Runs a half type's CPU products on `path`: "float" (LLTM_JIT_CPU_RECURRENCE=packed, below our
    AVX-512 kernels, as on a CPU without the type's dot products) or "native" (the default, or a
    skip where this CPU lacks them). Returns the dtype its products then run in, as the profiler
    names it."""
    if path == "float":
        monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "packed")
        return "float"
    if not cpu_has_dot_products(dtype):
        pytest.skip(f"this CPU has no dot products of {dtype}")
    monkeypatch.delenv("LLTM_JIT_CPU_RECURRENCE", raising=False)
    return {torch.bfloat16: "c10::BFloat16", torch.float16: "c10::Half"}[dtype]


def assert_output_mask(ours, full, mask):
    """A backward operator's outputs under `mask` (a flag per output): None where it is false,
    else equal to the outputs under the full mask."""
    for wanted, a, b in zip(mask, ours, full, strict=True):
        if wanted:
            assert torch.equal(a, b)
        else:
            assert a is None


def assert_partial_gradients(ours, ref, args, products):
    """ours(*args) against ref(*args) (each a tuple of outputs) under random upstream gradients,
    where only some args require a gradient: theirs equal the reference's (float64), and the
    backward through ours calls each operator in `products` ({"aten::mm": 2, ...}) that often."""
    leaves = [a for a in args if a.requires_grad]
    outputs = ours(*args)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t) for t in outputs]
    expected = torch.autograd.grad(ref(*args), leaves, grads)
    calls = aten_calls(lambda: torch.autograd.backward(outputs, grads))
    for leaf, b in zip(leaves, expected, strict=True):
        assert rel_err(leaf.grad, b) < 1e-10
    assert {name: calls[name] for name in products} == products


def cpu_bf16():
    """What the CPU's bfloat16 products run through by default here, "amx", "avx512-bf16", "float"
    or "aten" (the library's own answer)."""
    return lltm_jit.build_info()["cpu_products"]["bfloat16"]


def cpu_recurrence():
    """What the CPU's float recurrence runs through by default here (the library's own answer):
    "avx512", "mkl-packed", "sgemm" or "aten"."""
    return lltm_jit.build_info()["cpu_products"]["float32"]


def cpu_recurrence_sums_bias(device):
    """Whether the CPU's sequence backward sums the bias gradient in its recurrence, with no aten::mv
    after it: its BLAS paths, all but LLTM_JIT_CPU_RECURRENCE=aten and a build with no BLAS."""
    return device == "cpu" and os.environ.get("LLTM_JIT_CPU_RECURRENCE") != "aten" and cpu_recurrence() != "aten"


def cpu_products_are_own(device):
    """Whether the CPU's products (the step's backward, the sequence's after its recurrence) run
    through its AVX-512 kernel, where the profiler counts no aten::mm: on the CPU where it has
    AVX-512, unless LLTM_JIT_CPU_RECURRENCE lowers the choice below it."""
    lowered = os.environ.get("LLTM_JIT_CPU_RECURRENCE", "") not in ("", "amx", "avx512")
    return device == "cpu" and not lowered and cpu_recurrence() == "avx512"


def sequence_products_are_own(device):
    """Whether the sequence's products after its recurrence (d_input, d_weights) run outside ATen,
    where the profiler counts no aten::mm: the CPU's as cpu_products_are_own says, CUDA's always
    (cuBLAS called directly, which torch's CUDA build has loaded)."""
    return device == "cuda" or cpu_products_are_own(device)
