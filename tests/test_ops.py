"""The ops and the functional API against the pure-PyTorch reference."""

import itertools

import pytest
import torch
from helpers import (aten_calls, assert_matches_reference, assert_output_mask, assert_partial_gradients,
                     assert_within_torch_own_error, cpu_products_are_own, forward_backward, make_inputs,
                     product_dtypes, rel_err, requires_cuda, use_half_products)

import lltm_jit
from lltm_jit import lltm, reference_lltm

ALL = [True, True, True]  # the backward operator's output mask: every gradient
ODD_SHAPES = [(1, 1, 1), (1, 5, 3), (3, 1, 7), (7, 13, 9), (5, 17, 33), (16, 32, 128)]


@pytest.mark.parametrize("noncontiguous", [False, True])
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_reference_float64(device, shape, noncontiguous):
    assert_matches_reference(make_inputs(*shape, device=device, noncontiguous=noncontiguous))


def test_large_batch_split_weight_gradient(device):
    """On CUDA a [old_h, input] copy over 8 MiB gives way to two products into d_weights' column
    blocks (here 2100 x 600 float64, 10 MB)."""
    assert_matches_reference(make_inputs(2100, 37, 563, device=device))


def test_bias_of_shape_1_by_3s(device):
    ours = assert_matches_reference(make_inputs(4, 6, 5, device=device, bias_2d=True))
    assert ours[4].shape == (1, 15)


# On CUDA, (37, 29, 45): one element per access; (20, 24, 64): 16-byte accesses, one block of rows
# (the bias gradient written directly); (300, 24, 64): several blocks of rows, whose partial bias
# sums a second kernel adds up.
@pytest.mark.parametrize("shape", [(37, 29, 45), (20, 24, 64), (300, 24, 64)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_within_torch_own_error(device, dtype, shape):
    assert_within_torch_own_error(make_inputs(*shape, device=device), dtype)


@pytest.mark.parametrize("path", ["float", "native"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_cpu_half_products_in_float_without_dot_products(dtype, path, monkeypatch):
    """On the CPU a half type's products (the forward's, both of the backward's) run in float where
    the CPU has no dot products of the type (torch's own run 4-200x slower there than float's), else
    in the type; within torch's own error either way. Strided arguments with a (1, 3S) bias give
    the same results, and the backward operator under each output mask the full mask's."""
    runs_in = use_half_products(path, dtype, monkeypatch)
    args = assert_within_torch_own_error(make_inputs(37, 29, 45), dtype)
    assert product_dtypes(lambda: forward_backward(lltm, args)) == {runs_in}
    strided = make_inputs(37, 29, 45, dtype=dtype, noncontiguous=True, bias_2d=True)
    assert not strided[1].is_contiguous()
    for a, b in zip(forward_backward(lltm, strided), forward_backward(lltm, args), strict=True):
        assert torch.equal(a.reshape(b.shape), b)
    input, weights, _, old_h, old_cell = (a.detach() for a in args)
    new_h, new_cell, gates = torch.ops.lltm_jit.forward(*(a.detach() for a in args))
    backward_args = [torch.randn_like(new_h), torch.randn_like(new_cell), input, weights, old_h, gates, old_cell]
    full = torch.ops.lltm_jit.backward(*backward_args, ALL)
    for mask in itertools.product([False, True], repeat=3):
        assert_output_mask(torch.ops.lltm_jit.backward(*backward_args, list(mask))[:3], full[:3], mask)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_saturated_gates(device, dtype):
    """Gate pre-activations in the hundreds, where exp overflows (float16's range, the hardware
    approximations on CUDA): outputs and gradients finite and as close to float64 as eager's."""
    args64 = make_inputs(24, 5, 16, device=device, seed=5)
    args64[1] = (args64[1] * 300).detach().requires_grad_()
    args = assert_within_torch_own_error(args64, dtype)
    gates = torch.cat([args[3], args[0]], 1).double() @ args[1].double().t()
    assert gates.abs().max() > 200


NONFINITE_GATES = [float("-inf"), -100.0, -88.5, -1.0, 0.0, 1.0, 100.0, float("inf"), float("nan")]
NONFINITE_CELLS = [float("-inf"), -1.0, 1.0, float("inf"), float("nan")]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_nonfinite_values_as_the_reference(device, dtype):
    """Every combination of infinite, NaN, overflowing and ordinary gate pre-activations (the bias,
    one combination per state column, with zero weights) and old_cell values: NaN, inf and -inf
    where the reference has them, in the outputs and the gradients. sigmoid(z) is 0 for
    z <= -88.72 (-88.5 gives a subnormal), so a candidate of inf gives NaN there, not inf. The
    reference runs in the math type (float for half and bfloat16, which eager PyTorch would round
    to 0 between its operations)."""
    combos = torch.tensor(list(itertools.product(NONFINITE_GATES, repeat=3)), dtype=torch.float64)
    state, batch = combos.shape[0], len(NONFINITE_CELLS)
    args = [torch.ones(batch, 1), torch.zeros(3 * state, state + 1), combos.t().reshape(-1), torch.ones(batch, state),
            torch.tensor(NONFINITE_CELLS)[:, None].expand(batch, state)]
    args = [a.to(device, dtype).requires_grad_() for a in args]
    math_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    ref_args = [a.detach().to(math_dtype).requires_grad_() for a in args]
    ours = forward_backward(lltm, args)
    ref = forward_backward(reference_lltm, ref_args)
    eps = torch.finfo(dtype).eps
    names = ["new_h", "new_cell", "d_input", "d_weights", "d_bias", "d_old_h", "d_old_cell"]
    new_cell = ours[1]
    assert new_cell.isnan().any() and new_cell.isposinf().any() and new_cell.isneginf().any()
    for name, a, b in zip(names, ours, ref, strict=True):
        torch.testing.assert_close(a, b.to(dtype), rtol=4 * eps, atol=4 * eps, equal_nan=True, msg=name)


def unaligned(t):
    """A contiguous copy of t that starts one element into its storage (never 16-byte aligned)."""
    storage = torch.empty(t.numel() + 1, device=t.device, dtype=t.dtype)
    return storage[1:].view(t.shape).copy_(t).detach().requires_grad_(t.requires_grad)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_unaligned_storage(device, dtype):
    """Unaligned tensors (no 16-byte vector access on CUDA) give what aligned copies give: through
    autograd (the forward's inputs) and through the backward operator itself (its inputs)."""
    args = make_inputs(40, 16, 64, device=device, dtype=dtype)
    shifted = [unaligned(t) for t in args]
    assert all(t.data_ptr() % 16 != 0 for t in shifted)
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5 if dtype == torch.float32 else 1e-2
    for a, b in zip(forward_backward(lltm, shifted), forward_backward(lltm, args)):
        assert rel_err(a, b) < tolerance

    input, weights, _, old_h, old_cell = (a.detach() for a in args)
    new_h, new_cell, gates = torch.ops.lltm_jit.forward(*[a.detach() for a in args])
    backward_args = [torch.randn_like(new_h), torch.randn_like(new_cell), input, weights, old_h, gates, old_cell]
    ours = torch.ops.lltm_jit.backward(*[unaligned(t) for t in backward_args], ALL)
    for a, b in zip(ours, torch.ops.lltm_jit.backward(*backward_args, ALL)):
        assert rel_err(a, b) < tolerance


def test_in_place_change_of_the_returned_state(device):
    """Sequence code resets the state in place (at sequence ends): the backward recomputes
    new_cell from old_cell, so the returned state may change, with the reference's gradients."""
    args = make_inputs(4, 3, 6, device=device)
    keep = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64, device=device)[:, None]

    def step_then_reset(*a):
        new_h, new_cell = a[0], a[1]
        return new_h.mul_(keep), new_cell.mul_(keep)

    assert_matches_reference(args, ours=lambda *a: step_then_reset(*lltm(*a)),
                             ref=lambda *a: step_then_reset(*reference_lltm(*a)))


def test_in_place_change_of_a_kept_input_is_refused(device):
    """old_cell is kept for the backward: changing it in place before the backward must raise
    autograd's error, not give wrong gradients."""
    args = [a.detach().clone() for a in make_inputs(4, 3, 6, device=device)]
    old_cell = args[4]
    params = [a.requires_grad_() for a in args[:4]]
    new_h, new_cell = lltm(*args)
    old_cell.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad((new_h.sum() + new_cell.sum()), params)


def test_forward_mode_ad_is_refused(device):
    import torch.autograd.forward_ad as fwAD

    args = make_inputs(3, 4, 5, device=device, requires_grad=False)
    with fwAD.dual_level():
        dual = fwAD.make_dual(args[3], torch.randn_like(args[3]))
        with pytest.raises(RuntimeError, match="lltm: forward-mode AD is not supported"):
            lltm(args[0], args[1], args[2], dual, args[4])


def test_gradcheck_float64(device):
    args = make_inputs(3, 4, 5, device=device, seed=3)
    assert torch.autograd.gradcheck(lltm, args)
    args = make_inputs(2, 3, 4, device=device, seed=4, noncontiguous=True, bias_2d=True)
    assert torch.autograd.gradcheck(lltm, args)


def backward_op_args(args):
    """The backward operator's arguments but the mask, from the forward operator on args."""
    new_h, new_cell, gates = torch.ops.lltm_jit.forward(*[a.detach() for a in args])
    input, weights, _, old_h, old_cell = (a.detach() for a in args)
    return [torch.randn_like(new_h), torch.randn_like(new_cell), input, weights, old_h, gates, old_cell]


def test_opcheck(device):
    for dtype in (torch.float64, torch.float32):
        args = make_inputs(5, 7, 6, device=device, dtype=dtype)
        torch.library.opcheck(torch.ops.lltm_jit.forward.default, args)
        for mask in (ALL, [False, True, False]):  # outputs left out come back as None
            torch.library.opcheck(torch.ops.lltm_jit.backward.default, (*backward_op_args(args), mask))


@pytest.mark.parametrize("mask", list(itertools.product([False, True], repeat=3)), ids=str)
def test_backward_output_mask(device, mask):
    """The backward operator returns None for the outputs its mask leaves out, and the others as
    with the full mask."""
    backward_args = backward_op_args(make_inputs(5, 7, 6, device=device))
    full = torch.ops.lltm_jit.backward(*backward_args, ALL)
    assert_output_mask(torch.ops.lltm_jit.backward(*backward_args, list(mask)), full, [*mask, True])


# Which of (input, weights, bias, old_h, old_cell) require a gradient, and the backward's matrix
# products that this leaves: d_[old_h, input] = d_gates W (needed for either), d_weights =
# d_gates^T [old_h, input] (joined by at::cat on CUDA; by rows of its own on the CPU).
PARTIAL_GRADIENTS = {
    "all": ((True, True, True, True, True), {"aten::mm": 2, "aten::cat": 1}),
    "frozen parameters": ((True, False, False, True, True), {"aten::mm": 1, "aten::cat": 0}),
    "no input gradient": ((False, True, True, True, True), {"aten::mm": 2, "aten::cat": 1}),
    "weights only": ((False, True, False, False, False), {"aten::mm": 1, "aten::cat": 1}),
    "bias only": ((False, False, True, False, False), {"aten::mm": 0, "aten::cat": 0}),
    "old_cell only": ((False, False, False, False, True), {"aten::mm": 0, "aten::cat": 0}),
}


@pytest.mark.parametrize("case", PARTIAL_GRADIENTS)
def test_gradients_of_the_inputs_that_need_them(device, case, monkeypatch):
    """Inputs that require no gradient (frozen weights, a constant input): the others' gradients
    equal the reference's, and the backward leaves out the products only the former need."""
    requires, products = PARTIAL_GRADIENTS[case]

    def args():
        return [a.detach().requires_grad_(r) for a, r in zip(make_inputs(7, 5, 6, device=device), requires)]

    if device == "cpu":  # the products the profiler counts: the ATen path's
        assert_partial_gradients(lltm, reference_lltm, args(), {})  # the values through the CPU's own products
        monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", "aten")
        products = {name: count for name, count in products.items() if name != "aten::cat"}
    assert_partial_gradients(lltm, reference_lltm, args(), products)


@pytest.mark.parametrize("recurrence", [None, "aten"], ids=lambda r: r or "default")
def test_gradients_autograd_grad_was_asked_for(device, recurrence, monkeypatch):
    """Every input requires a gradient but autograd.grad asks for some: the backward computes
    those alone (autograd's graph task says which, through the node's task_should_compute_output).
    The profiler counts the products where they are ATen's: on CUDA, and on the CPU's ATen path."""
    if recurrence is not None:
        if device != "cpu":
            pytest.skip("a choice of the CPU's products")
        monkeypatch.setenv("LLTM_JIT_CPU_RECURRENCE", recurrence)
    counted = not cpu_products_are_own(device)
    args = make_inputs(7, 5, 6, device=device)
    grads = [torch.randn(7, 6, dtype=torch.float64, device=device) for _ in range(2)]
    for wanted, products in (([2], 0), ([1], 1), ([0, 2, 4], 1), ([3], 1)):
        leaves = [args[i] for i in wanted]
        ref = torch.autograd.grad(reference_lltm(*args), leaves, grads)
        outputs = lltm(*args)
        ours = []
        calls = aten_calls(lambda: ours.extend(torch.autograd.grad(outputs, leaves, grads)))
        for a, b in zip(ours, ref, strict=True):
            assert rel_err(a, b) < 1e-12
        assert calls["aten::mm"] == (products if counted else 0), wanted


def test_every_output_element_written(device):
    """With fill_uninitialized_memory, torch.empty is NaN-filled: an unwritten element shows."""
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        # On CUDA: one element per access (odd state) and 16-byte accesses over several blocks of
        # rows (state 64, batch 300), whose partial bias sums go through a workspace.
        for shape in [(1, 1, 1), (9, 5, 131), (64, 3, 257), (300, 7, 64)]:
            outs = forward_backward(lltm, make_inputs(*shape, device=device, dtype=torch.float32))
            assert all(torch.isfinite(t).all() for t in outs)
    finally:
        torch.use_deterministic_algorithms(False)


def test_empty_batch(device):
    args = make_inputs(0, 6, 5, device=device)
    new_h, new_cell = lltm(*args)
    assert new_h.shape == new_cell.shape == (0, 5)
    (new_h.sum() + new_cell.sum()).backward()
    assert args[0].grad.shape == (0, 6)
    assert torch.equal(args[1].grad, torch.zeros_like(args[1]))
    assert torch.equal(args[2].grad, torch.zeros_like(args[2]))


def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()
    module = lltm_jit.LLTM(11, 13, device=device, dtype=torch.float64)
    compiled = torch.compile(module, fullgraph=True)
    x = torch.randn(6, 11, device=device, dtype=torch.float64)
    state = tuple(torch.randn(6, 13, device=device, dtype=torch.float64) for _ in range(2))
    for out, ref in zip(compiled(x, state), module(x, state)):
        assert rel_err(out, ref) < 1e-14
    compiled(x, state)[0].sum().backward()
    grads = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    module(x, state)[0].sum().backward()
    for g, p in zip(grads, module.parameters()):
        assert rel_err(g, p.grad) < 1e-12


def test_torch_compile_dynamic_shapes_one_graph(device):
    """Under dynamic=True one graph serves other batch, feature and state sizes (the autograd
    node's sizes are symbolic), with eager's gradients."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()

    def fn(*args):
        new_h, new_cell = lltm(*args)
        return (new_h * new_cell).sum()

    compiled = torch.compile(fn, fullgraph=True, dynamic=True)
    for seed, sizes in enumerate([(3, 5, 7), (5, 3, 9), (2, 4, 7)]):
        args = make_inputs(*sizes, device=device, seed=seed)
        for a, b in zip(torch.autograd.grad(compiled(*args), args), torch.autograd.grad(fn(*args), args), strict=True):
            assert rel_err(a, b) < 1e-12
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_cpu_and_cuda_agree(dtype):
    args = make_inputs(33, 21, 70, dtype=dtype)
    cpu = forward_backward(lltm, args)
    cuda = forward_backward(lltm, [a.detach().cuda().requires_grad_() for a in args])
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for a, b in zip(cuda, cpu):
        assert rel_err(a, b) < tol


@requires_cuda
def test_batch_beyond_65535():
    assert_matches_reference(make_inputs(70_001, 3, 5, device="cuda", dtype=torch.float64))


@requires_cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_runs_on_the_inputs_device():
    args = make_inputs(8, 5, 7, device="cuda:1")
    with torch.cuda.device(0):
        ours = assert_matches_reference(args)
    for a in ours:
        assert a.device == torch.device("cuda:1")


def test_gradient_through_one_output_only(device):
    args = make_inputs(4, 3, 6, device=device)
    for index in (0, 1):
        ours = torch.autograd.grad(lltm(*args)[index].sum(), args)
        ref = torch.autograd.grad(reference_lltm(*args)[index].sum(), args)
        for a, b in zip(ours, ref):
            assert rel_err(a, b) < 1e-12


def test_double_backward_is_refused(device):
    args = make_inputs(3, 4, 5, device=device)
    with pytest.raises(RuntimeError, match="double backward"):  # raised by the first backward
        torch.autograd.grad(lltm(*args)[0].sum(), args, create_graph=True)


def test_compile_checks_shapes_while_tracing():
    torch._dynamo.reset()
    args = make_inputs(3, 4, 5, requires_grad=False)
    args[2] = torch.randn(7, dtype=torch.float64)
    with pytest.raises(Exception, match="bias must have shape"):
        torch.compile(lltm, fullgraph=True)(*args)


def test_compile_caches_are_keyed_on_the_build():
    """torch.compile's on-disk caches key a graph on the graph alone: the build's key joins theirs,
    so that a rebuilt library (an edited schema or autograd) is never served a stale graph."""
    tag = f"lltm_jit-{lltm_jit.build_info()['key'][:12]}"
    assert tag in torch.compiler.config.cache_key_tag.split(":")
