"""The sequence operator and module against a Python loop over the reference cell."""

import collections
import ctypes
import functools
import itertools
import os
import platform
import re
import threading
from pathlib import Path

import pytest
import torch
from helpers import (DEVICES, aten_calls, assert_output_mask, assert_partial_gradients, cpu_bf16,
                     cpu_products_are_own, cpu_recurrence, cpu_recurrence_sums_bias, cuda_kernels, make_inputs,
                     product_dtypes, ran, rel_err, requires_cuda, same_error_real_and_fake, sequence_products_are_own,
                     use_half_products)

import lltm_jit
from benchmarks import precision
from benchmarks.precision import NAMES
from lltm_jit import lltm_sequence, reference_lltm_sequence

# On CUDA the persistent kernels run where W_h fits in shared memory; LLTM_JIT_SEQUENCE_KERNEL=step
# makes the per-step loop (one cuBLAS product per step) run instead. On the CPU the recurrence's
# products run through our AVX-512 kernel where the CPU has it, else through the best BLAS that
# torch carries (MKL's packed GEMM for float, else the BLAS's gemm); LLTM_JIT_CPU_RECURRENCE=gemm
# or aten lowers that to the BLAS's gemm or to the ATen path.
CPU_RECURRENCES = ("gemm", "aten")
KERNELS = [("cpu", None), *[("cpu", k) for k in CPU_RECURRENCES],
           *[("cuda", k) for k in ("persistent", "step") if "cuda" in DEVICES]]


@pytest.fixture(params=KERNELS, ids=lambda k: k[0] if k[1] is None else f"{k[0]}-{k[1]}")
def device(request, monkeypatch):
    device, kernel = request.param
    if kernel == "step":
        monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    if kernel in CPU_RECURRENCES:
        monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", kernel)
    return device


def skip_lesser_cpu_recurrences():
    """For the tests of the op's registration and tracing rather than its arithmetic, which the
    recurrence's products do not change: once on the CPU, in its default path."""
    if os.environ.get("LLTM_JIT_CPU_RECURRENCE", "") not in ("", "amx"):  # "amx": the default's level
        pytest.skip("registration and tracing: checked in the CPU's default path")


def make_sequence(time, batch, features, state, **options):
    """Random (input (time, batch, features), weights, bias, h0, c0), never zeros (make_inputs' options)."""
    return make_inputs(batch, features, state, time=time, **options)


def run(fn, args, lengths=None, batch_first=False, with_state=True, seed=1):
    """Outputs (output, h_n, c_n) and the gradients of every argument under random upstream gradients."""
    input, weights, bias, h0, c0 = args
    if batch_first:
        input = input.transpose(0, 1)
    output, (h_n, c_n) = fn(input, weights, bias, (h0, c0) if with_state else None, lengths=lengths,
                            batch_first=batch_first)
    outs = [output, h_n, c_n]
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t) for t in outs]
    leaves = args if with_state else args[:3]
    used = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]  # the reference's empty output has no history
    used_outs, used_grads = zip(*used)
    return outs + list(torch.autograd.grad(used_outs, leaves, used_grads, allow_unused=True, materialize_grads=True))


def assert_matches(args, tolerance=1e-10, **kwargs):
    ours, ref = run(lltm_sequence, args, **kwargs), run(reference_lltm_sequence, args, **kwargs)
    for name, a, b in zip(NAMES, ours, ref):
        assert a.shape == b.shape, name
        assert rel_err(a, b) < tolerance, name
    return ours


def assert_no_worse_than_eager(args):
    """Every output and gradient of ours in args' (low) precision is at most twice the eager
    loop's error in the same precision, against float64."""
    exact = run(reference_lltm_sequence, [a.detach().double().requires_grad_() for a in args])
    ours, eager = run(lltm_sequence, args), run(reference_lltm_sequence, args)
    for name, a, b, e in zip(NAMES, ours, eager, exact):
        assert rel_err(a, e) <= 2 * rel_err(b, e) + 1e-5, name


SHAPES = [(1, 1, 1, 1), (1, 3, 5, 7), (5, 2, 3, 33), (6, 1, 7, 40), (9, 7, 13, 45), (4, 5, 17, 128), (3, 4, 6, 130)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_reference_float64(device, shape):
    assert_matches(make_sequence(*shape, device=device))


def test_long_sequence(device):
    assert_matches(make_sequence(300, 3, 4, 9, device=device))


@pytest.mark.parametrize("batch_first", [False, True])
def test_lengths(device, batch_first):
    """Mixed lengths, 0 and time among them: past its length a sequence's state stays and its output
    is zero; the initial state is used as given or as zeros."""
    args = make_sequence(8, 6, 5, 7, device=device, seed=2)
    lengths = torch.tensor([8, 0, 3, 5, 1, 8])
    ours = assert_matches(args, lengths=lengths, batch_first=batch_first)
    output = ours[0].transpose(0, 1) if batch_first else ours[0]
    assert torch.equal(output[3:, 2], torch.zeros_like(output[3:, 2]))
    assert torch.equal(ours[1][1], args[3][1]) and torch.equal(ours[2][1], args[4][1])  # length 0
    assert_matches(args, lengths=lengths.to(device), with_state=False)


def test_lengths_sorted(device):
    """Lengths in decreasing order, as pack_padded_sequence sorts them: on the CPU the second
    thread's block of rows stops before the first's (it skips its last steps whole)."""
    args = make_sequence(8, 6, 5, 7, device=device, seed=3)
    for lengths in (torch.tensor([8, 8, 6, 3, 2, 0]), torch.tensor([5, 4, 4, 0, 0, 0])):
        assert_matches(args, lengths=lengths)
        assert_matches(args, lengths=lengths, with_state=False)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=str)
def test_cpu_lengths_results_do_not_depend_on_threads(dtype):
    """Every output of the CPU's forward with lengths, the saved gates and cells too, is the same
    on 1, 2 and 3 threads (blocks that stop whole or in part), and the gates saved for the steps a
    sequence did not run are zeros. Bit for bit on our AVX-512 kernel, which computes a row the
    same way in any block; a BLAS may round a row by the block's row count or its own threads
    (MKL on AVX2 does, ATen's path alike), so there to the dtype's rounding."""
    args = make_sequence(6, 5, 3, 7, dtype=dtype, seed=4, requires_grad=False)
    lengths = torch.tensor([6, 0, 2, 6, 1])
    threads = torch.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            results.append(torch.ops.lltm_jit.sequence_forward(*args, lengths, True))
    finally:
        torch.set_num_threads(threads)
    exact = cpu_recurrence() == "avx512"
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert torch.equal(a, b) if exact else rel_err(a, b) < 10 * torch.finfo(dtype).eps
    gates = results[0][3]
    for b, length in enumerate(lengths.tolist()):
        assert torch.count_nonzero(gates[length:, b]) == 0


def test_state_split_over_blocks(device):
    """A state whose W_h fits no block's shared memory (float64 at state 300): on CUDA the
    persistent kernels split it over a group of blocks that exchange h and d_h each step, here
    with groups of a few rows, the last one short of rows, and mixed lengths."""
    args = make_sequence(9, 11, 5, 300, device=device, seed=8)
    assert_matches(args, lengths=torch.tensor([9, 0, 3, 9, 1, 7, 9, 2, 9, 5, 4]))
    assert_matches(args, with_state=False)
    assert_matches(make_sequence(5, 1, 5, 300, device=device, seed=14))  # one group: no exchange of d_bias sums


@pytest.mark.parametrize(("time", "with_state"), [(0, True), (7, True), (7, False)],
                         ids=["no steps", "7 steps", "7 steps, zero state"])
def test_state_split_over_blocks_float32(device, time, with_state):
    """float32 at state 512 and batch 64, split over groups of blocks of 8 rows on CUDA (the
    benchmark's 64x256x512 case), against the float64 reference."""
    args64 = make_sequence(time, 64, 6, 512, device=device, seed=9)
    args = [a.detach().float().requires_grad_() for a in args64]
    ours, ref = run(lltm_sequence, args, with_state=with_state), run(reference_lltm_sequence, args64,
                                                                    with_state=with_state)
    for name, a, b in zip(NAMES, ours, ref):
        assert rel_err(a.double(), b) < 1e-5, name


def test_default_state_and_batch_first(device):
    args = make_sequence(6, 3, 4, 5, device=device, seed=3)
    assert_matches(args, with_state=False)
    assert_matches(args, batch_first=True)


def test_initial_state_parts_default_to_zeros(device):
    """The operator takes h0 and c0 each as None for zeros: the same results and gradients as
    zeros given, and gradcheck holds."""
    input, weights, bias, h0, c0 = make_sequence(5, 3, 4, 6, device=device, seed=12)
    lengths = torch.tensor([5, 2, 0])
    op = torch.ops.lltm_jit.sequence_forward
    for h, c in ((h0, None), (None, c0), (None, None)):
        given = [t for t in (input, weights, bias, h, c) if t is not None]
        zeros = [torch.zeros_like(h0) if t is None else t for t in (h, c)]
        ours, ref = op(input, weights, bias, h, c, lengths)[:3], op(input, weights, bias, *zeros, lengths)[:3]
        grads = [torch.randn_like(t) for t in ours]
        for a, b in zip([*ours, *torch.autograd.grad(ours, given, grads)],
                        [*ref, *torch.autograd.grad(ref, given, grads)]):
            assert rel_err(a, b) < 1e-12
        small = [t.detach()[:, :, :2].requires_grad_() if t is input else t for t in (input, weights, bias, h, c)]
        small[1] = small[1].detach()[:, :8].requires_grad_()
        assert torch.autograd.gradcheck(lambda *a: op(*a, lengths)[:3], small)


@pytest.mark.parametrize("kernel", ["default", "step"])
def test_output_gradient_of_any_layout(device, kernel, monkeypatch):
    """The backward takes the output's gradient in any layout, as the kernels read it through its
    strides: contiguous, expanded as a sum's is, with time and batch swapped, with strided columns
    and one element off its allocation's alignment, each matches the reference in float64, with
    lengths and without, on the persistent kernels and the step path alike."""
    if kernel == "step":
        if device != "cuda":
            pytest.skip("the step path is the CUDA sequence op's")
        monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    T, B, S = 5, 3, 8
    args = [a.detach().requires_grad_() for a in make_sequence(T, B, 4, S, device=device, seed=40)]
    gen = torch.Generator().manual_seed(41)
    values = torch.randn(T * B * 2 * S + 1, generator=gen, dtype=torch.float64).to(device)
    layouts = {
        "contiguous": values[:T * B * S].view(T, B, S),
        "expanded": values[:S].expand(T, B, S),
        "time and batch swapped": values[:T * B * S].view(B, T, S).transpose(0, 1),
        "strided columns": values[:T * B * 2 * S].view(T, B, 2 * S)[..., ::2],
        "off its alignment": values[1:T * B * S + 1].view(T, B, S),
    }
    for lengths in (None, torch.tensor([5, 2, 4])):
        for name, grad in layouts.items():
            grads = []
            for fn in (lltm_sequence, reference_lltm_sequence):
                output, _ = fn(args[0], args[1], args[2], (args[3], args[4]), lengths=lengths)
                grads.append(torch.autograd.grad(output, args, grad))
            for a, b in zip(*grads):
                assert rel_err(a, b) < 1e-10, (name, lengths)


def persistent(device):
    """Whether the CUDA persistent kernels run (at sizes where they fit)."""
    return device == "cuda" and os.environ.get("LLTM_JIT_SEQUENCE_KERNEL") != "step"


def test_default_state_is_no_tensor(device):
    """With the zero initial state the backward skips the first step's W_h product (one product
    for the W_h gradient). On CUDA's persistent path no zeros are filled at all, forward or
    backward, and the kernel sums the bias gradient as it goes, with no pass after it."""
    input, weights, bias, h0, c0 = make_sequence(5, 3, 4, 6, device=device, seed=13, requires_grad=False)
    for t in (input, weights, bias):
        t.requires_grad_()

    def backward_calls(state):
        output, _ = lltm_sequence(input, weights, bias, state)
        grad = torch.randn_like(output)
        return aten_calls(lambda: torch.autograd.grad(output, (input, weights, bias), grad))

    forward = aten_calls(lambda: lltm_sequence(input, weights, bias))
    backward, with_state = backward_calls(None), backward_calls((h0, c0))
    if cpu_products_are_own(device):  # and the forward's input projection, a thread's rows at each step
        assert forward["aten::addmm"] == 0
    if sequence_products_are_own(device):
        assert backward["aten::mm"] == with_state["aten::mm"] == with_state["aten::addmm_"] == 0
    else:
        assert backward["aten::mm"] == with_state["aten::mm"] == 3  # d_input, W_x's, W_h's (or its first step's)
        assert with_state["aten::addmm_"] - backward["aten::addmm_"] == 1  # W_h's for the later steps
    if persistent(device):
        for calls in (forward, backward):
            assert calls["aten::fill_"] == calls["aten::zero_"] == 0
        assert backward["aten::mv"] == 0
    if cpu_recurrence_sums_bias(device):
        assert backward["aten::mv"] == with_state["aten::mv"] == 0


@pytest.mark.parametrize("with_lengths", [False, True], ids=["full length", "lengths"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("recurrence", [None, "packed", "gemm"], ids=lambda r: r or "default")
def test_cpu_recurrence_dispatches_nothing_per_step(recurrence, dtype, with_lengths, monkeypatch):
    """The CPU's BLAS paths run the steps with no ATen call, with lengths too: forward and backward
    over 9 steps make the calls of 2 steps, where the ATen path (the contrast that shows the count
    sees the steps) makes more. Half types run the recurrence in float, through the same path."""
    def calls(time):
        input, weights, bias, h0, c0 = make_sequence(time, 3, 4, 6, dtype=dtype, seed=5)
        lengths = torch.tensor([time, 1, time - 1]) if with_lengths else None
        outputs = []
        forward = aten_calls(lambda: outputs.append(lltm_sequence(input, weights, bias, (h0, c0), lengths=lengths)))
        output, (h_n, c_n) = outputs[0]
        backward = aten_calls(lambda: torch.autograd.grad((output.sum() + h_n.sum() + c_n.sum()),
                                                          (input, weights, bias, h0, c0)))
        return sum(forward.values()), sum(backward.values())

    if recurrence is None:  # the default, also where the run's environment lowers the choice
        monkeypatch.delenv("LLTM_JIT_CPU_RECURRENCE", raising=False)
    else:
        monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", recurrence)
    assert calls(9) == calls(2)
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "aten")
    aten_forward, aten_backward = calls(9)
    two_forward, two_backward = calls(2)
    assert aten_forward > two_forward and aten_backward > two_backward


@pytest.mark.parametrize("recurrence", ["avx512", "packed", "gemm", "aten"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cpu_float32_matches_reference(recurrence, shape, monkeypatch):
    """float32 through each of the CPU's paths (the float64 tests see the AVX-512 kernel and the
    BLAS's dgemm, not MKL's packed GEMM), against the float64 reference: the shapes leave partial
    tiles of rows (8) and columns (32)."""
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", recurrence)
    args64 = make_sequence(*shape, seed=11)
    args = [a.detach().float().requires_grad_() for a in args64]
    for name, a, b in zip(NAMES, run(lltm_sequence, args), run(reference_lltm_sequence, args64)):
        assert rel_err(a, b) < 2e-5, name


def test_an_unknown_cpu_recurrence_is_an_error(monkeypatch):
    """A ValueError, as for any option's value (docs/cell.md#errors): a typo must not run the default."""
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "mkl")
    args = [a.detach().float() for a in make_sequence(3, 2, 4, 5, seed=2)]
    with pytest.raises(ValueError, match="LLTM_JIT_CPU_RECURRENCE=mkl: expected amx, avx512, packed, gemm or aten"):
        lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))


def test_cpu_recurrence_is_the_best_here():
    """The library finds what it looks for from inside (the CPU's features; dlsym in its own lookup
    scope): float runs our AVX-512 kernel where the CPU has AVX-512, else MKL's packed GEMM where
    libtorch_cpu exports it (x86 wheels), else sgemm_, else the ATen path."""
    torch_cpu = ctypes.CDLL(next(Path(torch.__file__).parent.glob("lib/libtorch_cpu.*")))
    has = functools.partial(hasattr, torch_cpu)
    packed = all(map(has, ("cblas_sgemm_pack_get_size", "cblas_sgemm_pack", "cblas_sgemm_compute")))
    cpuinfo = Path("/proc/cpuinfo")
    avx512 = cpuinfo.exists() and " avx512f" in cpuinfo.read_text()
    expected = "avx512" if avx512 else "mkl-packed" if packed else "sgemm" if has("sgemm_") else "aten"
    assert cpu_recurrence() == expected


def test_cpu_bfloat16_kernel_is_the_cpus():
    """bfloat16 runs its products on AMX where the CPU has AMX-BF16 (and AVX512-BF16) and the
    kernel lets the process use the tiles, else on AVX512-BF16 where the CPU has that, else in float
    on x86 (cpu_bf16.h's native_half_products) and through ATen elsewhere; float16's in float on x86
    without AVX512-FP16 (the library's own answers). Where AMX does not run, the library says why:
    a CPU with the flags gets no other reason than a refusal or a build without it."""
    cpuinfo = Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.exists() else set()
    avx512 = {"avx512f", "avx512_bf16"} <= flags
    x86 = platform.machine() in ("x86_64", "AMD64")
    amx = lltm_jit.build_info()["cpu_products"]["amx"]
    if avx512 and {"amx_tile", "amx_bf16"} <= flags:
        assert amx == "available" or amx.startswith(("refused by the kernel: ", "not in this build"))
    else:
        assert amx == "not on this CPU" or amx.startswith("not in this build")
    expected = "amx" if amx == "available" else "avx512-bf16" if avx512 else "float" if x86 else "aten"
    assert cpu_bf16() == expected
    in_float = x86 and not {"avx512f", "avx512_fp16"} <= flags
    assert lltm_jit.build_info()["cpu_products"]["float16"] == ("float" if in_float else "aten")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_cpu_half_products_in_float_without_dot_products(dtype, monkeypatch):
    """Where the CPU has no dot products of a half type (here as LLTM_JIT_CPU_RECURRENCE=packed
    makes it), every ATen product of a sequence runs in float: the input projection, and d_input
    and d_weights after the recurrence (whose own products, on raw pointers, run in float too),
    which torch runs 4-200x slower in the type there. Their precision: the lowered paths of
    test_low_precision_long_sequence."""
    use_half_products("float", dtype, monkeypatch)
    args = make_sequence(9, 5, 7, 33, dtype=dtype, seed=3)
    assert product_dtypes(lambda: run(lltm_sequence, args)) == {"float"}


def use_bf16_kernel(kernel, monkeypatch):
    """Runs bfloat16 on `kernel` ("amx" or "avx512-bf16") through LLTM_JIT_CPU_RECURRENCE, or skips
    where this CPU lacks it."""
    best = cpu_bf16()
    if best not in BF16_KERNELS or (kernel == "amx" and best != "amx"):
        pytest.skip(f"the CPU has no {kernel}")
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "amx" if kernel == "amx" else "avx512")


BF16_KERNELS = ["amx", "avx512-bf16"]


@pytest.mark.parametrize("lengths", [False, True], ids=["full length", "lengths"])
@pytest.mark.parametrize("state", [True, False], ids=["state", "zero state"])
@pytest.mark.parametrize("kernel", BF16_KERNELS)
def test_cpu_bfloat16_runs_its_own_products(kernel, state, lengths, monkeypatch):
    """A bfloat16 sequence's forward and backward call no ATen product on either kernel, with
    lengths too: the input projection, the steps' products and d_input run through the kernel, and
    the bias gradient is summed in the recurrence. d_weights alone goes through ATen, on AMX and
    from 2^26 FLOP (T = 40 and 64 at 16 x 32 x 128; not 5 x 9 x 5 x 33): a few products, however
    many steps, where ATen's bfloat16 GEMM runs on the same tiles. The contrast, the float
    recurrence (LLTM_JIT_CPU_RECURRENCE=packed), calls them through ATen."""
    use_bf16_kernel(kernel, monkeypatch)
    recurrence = os.environ["LLTM_JIT_CPU_RECURRENCE"]

    def products(time, batch, features, size, wrt=(0, 1, 2)):
        args = make_sequence(time, batch, features, size, dtype=torch.bfloat16, seed=9)
        given = torch.arange(batch) % (time + 1) if lengths else None

        def forward():
            return lltm_sequence(args[0], args[1], args[2], tuple(args[3:]) if state else None, lengths=given)

        output, (h_n, c_n) = forward()
        forward_and_backward = aten_calls(lambda: torch.autograd.grad(output.sum() + h_n.sum() + c_n.sum(),
                                                                      [args[i] for i in wrt]))
        calls = aten_calls(forward) + forward_and_backward
        return sum(calls[name] for name in ("aten::mm", "aten::addmm", "aten::addmm_", "aten::mv"))

    assert products(5, 9, 5, 33) == 0
    assert products(64, 16, 32, 128, wrt=(0, 2)) == 0
    if kernel == "amx":
        assert 2 <= products(64, 16, 32, 128) == products(40, 16, 32, 128) <= 3
    else:
        assert products(64, 16, 32, 128) == 0
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "packed")
    assert products(5, 9, 5, 33) > 0
    monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", recurrence)


@pytest.mark.parametrize("kernel", BF16_KERNELS)
def test_cpu_bfloat16_odd_sizes_drift_no_more_than_eager(kernel, monkeypatch):
    """The bfloat16 kernels' tails: odd depths (features 5, state 33: a last pair of one value, a
    part of AMX's 32), a last block of 3 columns of 32 (AMX: of 16), row blocks of 5 and 4 on two
    threads; errors against float64 over 64 steps at most an eager loop's, as in
    test_low_precision_long_sequence."""
    use_bf16_kernel(kernel, monkeypatch)
    rows = precision.summary((64, 9, 5, 33), torch.bfloat16, range(2), "cpu")
    for name, (ours, eager, _) in zip(NAMES, rows):
        assert ours <= eager, name


@pytest.mark.parametrize("kernel", BF16_KERNELS)
@pytest.mark.parametrize("shape", [(6, 37, 45, 70), (3, 70, 64, 128), (4, 2, 1, 17)],
                         ids=lambda s: "x".join(map(str, s)))
def test_cpu_bfloat16_tiles_match_reference(kernel, shape, monkeypatch):
    """Every output and gradient of a bfloat16 sequence, with and without lengths, against the
    float64 reference within bfloat16's rounding, at shapes that leave every kind of partial tile:
    AMX's blocks of 32 rows (two tiles of 16, the second partial or empty: 37 and 70 rows on two
    threads), of 32 columns (3 * 70 and 3 * 17 gates) and of 32 of the depth (45, 70, 17, 1)."""
    use_bf16_kernel(kernel, monkeypatch)
    time, batch, features, state = shape
    args64 = make_sequence(time, batch, features, state, seed=13)
    args = [a.detach().bfloat16().requires_grad_() for a in args64]
    reference = [a.detach().bfloat16().double().requires_grad_() for a in args64]
    lengths = torch.arange(batch) % (time + 1)
    lengths[0] = time
    for given in (None, lengths):
        ours = run(lltm_sequence, args, lengths=given)
        expected = run(reference_lltm_sequence, reference, lengths=given)
        for name, a, b in zip(NAMES, ours, expected):
            assert rel_err(a.double(), b) < 2e-2, name


def test_noncontiguous(device):
    assert_matches(make_sequence(5, 4, 6, 9, device=device, seed=4, noncontiguous=True))


def test_empty_batch_and_no_steps(device):
    assert_matches(make_sequence(4, 0, 3, 5, device=device))
    args = make_sequence(0, 3, 4, 5, device=device)
    ours = assert_matches(args)
    assert ours[0].shape == (0, 3, 5) and torch.equal(ours[1], args[3]) and torch.equal(ours[2], args[4])


def test_gradient_through_outputs_or_final_state_only(device):
    args = make_sequence(5, 3, 4, 6, device=device, seed=5)
    for pick in (lambda o, s: o.sum(), lambda o, s: s[0].sum(), lambda o, s: s[1].sum()):
        ours = torch.autograd.grad(pick(*lltm_sequence(args[0], *args[1:3], tuple(args[3:]))), args)
        ref = torch.autograd.grad(pick(*reference_lltm_sequence(args[0], *args[1:3], tuple(args[3:]))), args)
        for a, b in zip(ours, ref):
            assert rel_err(a, b) < 1e-10


def test_backward_twice_with_retain_graph(device):
    """The backward overwrites its saved pre-activations only when the graph will be freed."""
    args = make_sequence(6, 4, 3, 8, device=device, seed=6)
    output, (h_n, c_n) = lltm_sequence(args[0], *args[1:3], tuple(args[3:]))
    loss = output.sum() + h_n.sum() + c_n.sum()
    first = torch.autograd.grad(loss, args, retain_graph=True)
    second = torch.autograd.grad(loss, args)
    for a, b in zip(first, second):
        assert torch.equal(a, b)


@pytest.mark.parametrize("with_lengths", [True, False], ids=["lengths", "full length"])
def test_gradcheck(device, with_lengths):
    """With lengths, and without them (on the CPU the row-block loop, not the ATen loop)."""
    args = make_sequence(4, 3, 2, 3, device=device, seed=7)
    lengths = torch.tensor([4, 0, 2]) if with_lengths else None

    def fn(*a):
        output, (h_n, c_n) = lltm_sequence(a[0], a[1], a[2], (a[3], a[4]), lengths=lengths)
        return output, h_n, c_n

    assert torch.autograd.gradcheck(fn, args)


def test_torch_compile_dynamic_shapes_one_graph(device):
    """Under dynamic=True one graph serves other sizes, the state size among them (the autograd
    node keeps the bias's sizes symbolic), with eager's values and gradients."""
    skip_lesser_cpu_recurrences()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    def fn(x, w, b, h0, c0):
        output, (h_n, c_n) = lltm_sequence(x, w, b, (h0, c0))
        return output.sum() + (h_n * c_n).sum()

    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for seed, sizes in enumerate([(4, 3, 5, 7), (6, 5, 3, 9)]):
        args = make_sequence(*sizes, device=device, seed=seed)
        ours = torch.autograd.grad(compiled(*args), args)
        for a, b in zip(ours, torch.autograd.grad(fn(*args), args), strict=True):
            assert rel_err(a, b) < 1e-12
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_batched_gradients_reach_the_cell_not_the_sequence():
    """As docs/sequences.md says: vmap over the backward works through the cell and is refused
    by torch for the sequence, whose backward writes over the saved pre-activations."""
    cell_args = make_inputs(3, 2, 4, seed=8)
    assert torch.autograd.gradcheck(lambda *a: lltm_jit.lltm(*a), cell_args, check_batched_grad=True)
    args = make_sequence(4, 3, 2, 3, seed=8)
    output, _ = lltm_sequence(args[0], *args[1:3], tuple(args[3:]))
    with pytest.raises(RuntimeError, match="Batching rule not implemented for lltm_jit::sequence_backward"):
        torch.autograd.grad(output, args[1], torch.randn(2, *output.shape, dtype=output.dtype), is_grads_batched=True)


def test_opcheck(device):
    skip_lesser_cpu_recurrences()
    for dtype in (torch.float64, torch.float32):
        args = make_sequence(4, 3, 5, 6, device=device, dtype=dtype)
        lengths = torch.tensor([4, 1, 0])
        torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default, (*args, lengths))
        torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default, (*args, None))
        torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default, (*args[:3], None, None, lengths))
        torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default,
                              (*[a.detach() for a in args], lengths, False))
        torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default, (*args, lengths, None, True))  # paired
        for mask in ([True, True, True], [False, True, False]):  # outputs left out come back as None
            torch.library.opcheck(torch.ops.lltm_jit.sequence_backward.default,
                                  (*backward_op_args(args, lengths), mask))
        torch.library.opcheck(torch.ops.lltm_jit.sequence_backward.default,
                              (*backward_op_args(args, lengths), [True, True, True], True))
        # Zero initial state, and gradients of h_n and c_n not given.
        no_state = backward_op_args([*args[:3], None, None], lengths)
        no_state[1] = no_state[2] = None
        torch.library.opcheck(torch.ops.lltm_jit.sequence_backward.default, (*no_state, [True, True, True]))


@pytest.mark.parametrize("no_grad", ["no_grad", "constant inputs"])
def test_forward_without_backward_keeps_nothing_for_it(device, no_grad):
    """Under no_grad, or with no input requiring a gradient, the forward returns gates and cells
    empty and allocates no (time, batch, state) cell states, with the same results (lengths make
    a sequence's state pass through skipped steps)."""
    args = make_sequence(8, 4, 3, 8, device=device, seed=12)  # (time, batch, state) of 2 KiB: CUDA's block size
    lengths = torch.tensor([8, 0, 3, 1])
    kept = torch.ops.lltm_jit.sequence_forward(*args, lengths)
    if no_grad == "no_grad":
        with torch.no_grad():
            allocated, ours = allocations(lambda: torch.ops.lltm_jit.sequence_forward(*args, lengths))
    else:
        constant = [a.detach() for a in args]
        allocated, ours = allocations(lambda: torch.ops.lltm_jit.sequence_forward(*constant, lengths))
    assert ours[3].shape == ours[4].shape == (0,)
    for a, b in zip(ours[:3], kept[:3]):
        assert torch.equal(a, b)
    assert kept[4].shape == (8, 4, 8)
    state_bytes = kept[4].numel() * kept[4].element_size()
    assert allocated.count(state_bytes) == 1  # the output alone


def test_forward_keeps_nothing_when_told_whatever_requires_grad(device):
    """for_backward=False keeps nothing even where inputs require a gradient, as an AOTInductor
    graph's parameters do, with the same results: autograd alone decides that a backward runs,
    and one through it raises."""
    args, lengths = make_sequence(4, 3, 5, 6, device=device), torch.tensor([4, 1, 0])
    kept = torch.ops.lltm_jit.sequence_forward(*args, lengths)
    ours = torch.ops.lltm_jit.sequence_forward(*args, lengths, for_backward=False)
    assert ours[3].shape == ours[4].shape == (0,)
    for a, b in zip(ours[:3], kept[:3]):
        assert torch.equal(a, b)
    assert all(t.requires_grad for t in ours[:3])
    with pytest.raises(RuntimeError, match=r"^lltm_sequence: the forward ran with for_backward=False, which keeps "
                                           r"nothing for a backward; call it with for_backward=None"):
        ours[0].sum().backward()
    # What does not pass through it still has its gradients.
    (args[0] * 2).sum().backward()
    assert torch.equal(args[0].grad, torch.full_like(args[0], 2))


def allocations(fn):
    """The sizes in bytes of the allocations fn makes (the profiler's memory events), and its result."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    return [e.nbytes() for e in prof.profiler.kineto_results.events() if e.name() == "[memory]" and e.nbytes() > 0], result


def backward_op_args(args, lengths=None):
    """The backward operator's arguments but the mask, from the forward operator on args."""
    input, weights, _, h0, c0 = (None if a is None else a.detach() for a in args)
    output, h_n, c_n, gates, cells = torch.ops.lltm_jit.sequence_forward(input, weights, args[2].detach(), h0, c0,
                                                                         lengths, for_backward=True)
    grads = [torch.randn_like(output), torch.randn_like(h_n), torch.randn_like(c_n)]
    return [*grads, input, weights, h0, c0, lengths, output, gates, cells]


@pytest.mark.parametrize("mask", list(itertools.product([False, True], repeat=3)), ids=str)
def test_backward_output_mask(device, mask):
    """The backward operator returns None for the outputs its mask leaves out, and the others as
    with the full mask."""
    backward_args = backward_op_args(make_sequence(4, 3, 5, 6, device=device), torch.tensor([4, 1, 0]))
    full = torch.ops.lltm_jit.sequence_backward(*backward_args[:-2], backward_args[-2].clone(), backward_args[-1],
                                                [True, True, True])
    ours = torch.ops.lltm_jit.sequence_backward(*backward_args, list(mask))
    assert_output_mask(ours, full, [*mask, True, True])


# Which of (input, weights, bias, h0, c0) require a gradient, and the products after the
# recurrence that this leaves: d_input = d_gates W_x, d_weights (one product for W_x, one for the
# first step's W_h, an addmm for the rest) and d_bias = d_gates^T ones.
PARTIAL_GRADIENTS = {
    "all": ((True, True, True, True, True), {"aten::mm": 3, "aten::mv": 1}),
    "frozen parameters": ((True, False, False, True, True), {"aten::mm": 1, "aten::mv": 0}),
    "no input gradient": ((False, True, True, True, True), {"aten::mm": 2, "aten::mv": 1}),
    "bias only": ((False, False, True, False, False), {"aten::mm": 0, "aten::mv": 1}),
    "initial state only": ((False, False, False, True, True), {"aten::mm": 0, "aten::mv": 0}),
}


@pytest.mark.parametrize("case", PARTIAL_GRADIENTS)
def test_gradients_of_the_inputs_that_need_them(device, case):
    """Inputs that require no gradient (frozen weights, a constant input): the others' gradients
    equal the reference's, and the backward leaves out the products only the former need."""
    requires, products = PARTIAL_GRADIENTS[case]
    if persistent(device) or cpu_recurrence_sums_bias(device):
        products = {**products, "aten::mv": 0}  # the kernel, or the CPU's recurrence, sums d_bias as it goes
    if sequence_products_are_own(device):  # not ATen's: counted in the cpu-gemm and cpu-aten runs alone
        products = {**products, "aten::mm": 0}
    args = [a.detach().requires_grad_(r) for a, r in zip(make_sequence(5, 3, 4, 6, device=device, seed=10), requires)]
    assert_partial_gradients(flat(lltm_sequence), flat(reference_lltm_sequence), args, products)


def flat(fn):
    """fn (lltm_sequence's signature) as a function of (input, weights, bias, h0, c0) returning
    (output, h_n, c_n)."""
    def run(input, weights, bias, h0, c0):
        output, (h_n, c_n) = fn(input, weights, bias, (h0, c0))
        return output, h_n, c_n
    return run


def test_cpu_large_products_split_between_kernel_and_mkl():
    """Past 2^28 FLOP for d_weights (64 x 64 x 32 x 128: 2^28.9) the CPU's kernel still runs d_input
    and ATen's products (MKL) run d_weights, two mm and an addmm_; every gradient as the reference's
    in float64."""
    if not cpu_products_are_own("cpu"):
        pytest.skip("the CPU's products run through ATen here")
    args = make_sequence(64, 64, 32, 128, seed=12)
    output, (h_n, c_n) = lltm_sequence(args[0], args[1], args[2], tuple(args[3:]))
    grad = torch.randn_like(output)
    ours = []
    calls = aten_calls(lambda: ours.extend(torch.autograd.grad(output, args, grad)))
    assert (calls["aten::mm"], calls["aten::addmm_"], calls["aten::mv"]) == (2, 1, 0)
    ref_output, _ = reference_lltm_sequence(args[0], args[1], args[2], tuple(args[3:]))
    assert rel_err(output, ref_output) < 1e-10
    for a, b in zip(ours, torch.autograd.grad(ref_output, args, grad), strict=True):
        assert rel_err(a, b) < 1e-10


def test_gradients_autograd_grad_was_asked_for(device):
    """Every input requires a gradient but autograd.grad asks for the weights alone: the backward
    computes d_weights (two products) and neither d_input nor d_bias."""
    args = make_sequence(5, 3, 4, 6, device=device, seed=11)
    output, (h_n, c_n) = lltm_sequence(args[0], *args[1:3], tuple(args[3:]))
    ref_output, _ = reference_lltm_sequence(args[0], *args[1:3], tuple(args[3:]))
    grad = torch.randn_like(output)
    ours = []
    calls = aten_calls(lambda: ours.extend(torch.autograd.grad(output, [args[1]], grad)))
    assert rel_err(ours[0], torch.autograd.grad(ref_output, [args[1]], grad)[0]) < 1e-10
    assert (calls["aten::mm"], calls["aten::mv"]) == (0 if sequence_products_are_own(device) else 2, 0)


def test_torch_compile_fullgraph(device):
    skip_lesser_cpu_recurrences()
    torch._dynamo.reset()
    module = lltm_jit.LLTMSequence(5, 7, device=device, dtype=torch.float64)
    compiled = torch.compile(module, fullgraph=True)
    x = torch.randn(6, 3, 5, device=device, dtype=torch.float64)
    state = tuple(torch.randn(1, 3, 7, device=device, dtype=torch.float64) for _ in range(2))
    lengths = torch.tensor([6, 2, 4])
    out, (h_n, c_n) = compiled(x, state, lengths)
    ref, (ref_h, ref_c) = module(x, state, lengths)
    for a, b in ((out, ref), (h_n, ref_h), (c_n, ref_c)):
        assert rel_err(a, b) < 1e-14
    (out.sum() + h_n.sum()).backward()
    grads = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    (ref.sum() + ref_h.sum()).backward()
    for g, p in zip(grads, module.parameters()):
        assert rel_err(g, p.grad) < 1e-12
    with torch.no_grad():  # a graph of its own, whose forward keeps nothing for a backward
        for a, b in zip(compiled(x, state, lengths)[0], ref):
            assert rel_err(a, b) < 1e-14
    x.requires_grad_()  # the zero state, which the op takes as None
    ours, ref = compiled(x)[0], module(x)[0]
    assert rel_err(ours, ref) < 1e-14
    grad = torch.randn_like(ours)
    for a, b in zip(torch.autograd.grad(ours, [x, *module.parameters()], grad),
                    torch.autograd.grad(ref, [x, *module.parameters()], grad)):
        assert rel_err(a, b) < 1e-12


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_long_sequence(device, dtype):
    """Over 256 steps, our error against float64 is at most an eager loop's in the same dtype, for
    the outputs and every gradient (the error that compounds over steps matters more than one
    step's). Both are measured over the same inputs rounded to the dtype, as means over four
    seeds: one seed's small h_n (128 values) is mostly its final rounding, alike for both. On
    CUDA's persistent path: on tensor cores (one block's W_h)."""
    rows = precision.summary((256, 4, 8, 32), dtype, range(4), device)
    for name, (ours, eager, _) in zip(NAMES, rows):
        assert ours <= eager, name


# The tensor-core kernels' size classes (B x F x S) on the H200: W_h in one block (one group of
# rows, short of 8); split over 11 tiles in two groups (the last tile and group short, and a
# state that the exchange moves an element at a time, not 16 bytes; without clusters 21 tiles);
# 16 tiles in five groups of 8 rows; a group of 32 rows (two short) at a state the CUDA-core
# kernels do not hold, over 88 tiles, past a cluster's 16, the forward's partial sums over its
# operand (whose rows past the batch the bulk gather leaves as the sums left them); and 19
# groups of 32 rows (the last short) over 4 tiles of 64 columns, 4 cells of the state a thread, at
# a batch the CUDA-core kernels do not hold. On sm_90 the groups of the second, third and last
# run as clusters.
TENSOR_CORE_SIZES = [(5, 8, 40), (12, 8, 330), (40, 8, 512), (30, 8, 1400), (600, 8, 256)]
CUDA_CORES_HOLD = TENSOR_CORE_SIZES[:3]
IN_CLUSTERS = [TENSOR_CORE_SIZES[i] for i in (1, 2, 4)]
FRAGMENTS_HELD = IN_CLUSTERS[:2]  # groups of 8 rows in clusters: the forward holds W_h in registers


def template_arguments(kernel):
    """A kernel's template arguments as the profiler names it: "f<a, b>(...)" gives ["a", "b"]."""
    return kernel.split("<", 1)[1].split(">(")[0].split(", ")


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("size", TENSOR_CORE_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_which_persistent_kernel_runs(size, dtype, monkeypatch):
    """The half types run the persistent kernels on tensor cores, each direction, their groups
    as thread-block clusters on sm_90 where W_h splits over at most 16 tiles, and not where
    LLTM_JIT_CLUSTERS=0 (the forward's clusters of 8 rows holding their fragments of W_h in
    registers); LLTM_JIT_TENSOR_CORES=0 gives their CUDA-core kernels back where those fit (at
    state 1400 and at batch 600 they do not: the step path); float32 never runs on tensor cores."""
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL", raising=False)
    monkeypatch.delenv("LLTM_JIT_CLUSTERS", raising=False)
    args = [a.to(dtype) for a in make_sequence(3, *size, device="cuda", seed=15)]

    def kernels():
        output, _ = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
        return cuda_kernels(lambda: torch.autograd.grad(output.sum(), args[:3])) | cuda_kernels(
            lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))

    half = dtype in (torch.float16, torch.bfloat16)
    for allowed in (True, False):
        monkeypatch.setenv("LLTM_JIT_TENSOR_CORES", "1" if allowed else "0")
        names = kernels()
        for direction in ("forward", "backward"):
            assert ran(names, f"tensor_core_{direction}_kernel") == (half and allowed), (direction, names)
            cuda_cores = size in CUDA_CORES_HOLD and not (half and allowed)
            assert ran(names, f"persistent_{direction}_kernel") == cuda_cores, names
    if half and torch.cuda.get_device_capability() >= (9, 0):
        monkeypatch.setenv("LLTM_JIT_TENSOR_CORES", "1")
        for clusters in ("16", "0"):
            monkeypatch.setenv("LLTM_JIT_CLUSTERS", clusters)
            names = {n for n in kernels() if "tensor_core_" in n}
            clustered = size in IN_CLUSTERS and clusters == "16"
            assert len(names) == 2 and all(template_arguments(n)[3] == str(clustered).lower() for n in names), names
            forward = template_arguments(next(n for n in names if "forward" in n))
            assert forward[4] == str(clustered and size in FRAGMENTS_HELD).lower(), names


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_step_path_products_call_cublas_directly(dtype, monkeypatch):
    """The per-step path's products go to cuBLAS on torch's handle, not through ATen: over 9 steps
    no addmm runs per step (a build that found neither cuBLAS nor torch's handle would take ATen's
    products, as many as the steps)."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    input, weights, bias, h0, c0 = make_sequence(9, 3, 4, 6, device="cuda", seed=18)
    args = [a.detach().to(dtype).requires_grad_() for a in (input, weights, bias, h0, c0)]
    output, (h_n, c_n) = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
    calls = aten_calls(lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))
    calls += aten_calls(lambda: torch.autograd.grad(output.sum() + c_n.sum(), args))
    assert calls["aten::addmm_"] + calls["aten::addmm"] <= 2, calls


def runtime_calls(fn):
    """How many times fn called each CUDA runtime function (names as "cudaGraphLaunch")."""
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        fn()
        torch.cuda.synchronize()
    return collections.Counter(event.name for event in prof.events())


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_step_path_runs_as_graphs(dtype, monkeypatch):
    """The step path's loop runs each way as replays of one CUDA graph of 8 steps (a
    cudaGraphLaunch for each whole period; the steps past it, and a loop shorter than one, one by
    one), from torch's default stream and from a side stream alike; LLTM_JIT_STEP_GRAPHS=0
    launches every step by itself. Both match the reference, and each other in float64; a second
    call gives the first's results."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    for i, size in enumerate([(9, 3, 4, 6), (5, 2, 3, 10), (17, 3, 4, 6)]):
        args = [a.detach().to(dtype).requires_grad_() for a in make_sequence(*size, device="cuda", seed=19 + i)]
        torch.cuda.synchronize()  # the side stream's calls read them
        results = {}
        for graphs in ("1", "0"):
            monkeypatch.setenv("LLTM_JIT_STEP_GRAPHS", graphs)
            with torch.cuda.stream(torch.cuda.Stream() if i == 1 else torch.cuda.current_stream()):
                calls = runtime_calls(lambda: results.setdefault(graphs, run(lltm_sequence, args)))
                again = run(lltm_sequence, args)
            assert calls["cudaGraphLaunch"] == (2 * (size[0] // 8) if graphs == "1" else 0), calls
            for a, b in zip(results[graphs], again):
                assert torch.equal(a, b)
        exact = run(reference_lltm_sequence, [a.detach().double().requires_grad_() for a in args])
        eager = run(reference_lltm_sequence, args)
        for name, a, b, e, x in zip(NAMES, results["1"], results["0"], eager, exact):
            assert rel_err(a, x) <= 2 * rel_err(e, x) + 1e-5, name
            assert dtype != torch.float64 or rel_err(a, b) < 1e-12, name


@requires_cuda
def test_step_path_with_tf32_products(monkeypatch):
    """Where torch allows TF32 products, the float32 step path's products use them (its results
    move away from TF32-off's by TF32's rounding), the backward's through a row-major copy of
    W_h^T, and stay as close to float64's as an eager loop's under the same setting, with mixed
    lengths and without."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    args = [a.detach().float().requires_grad_() for a in make_sequence(10, 5, 6, 40, device="cuda", seed=24)]
    exact = [a.detach().double().requires_grad_() for a in args]
    for lengths in (torch.tensor([10, 0, 4, 9, 1]), None):
        plain = run(lltm_sequence, args, lengths=lengths)
        previous, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, True
        try:
            ours, eager = run(lltm_sequence, args, lengths=lengths), run(reference_lltm_sequence, args, lengths=lengths)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        reference = run(reference_lltm_sequence, exact, lengths=lengths)
        assert max(rel_err(a, b) for a, b in zip(ours, plain)) > 1e-5
        for name, a, e, x in zip(NAMES, ours, eager, reference):
            assert rel_err(a, x) <= 2 * rel_err(e, x) + 1e-5, name


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=str)
def test_step_path_backward_product_in_parts(dtype, monkeypatch):
    """Split-K on the step path: from state 176 the backward's product d_gates W_h runs in parts
    over its k (2 at state 176, 4 at 352, 8 at 704 but 4 for the half types; at batch 300 and
    state 352, 4 from float32's halved 8 and 2 for the half types), which the next step sums, rows
    past their length carrying grad_h_n; at state 704 the forward's h W_h^T runs in 2 in float32
    and float64. With mixed lengths (0 and the whole among them) and without, float64 matches the
    reference and the others stay as close to float64's as an eager loop's; the step loop's CUDA
    graphs replay with parts; gradcheck holds in parts."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    for i, (batch, state) in enumerate(((3, 176), (3, 352), (3, 704), (300, 352))):
        sequence = make_sequence(5, batch, 4, state, device="cuda", seed=30 + i)
        args = [a.detach().to(dtype).requires_grad_() for a in sequence]
        exact = [a.detach().double().requires_grad_() for a in args]
        for lengths in (torch.tensor([5, 0, 2] + [4] * (batch - 3)), None):
            if dtype == torch.float64:
                assert_matches(args, lengths=lengths)
                continue
            ours, eager = run(lltm_sequence, args, lengths=lengths), run(reference_lltm_sequence, args, lengths=lengths)
            reference = run(reference_lltm_sequence, exact, lengths=lengths)
            for name, a, e, x in zip(NAMES, ours, eager, reference):
                assert rel_err(a, x) <= 2 * rel_err(e, x) + 1e-5, (batch, state, name)
    if dtype == torch.float64:  # the graphs' replays with parts: 2 periods of 8 steps a direction at T = 17
        args = make_sequence(17, 3, 4, 704, device="cuda", seed=34)
        calls = runtime_calls(lambda: assert_matches(args))
        assert calls["cudaGraphLaunch"] == 4, calls
        input, weights, bias, h0, c0 = make_sequence(3, 2, 2, 176, device="cuda", seed=33)
        lengths = torch.tensor([3, 1])

        def fn(x, h, c):
            output, (h_n, c_n) = lltm_sequence(x, weights.detach(), bias.detach(), (h, c), lengths=lengths)
            return output, h_n, c_n

        assert torch.autograd.gradcheck(fn, (input, h0, c0), fast_mode=True)


@requires_cuda
def test_step_path_inside_a_callers_cuda_graph(monkeypatch):
    """Where the caller captures a CUDA graph, the step path's launches join that capture rather
    than making a graph of their own, and its replays follow new inputs."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    input, weights, bias, h0, c0 = make_sequence(7, 3, 4, 6, device="cuda", seed=20, requires_grad=False)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph asks
        lltm_sequence(input, weights, bias, (h0, c0))
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output, (h_n, c_n) = lltm_sequence(input, weights, bias, (h0, c0))
    for seed in (21, 22):
        input.copy_(make_sequence(7, 3, 4, 6, device="cuda", seed=seed)[0])
        graph.replay()
        expected, (expected_h, expected_c) = lltm_sequence(input, weights, bias, (h0, c0))
        for a, b in ((output, expected), (h_n, expected_h), (c_n, expected_c)):
            assert rel_err(a, b) < 1e-12


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("size", [(5, 8, 40), (64, 6, 512)], ids=lambda s: "x".join(map(str, s)))
def test_persistent_kernels_fall_back_where_the_gpu_holds_too_few_blocks(size, dtype, monkeypatch):
    """A tiling planned for four times the GPU's multiprocessors (as on a GPU shared with MPS, or
    one smaller than the device reports) needs more resident blocks than the GPU holds where its
    blocks wait for each other (64x6x512: W_h split over tiles): the op takes the per-step path
    there, launching no persistent kernel, and matches the reference. Where one block holds W_h
    (5x8x40) nothing waits: the persistent kernels still run."""
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL", raising=False)
    monkeypatch.setenv("LLTM_JIT_CLUSTERS", "0")  # clusters need one group resident, not all
    monkeypatch.setenv("LLTM_JIT_MULTIPROCESSORS", str(4 * torch.cuda.get_device_properties(0).multi_processor_count))
    args64 = make_sequence(7, *size, device="cuda", seed=17)
    args = [a.detach().to(dtype).requires_grad_() for a in args64]
    names = cuda_kernels(lambda: run(lltm_sequence, args))
    split = size[2] == 512
    for direction in ("forward", "backward"):
        assert ran(names, f"step_{direction}_") == split, names  # float32's forward: step_forward_parts_kernel
        assert (ran(names, f"persistent_{direction}_kernel") or ran(names, f"tensor_core_{direction}_kernel")) != split
    assert_no_worse_than_eager(args)


# The tensor-core paths whose drift over long sequences is held to eager's, with their sizes: the
# persistent kernels' split over tiles and groups, and the streamed forward (forced) where the
# persistent kernels' test holds them to it (at 130x16x200 in bfloat16, where every path's
# gradients over 256 steps are far off, both sides' d_input are 1.02 times eager's over four
# seeds: the kernels read the input projection rounded to the storage type, which the per-step
# path sums in float; benchmarks/NOTES.md, "Session 44").
LONG_SEQUENCE_PATHS = [("auto", size) for size in TENSOR_CORE_SIZES[1:]] + [
    ("streamed", size) for size in (TENSOR_CORE_SIZES[2], TENSOR_CORE_SIZES[4])]


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kernel,size", LONG_SEQUENCE_PATHS,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_tensor_cores_long_sequence(kernel, size, dtype, monkeypatch):
    """The tensor-core kernels (LONG_SEQUENCE_PATHS): over 256 steps our error against float64
    (the gradients' from what the forward saved too) is at most the eager loop's (as
    test_low_precision_long_sequence), as a mean over four seeds: at 600x8x256 every
    implementation's gradients are 20-40% off float64 there, and one seed's ratio to eager's
    ranges 0.2-3 for the step path and the kernels alike."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", kernel)
    monkeypatch.delenv("LLTM_JIT_TENSOR_CORES", raising=False)
    rows = precision.summary((256, *size), dtype, range(4), "cuda")
    for name, (ours, eager, _) in zip(NAMES, rows):
        assert ours <= eager, name


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_clusters_sum_as_the_exchange_through_l2(dtype, monkeypatch):
    """Where the tiling is the same with clusters and without (600x8x256 on the H200: 4 tiles of
    32 rows), the cluster's exchange gives the same bits, outputs and gradients alike: it moves h
    unchanged, and each d_h adds the tiles' shares in the same order."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL", raising=False)
    monkeypatch.delenv("LLTM_JIT_TENSOR_CORES", raising=False)
    args = [a.detach().to(dtype).requires_grad_() for a in make_sequence(16, 600, 8, 256, device="cuda", seed=1)]
    results = {}
    for clusters in ("16", "0"):
        monkeypatch.setenv("LLTM_JIT_CLUSTERS", clusters)
        results[clusters] = run(lltm_sequence, args)
    for name, a, b in zip(NAMES, results["16"], results["0"]):
        assert torch.equal(a, b), name


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("size", [(30, 8, 1400), (64, 8, 1024)], ids=lambda s: "x".join(map(str, s)))
def test_shared_gather_moves_h_unchanged(size, dtype, monkeypatch):
    """Where a group exchanges through L2 on sm_90, clusters of its blocks share the forward's
    gather of h, each copying its share of the rows into all of theirs: on the H200 clusters of 4
    at 88 tiles in one group short of 32 rows, of 2 at 64 tiles in two groups (the device holds 30
    clusters of 4), and of 2 at most with LLTM_JIT_CLUSTERS=2. The tiling is the same without them
    (0), and so are the bits of the outputs and gradients."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL", raising=False)
    monkeypatch.delenv("LLTM_JIT_TENSOR_CORES", raising=False)
    args = [a.detach().to(dtype).requires_grad_() for a in make_sequence(12, *size, device="cuda", seed=2)]
    results = {}
    for clusters in ("16", "2", "0"):
        monkeypatch.setenv("LLTM_JIT_CLUSTERS", clusters)
        names = cuda_kernels(lambda: lltm_sequence(*args[:3], (args[3], args[4])))
        assert ran(names, "tensor_core_forward_kernel"), names
        results[clusters] = run(lltm_sequence, args)
    for clusters in ("16", "2"):
        for name, a, b in zip(NAMES, results[clusters], results["0"]):
            assert torch.equal(a, b), (clusters, name)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("size", [TENSOR_CORE_SIZES[0], TENSOR_CORE_SIZES[2]], ids=lambda s: "x".join(map(str, s)))
def test_tensor_cores_read_weights_at_any_alignment(size, dtype, monkeypatch):
    """The tensor-core kernels load W_h 16 bytes at a time where its rows are 16-byte aligned, an
    element at a time otherwise: weights that start 2 bytes into their storage give the same
    bits as the same values aligned, in what the kernels write (one tile; a group of 16 tiles).
    cuBLAS's products (the input projection before the kernels, d_input and d_weights after them)
    may take another algorithm for the shifted weights; where the projection's bits differ, so do
    the kernels' results, which are then compared within 10 eps."""
    for name in ("LLTM_JIT_SEQUENCE_KERNEL", "LLTM_JIT_TENSOR_CORES", "LLTM_JIT_CLUSTERS"):
        monkeypatch.delenv(name, raising=False)
    args = [a.detach().to(dtype) for a in make_sequence(6, *size, device="cuda", seed=4)]
    storage = torch.empty(args[1].numel() + 1, device="cuda", dtype=dtype)
    shifted = storage[1:].view_as(args[1]).copy_(args[1])
    assert shifted.data_ptr() % 16 != 0 and args[1].data_ptr() % 16 == 0
    names = cuda_kernels(lambda: lltm_sequence(args[0], shifted, args[2]))
    assert ran(names, "tensor_core_forward_kernel"), names
    x, state = args[0].reshape(-1, size[1]), size[2]
    same_projection = torch.equal(*(torch.addmm(args[2], x, w[:, state:].t()) for w in (args[1], shifted)))
    results = [run(lltm_sequence, [a.requires_grad_() for a in (args[0], w, *args[2:])])
               for w in (args[1].clone(), shifted)]
    for name, a, b in zip(NAMES, *results):
        exact = same_projection and name not in ("d_input", "d_weights")
        assert torch.equal(a, b) if exact else rel_err(a, b) < 10 * torch.finfo(dtype).eps, name


def assert_low_precision_lengths(size, dtype, device):
    """Mixed lengths (0 and time among them), with and without an initial state: outputs and
    gradients within twice the eager loop's error against float64 of the same rounded inputs; past
    a sequence's end its output is zero and its state stays."""
    batch = size[0]
    args64 = make_sequence(24, *size, device=device, seed=16)
    low = [a.detach().to(dtype).requires_grad_() for a in args64]
    exact_args = [a.detach().double().requires_grad_() for a in low]
    lengths = torch.tensor([(24, 0, 7, 24, 1)[b % 5] if b < 5 else (b * 7) % 25 for b in range(batch)])
    for with_state in (True, False):
        ours = run(lltm_sequence, low, lengths=lengths, with_state=with_state)
        eager = run(reference_lltm_sequence, low, lengths=lengths, with_state=with_state)
        exact = run(reference_lltm_sequence, exact_args, lengths=lengths, with_state=with_state)
        for name, a, b, e in zip(NAMES, ours, eager, exact):
            assert rel_err(a, e) <= 2 * rel_err(b, e) + 1e-3, name
        assert torch.equal(ours[0][7:, 2], torch.zeros_like(ours[0][7:, 2]))
        if with_state:
            assert torch.equal(ours[1][1], low[3][1]) and torch.equal(ours[2][1], low[4][1])  # length 0


@requires_cuda
@pytest.mark.parametrize("clusters", ["16", "0"], ids=["clusters", "no_clusters"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("size", TENSOR_CORE_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_tensor_cores_with_lengths(size, dtype, clusters, monkeypatch):
    """Lengths on tensor cores (assert_low_precision_lengths), with the groups in clusters where
    the device runs them and not."""
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL", raising=False)
    monkeypatch.delenv("LLTM_JIT_TENSOR_CORES", raising=False)
    monkeypatch.setenv("LLTM_JIT_CLUSTERS", clusters)
    assert_low_precision_lengths(size, dtype, "cuda")


# (batch, features, state) for the streamed forward forced by LLTM_JIT_SEQUENCE_KERNEL=streamed: a
# group of 64 rows and one of 6, a last tile of 8 columns and a last chunk of 16 (one k tile); 3
# groups, the last of 2 rows, 7 tiles, the chunks of a state not a multiple of 64.
STREAMED_SIZES = [(70, 9, 72), (130, 16, 200)]


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("size", STREAMED_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_streamed_forward_matches_the_reference(size, dtype, monkeypatch):
    """The streamed forward (forced where other tilings fit too) with lengths, with and without an
    initial state (assert_low_precision_lengths), the backward running on what it saved; without
    a backward to follow it gives the same bits."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "streamed")
    monkeypatch.delenv("LLTM_JIT_TENSOR_CORES", raising=False)
    args = [a.to(dtype) for a in make_sequence(5, *size, device="cuda", seed=21)]
    assert ran(cuda_kernels(lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))),
               "streamed_forward_kernel")
    assert_low_precision_lengths(size, dtype, "cuda")
    kept = torch.ops.lltm_jit.sequence_forward(*args, None)
    with torch.no_grad():
        alone = torch.ops.lltm_jit.sequence_forward(*args, None, False)
    for a, b in zip(alone[:3], kept[:3]):
        assert torch.equal(a, b)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_streamed_forward_where_nothing_else_fits(dtype, monkeypatch):
    """At batch 256 and state 1024 no other persistent tiling fits a GPU of 128 multiprocessors or
    more (groups of at most 32 rows would outnumber them): the forward streams h (4 groups of 32
    tiles) and the backward takes the per-step path; the op opcheck's, and torch.compile's
    fullgraph gives its values. Its peak memory is at most the step path's, whose forward keeps a
    float buffer of the pre-activations of 8 steps, forward alone and with the backward. At batch
    128 (64 blocks, where it measured slower than the per-step path) both directions run per step."""
    if torch.cuda.get_device_properties(0).multi_processor_count < 128:
        pytest.skip("the streamed tiling of 256 x 1024 needs 128 multiprocessors")
    for name in ("LLTM_JIT_SEQUENCE_KERNEL", "LLTM_JIT_TENSOR_CORES", "LLTM_JIT_MULTIPROCESSORS"):
        monkeypatch.delenv(name, raising=False)
    args = [a.to(dtype).requires_grad_() for a in make_sequence(6, 256, 64, 1024, device="cuda", seed=22)]
    output, _ = lltm_sequence(args[0], args[1], args[2], (args[3], args[4]))
    names = cuda_kernels(lambda: torch.autograd.grad(output.sum(), args[:3])) | cuda_kernels(
        lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))
    assert ran(names, "streamed_forward_kernel") and ran(names, "step_backward_kernel"), names
    assert not ran(names, "step_forward_kernel") and not ran(names, "tensor_core_forward_kernel"), names
    half_batch = [a[:, :128] if a.dim() == 3 else a for a in args[:3]] + [a[:128] for a in args[3:]]
    names = cuda_kernels(lambda: lltm_sequence(half_batch[0], half_batch[1], half_batch[2],
                                               (half_batch[3], half_batch[4]))[0].sum().backward())
    assert ran(names, "step_forward_kernel") and ran(names, "step_backward_kernel"), names
    assert not ran(names, "streamed_forward_kernel") and not ran(names, "tensor_core_"), names
    torch.library.opcheck(torch.ops.lltm_jit.sequence_forward.default, (*[a.detach() for a in args], None))

    def fn(x, w, b, h0, c0):
        output, (h_n, c_n) = lltm_sequence(x, w, b, (h0, c0))
        return output.float().sum() + (h_n.float() * c_n.float()).sum()

    compiled = torch.compile(fn, fullgraph=True)
    for a, b in zip(torch.autograd.grad(compiled(*args), args), torch.autograd.grad(fn(*args), args), strict=True):
        assert torch.equal(a, b)

    def peak(kernel, grad):
        monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", kernel)
        run_once = lambda: (torch.autograd.grad(fn(*args), args) if grad else  # noqa: E731
                            torch.ops.lltm_jit.sequence_forward(*[a.detach() for a in args], None, False))
        run_once()  # warm: cuBLAS workspaces
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run_once()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    for grad in (False, True):
        assert peak("streamed", grad) <= peak("step", grad), grad


@requires_cuda
def test_streamed_forward_falls_back_where_the_gpu_holds_too_few_blocks(monkeypatch):
    """Planned for four times the GPU's multiprocessors, the streamed tiling of 32 groups of 7
    tiles needs more resident blocks than the GPU holds: the forward takes the per-step path and
    matches the reference."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "streamed")
    monkeypatch.setenv("LLTM_JIT_MULTIPROCESSORS", str(4 * torch.cuda.get_device_properties(0).multi_processor_count))
    args64 = make_sequence(3, 2048, 8, 200, device="cuda", seed=23)
    args = [a.detach().to(torch.bfloat16).requires_grad_() for a in args64]
    names = cuda_kernels(lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))
    assert ran(names, "step_forward_kernel") and not ran(names, "streamed_forward_kernel"), names
    assert_no_worse_than_eager(args)


@requires_cuda
def test_streamed_forward_takes_a_misaligned_initial_state(monkeypatch):
    """h0 two bytes past a 16-byte boundary (a contiguous view), which the streamed forward copies
    16 bytes at a time: it reads an aligned copy and matches the reference."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "streamed")
    args = [a.detach().to(torch.bfloat16) for a in make_sequence(4, 70, 9, 72, device="cuda", seed=24)]
    h0 = torch.empty(args[3].numel() + 1, dtype=torch.bfloat16, device="cuda")[1:].view_as(args[3])
    args[3] = h0.copy_(args[3])
    assert args[3].is_contiguous() and args[3].data_ptr() % 16 == 2
    args = [a.requires_grad_() for a in args]
    names = cuda_kernels(lambda: lltm_sequence(args[0], args[1], args[2], (args[3], args[4])))
    assert ran(names, "streamed_forward_kernel"), names
    assert_no_worse_than_eager(args)


@pytest.mark.parametrize("size", [(5, 8, 40), (12, 5, 33)], ids=lambda s: "x".join(map(str, s)))
def test_cpu_bfloat16_with_lengths(size, monkeypatch):
    """Lengths in the CPU's bfloat16 recurrence (on AVX512-BF16 where the CPU has it), in row
    blocks of 3 and 2, and 6 and 6 rows on two threads (assert_low_precision_lengths)."""
    monkeypatch.delenv("LLTM_JIT_CPU_RECURRENCE", raising=False)
    assert_low_precision_lengths(size, torch.bfloat16, "cpu")


def test_module_matches_the_cell_and_shares_its_state_dict(device):
    torch.manual_seed(0)
    cell = lltm_jit.LLTM(4, 6, device=device, dtype=torch.float64)
    layer = lltm_jit.LLTMSequence(4, 6, batch_first=True, device=device, dtype=torch.float64)
    layer.load_state_dict(cell.state_dict())
    assert repr(layer) == "LLTMSequence(4, 6, batch_first=True)"
    x = torch.randn(3, 5, 4, device=device, dtype=torch.float64)  # batch first
    output, (h_n, c_n) = layer(x)
    state = None
    for t in range(5):
        state = cell(x[:, t], state)
        assert rel_err(output[:, t], state[0]) < 1e-12
    assert h_n.shape == c_n.shape == (1, 3, 6)  # (num_layers * num_directions, batch, state_size)
    assert rel_err(h_n[0], state[0]) < 1e-12 and rel_err(c_n[0], state[1]) < 1e-12
    cell.load_state_dict(layer.state_dict())


def bad(index, value, lengths=None, **others):
    """The arguments with args[index] = value, and others by name (bias, h0, c0) replaced too."""
    args = make_sequence(4, 3, 5, 6, requires_grad=False)
    args[index] = value
    for name, t in others.items():
        args[("bias", "h0", "c0").index(name) + 2] = t
    return args, lengths


LENGTHS_CASES = {
    "lengths above time": (bad(0, None, torch.tensor([4, 5, 1])), r"lengths must lie in \[0, time\] = \[0, 4\], got 5"),
    "negative lengths": (bad(0, None, torch.tensor([-1, 2, 1])), r"lengths must lie in \[0, time\] = \[0, 4\], got -1"),
}
SHAPE_CASES = {
    "input rank 2": (bad(0, torch.randn(3, 5, dtype=torch.float64)), "lltm_sequence: input must have 3 dimensions"),
    "h0 rank 1": (bad(3, torch.randn(6, dtype=torch.float64)), "lltm_sequence: h0 must have 2 dimensions"),
    "h0 batch": (bad(3, torch.randn(2, 6, dtype=torch.float64)),
                 r"lltm_sequence: h0 must have shape \(batch, state_size\) = \(3, 6\), got \(2, 6\)"),
    "c0 state": (bad(4, torch.randn(3, 7, dtype=torch.float64)), r"c0 must have shape .* = \(3, 6\), got \(3, 7\)"),
    "c0 state, no h0": (bad(4, torch.randn(3, 7, dtype=torch.float64), h0=None),
                        r"c0 must have shape .* = \(3, 6\), got \(3, 7\)"),
    "no weight rows, no state": (bad(1, torch.randn(0, 5, dtype=torch.float64), h0=None, c0=None),
                                 r"weights must have a non-empty first dimension, got shape \(0, 5\)"),
    "input features": (bad(1, torch.randn(18, 12, dtype=torch.float64)),
                       r"input must have shape \(time, batch, input_features\) = \(4, 3, 6\) to match weights "
                       r"\(18, 12\), got \(4, 3, 5\)"),
    "weights no input columns": (bad(1, torch.randn(18, 6, dtype=torch.float64)),
                                 r"weights must have shape .* = \(18, 11\), got \(18, 6\)"),
    "weights of another state": (bad(1, torch.randn(21, 12, dtype=torch.float64)),
                                 r"weights must have shape .* = \(18, 11\), got \(21, 12\)"),
    "bias size": (bad(2, torch.randn(17, dtype=torch.float64)), "bias must have shape"),
    "mixed dtypes": (bad(2, torch.randn(18)), "all tensors must have one dtype: input is Double but bias is Float"),
    "integer input": (bad(0, torch.ones(4, 3, 5, dtype=torch.long)), "input must be a floating-point tensor"),
    "lengths dtype": (bad(0, None, torch.tensor([1.0, 2.0, 3.0])), "lengths must be an int64 tensor, got Float"),
    "lengths shape": (bad(0, None, torch.tensor([1, 2])), r"lengths must have shape \(batch,\) = \(3,\), got \(2,\)"),
}


def call_op(case_args):
    args, lengths = case_args
    if args[0] is None:
        args[0] = make_sequence(4, 3, 5, 6, requires_grad=False)[0]
    return lltm_sequence(args[0], args[1], args[2], (args[3], args[4]), lengths=lengths)


@pytest.mark.parametrize("case", [*SHAPE_CASES, *LENGTHS_CASES])
def test_bad_input_names_the_argument(case, backend):
    """The operators' checks, and the same from the fallback to the reference."""
    case_args, message = {**SHAPE_CASES, **LENGTHS_CASES}[case]
    with pytest.raises(RuntimeError, match=message):
        call_op(case_args)


@pytest.mark.parametrize("case", SHAPE_CASES)
def test_fake_kernel_gives_the_same_errors(case):
    """The fake kernels (torch.compile's view of the op) check the same rules with the same words."""
    case_args, message = SHAPE_CASES[case]
    args, lengths = case_args
    if args[0] is None:
        args[0] = make_sequence(4, 3, 5, 6, requires_grad=False)[0]
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fakes = [None if a is None else mode.from_tensor(a) for a in args]
        fake_lengths = None if lengths is None else mode.from_tensor(lengths)
        with pytest.raises(RuntimeError, match=message):
            torch.ops.lltm_jit.sequence_forward(*fakes, fake_lengths)


def sequence_backward_args(index=None, value=None):
    """The sequence backward's arguments (grad_output, grad_h_n, grad_c_n, input, weights, h0, c0,
    lengths, output, gates, cells, output_mask) from a forward, with args[index] = value."""
    input, weights, bias, h0, c0 = make_sequence(4, 3, 5, 6, requires_grad=False)
    lengths = torch.tensor([4, 2, 3])
    output, _, _, gates, cells = torch.ops.lltm_jit.sequence_forward(input, weights, bias, h0, c0, lengths, True)
    args = [torch.randn_like(output), torch.randn_like(h0), torch.randn_like(c0), input, weights, h0, c0, lengths,
            output, gates, cells, [True, True, True]]
    if index is not None:
        args[index] = value
    return args


BACKWARD_CASES = {
    "input rank": (3, torch.randn(3, 5, dtype=torch.float64), "input must have 3 dimensions"),
    # input gives the time: the saved tensors are named before lengths' values
    "input time": (3, torch.randn(3, 3, 5, dtype=torch.float64),
                   r"output must have shape \(time, batch, state_size\) = \(3, 3, 6\), got \(4, 3, 6\)"),
    "weights of another state": (4, torch.randn(21, 12, dtype=torch.float64), "h0 must have shape"),
    "h0 batch": (5, torch.randn(2, 6, dtype=torch.float64), "h0 must have shape"),
    "h0 dtype": (5, torch.randn(3, 6), "all tensors must have one dtype: input is Double but h0 is Float"),
    "lengths shape": (7, torch.tensor([1, 2]), r"lengths must have shape \(batch,\)"),
    "lengths dtype": (7, torch.tensor([1.0, 2.0, 3.0]), "lengths must be an int64 tensor"),
    "output batch": (8, torch.randn(4, 2, 6, dtype=torch.float64), "output must have shape"),
    "gates width": (9, torch.randn(4, 3, 17, dtype=torch.float64), "gates must have shape"),
    "cells transposed": (10, torch.randn(3, 4, 6, dtype=torch.float64).transpose(0, 1), "must be contiguous"),
    "cells None": (10, None, "cells must be a Tensor, got an undefined one"),
}


@pytest.mark.parametrize("case", BACKWARD_CASES)
def test_backward_fake_kernel_gives_the_same_errors(case):
    """The sequence backward's fake kernel checks what the forward saved as the op does, in the
    same words (not the incoming gradients: lltm_jit/checks.py says why; the op raises before it
    writes into gates)."""
    index, value, message = BACKWARD_CASES[case]
    args = sequence_backward_args(index, value)
    assert re.search(message, same_error_real_and_fake(torch.ops.lltm_jit.sequence_backward, args))


@requires_cuda
def test_mixed_devices():
    args = make_sequence(4, 3, 5, 6, requires_grad=False)
    with pytest.raises(RuntimeError, match="all tensors must be on one device: input is on cpu but h0 is on cuda"):
        lltm_sequence(args[0], args[1], args[2], (args[3].cuda(), args[4]))
    with pytest.raises(RuntimeError, match=r"lengths must be on the CPU or on input's device \(cpu\), got cuda:0"):
        lltm_sequence(args[0], args[1], args[2], (args[3], args[4]), lengths=torch.tensor([1, 2, 3], device="cuda"))


def test_backward_leaves_the_pre_activations_a_caller_holds(device):
    """The backward works in the saved pre-activations' memory only when nothing else sees it: a
    caller of the raw operator keeps its `gates` as they were."""
    args = make_sequence(5, 3, 4, 6, device=device, seed=9)
    output, h_n, c_n, gates, cells = torch.ops.lltm_jit.sequence_forward(*args, None)
    before, view = gates.detach().clone(), gates[1:]
    del gates
    (output.sum() + c_n.sum()).backward()
    assert torch.equal(view, before[1:])


def sequence_grad_case(seed=3):
    """A sequence's weights, the loss's closure, and its weights' gradient from the reference."""
    args = make_sequence(6, 3, 4, 5, seed=seed)
    weights = args[1]
    reference = reference_lltm_sequence(args[0], weights, args[2], (args[3], args[4]))[0].sum()
    expected = torch.autograd.grad(reference, weights)[0]
    return weights, lambda: lltm_sequence(args[0], weights, args[2], (args[3], args[4]))[0].sum(), expected


def test_a_backward_retried_after_a_hook_raised():
    """The first backward overwrote the saved pre-activations with their gradients, then a hook
    raised before autograd released the graph: a second backward is refused, as autograd refuses
    any second backward, never run on gradients taken for pre-activations."""
    weights, loss_of, _ = sequence_grad_case()
    loss = loss_of()
    raised = []

    def once(grad_inputs, grad_outputs):
        if not raised:
            raised.append(True)
            raise RuntimeError("a hook that failed")

    loss.grad_fn.next_functions[0][0].register_hook(once)
    with pytest.raises(RuntimeError, match="a hook that failed"):
        torch.autograd.grad(loss, weights)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        torch.autograd.grad(loss, weights)


def test_two_threads_backward_through_one_graph():
    """One thread's backward wins; the other's finds the graph released and raises, or (having
    run first) gets the same gradient: never a wrong one."""
    for _ in range(20):
        weights, loss_of, expected = sequence_grad_case()
        loss, results = loss_of(), []

        def backward():
            try:
                results.append(torch.autograd.grad(loss, weights)[0])
            except RuntimeError as error:
                results.append(error)

        threads = [threading.Thread(target=backward) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        grads = [r for r in results if isinstance(r, torch.Tensor)]
        assert grads and all(rel_err(g, expected) < 1e-12 for g in grads)
        assert all("second time" in str(r) for r in results if not isinstance(r, torch.Tensor))


def test_backward_leaves_what_a_saved_tensor_hook_keeps():
    """A pack hook may keep the saved tensors themselves: the backward then leaves them as they
    were (it works in a copy), and its gradients are right."""
    weights, loss_of, expected = sequence_grad_case()
    kept = []

    def pack(t):
        kept.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_of()
    before = [t.clone() for t in kept]
    assert rel_err(torch.autograd.grad(loss, weights)[0], expected) < 1e-12
    assert all(torch.equal(t, b) for t, b in zip(kept, before, strict=True))


@requires_cuda
@pytest.mark.parametrize("kernel", ["persistent", "step"])
def test_peak_memory_is_what_the_backward_keeps(kernel, monkeypatch):
    """Forward + backward of a sequence holds no more device memory than what it saves and returns:
    the pre-activations, cell states and outputs of every step, the final state and the gradients
    of the input and the parameters (the backward turns the saved pre-activations into their
    gradients in place, and its step buffers are gone before the products' gradients come). A
    Python loop over the step operator is no steady yardstick: its peak moved between 3.21 and
    3.56 MB from one run of the suite to another on an H200, where ours stayed within 8 KB."""
    if kernel == "step":
        monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "step")
    torch.manual_seed(0)
    cell = lltm_jit.LLTM(64, 96, device="cuda")
    x = torch.randn(32, 48, 64, device="cuda", requires_grad=True)
    params = [x, cell.weights, cell.bias]
    torch.autograd.grad(lltm_sequence(x, cell.weights, cell.bias)[0].sum(), params)  # warm: cuBLAS workspaces
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    torch.autograd.grad(lltm_sequence(x, cell.weights, cell.bias)[0].sum(), params)
    torch.cuda.synchronize()
    ours = torch.cuda.max_memory_allocated() - base
    (time, batch, _), state = x.shape, cell.state_size
    kept = time * batch * 5 * state + 2 * batch * state + sum(p.numel() for p in params)
    # Within one (batch, state) float buffer, for the allocator's rounding of each block to 512
    # bytes: a buffer kept per step, or a copy of the saved tensors, is 32 times more.
    assert ours <= 4 * (kept + batch * state)


def test_backward_operator_checks_grad_output():
    args = [a.detach() for a in make_sequence(4, 3, 5, 6)]
    output, h_n, c_n, gates, cells = torch.ops.lltm_jit.sequence_forward(*args, None, True)
    with pytest.raises(RuntimeError, match="all tensors must have one dtype: input is Double but grad_output is Float"):
        torch.ops.lltm_jit.sequence_backward(output.float(), None, None, args[0], args[1], args[3], args[4], None,
                                             output, gates, cells, [True, True, True])


def test_in_place_change_of_the_returned_pre_activations_is_refused():
    """The raw op's caller gets an alias of the saved pre-activations: changing it before the
    backward raises autograd's error instead of giving wrong gradients."""
    args = make_sequence(4, 3, 5, 6)
    output, h_n, c_n, gates, cells = torch.ops.lltm_jit.sequence_forward(*args, None)
    gates.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        output.sum().backward()
