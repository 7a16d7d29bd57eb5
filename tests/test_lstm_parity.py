"""lltm_jit.LLTMSequence in nn.LSTM's manner: layers, directions, dropout between layers,
batch_first, unbatched and packed input, and the state layout (layers * directions, batch, state)."""

import fractions
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import cuda_kernels, ran, rel_err, requires_cuda
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

import lltm_jit
from lltm_jit import reference_lltm_sequence
from lltm_jit.reference import reference_lltm_layers, reversed_within

FEATURES, STATE = 3, 5
TIME, BATCH = 6, 5
LENGTHS = [6, 0, 2, 5, 1]  # mixed, with 0 and TIME


def make_module(num_layers=1, device="cpu", seed=0, **options):
    torch.manual_seed(seed)
    return lltm_jit.LLTMSequence(FEATURES, STATE, num_layers, device=device, dtype=torch.float64, **options)


def randn(*shape, device="cpu", seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device)


def random_state(module, batch, device="cpu", seed=2):
    layers = module.num_layers * module.num_directions
    return randn(layers, batch, STATE, device=device, seed=seed), randn(layers, batch, STATE, device=device,
                                                                        seed=seed + 1)


def outputs_and_gradients(fn, leaves, seed=3):
    """fn() -> (output, (h_n, c_n)), and the gradients of `leaves` under random upstream gradients."""
    output, (h_n, c_n) = fn()
    outs = (output, h_n, c_n)
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t) for t in outs]
    return [*outs, *torch.autograd.grad(outs, leaves, grads)]


def split_layers(module):
    """One-layer modules with the same directions, each holding one layer of `module`'s parameters."""
    layers = []
    for layer in range(module.num_layers):
        features = module.input_features if layer == 0 else module.num_directions * module.state_size
        one = lltm_jit.LLTMSequence(features, module.state_size, bidirectional=module.bidirectional,
                                    device=module.weights_l0.device, dtype=torch.float64)
        own = rf"_l{layer}(?=_|$)"
        one.load_state_dict({re.sub(own, "_l0", name): p for name, p in module.named_parameters()
                             if re.search(own, name)})
        layers.append(one)
    return layers


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time_first", "batch_first"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one_way", "bidirectional"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_shapes_and_parameters_as_nn_lstm(num_layers, bidirectional, batch_first, batched):
    options = {"batch_first": batch_first, "bidirectional": bidirectional}
    ours = make_module(num_layers, **options)
    theirs = nn.LSTM(FEATURES, STATE, num_layers, dtype=torch.float64, **options)
    shape = ((BATCH, TIME) if batch_first else (TIME, BATCH)) if batched else (TIME,)
    x = randn(*shape, FEATURES)
    layers = num_layers * ours.num_directions
    state = tuple(randn(layers, *shape[1 if not batch_first else 0:][:1] if batched else (), STATE, seed=s)
                  for s in (2, 3))
    for given in (None, state):
        output, (h_n, c_n) = ours(x, given)
        want, (want_h, want_c) = theirs(x, given)
        assert (output.shape, h_n.shape, c_n.shape) == (want.shape, want_h.shape, want_c.shape)
    names = [f"{kind}_l{layer}{suffix}" for layer in range(num_layers) for suffix in ("", "_reverse")[:layers // num_layers]
             for kind in ("weights", "bias")]
    assert [name for name, _ in ours.named_parameters()] == names
    for layer in range(num_layers):
        for suffix in ("", "_reverse")[:ours.num_directions]:
            layer_features = theirs.get_parameter(f"weight_ih_l{layer}{suffix}").shape[1]
            assert ours.get_parameter(f"weights_l{layer}{suffix}").shape == (3 * STATE, STATE + layer_features)
            assert ours.get_parameter(f"bias_l{layer}{suffix}").shape == (3 * STATE,)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["one_way", "bidirectional"])
def test_packed_output_is_packed_as_nn_lstm_packs_it(bidirectional):
    ours, theirs = make_module(2, bidirectional=bidirectional), nn.LSTM(FEATURES, STATE, 2, dtype=torch.float64,
                                                                         bidirectional=bidirectional)
    packed = pack_padded_sequence(randn(TIME, BATCH, FEATURES), torch.tensor([4, 6, 1, 6, 3]), enforce_sorted=False)
    output, (h_n, _) = ours(packed)
    want, (want_h, _) = theirs(packed)
    assert isinstance(output, PackedSequence) and output.data.shape == want.data.shape
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        assert torch.equal(getattr(output, name), getattr(want, name)), name
    assert h_n.shape == want_h.shape


@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["full", "lengths"])
def test_bidirectional_is_two_one_way_passes(device, lengths):
    """Forward: the reference loop on x; reverse: the reference loop on each sequence reversed
    within its length, its output reversed back; past a sequence's length, zeros."""
    module = make_module(bidirectional=True, device=device)
    x = randn(TIME, BATCH, FEATURES, device=device).requires_grad_()
    h0, c0 = (s.requires_grad_() for s in random_state(module, BATCH, device))
    lengths_t = None if lengths is None else torch.tensor(lengths)
    leaves = (x, h0, c0, *module.parameters())
    ours = outputs_and_gradients(lambda: module(x, (h0, c0), lengths_t), leaves)

    def two_passes():
        m = module
        forward, (h_f, c_f) = reference_lltm_sequence(x, m.weights_l0, m.bias_l0, (h0[0], c0[0]), lengths=lengths_t)
        backward, (h_b, c_b) = reference_lltm_sequence(reversed_within(x, lengths_t), m.weights_l0_reverse,
                                                       m.bias_l0_reverse, (h0[1], c0[1]), lengths=lengths_t)
        output = torch.cat([forward, reversed_within(backward, lengths_t)], dim=2)
        return output, (torch.stack([h_f, h_b]), torch.stack([c_f, c_b]))

    want = outputs_and_gradients(two_passes, leaves)
    for i, (a, b) in enumerate(zip(ours, want, strict=True)):
        assert a.shape == b.shape and rel_err(a, b) < 1e-12, i
    if lengths is not None:
        past = torch.arange(TIME)[:, None] >= torch.tensor(lengths)
        assert (ours[0][past.to(device)] == 0).all() and (ours[0][~past.to(device)] != 0).all()


def persistent_forward_streams(fn):
    """The CUDA streams (the profiler's ids) that fn's persistent forward kernels ran on."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.device_resource_id for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA and "_forward_kernel<" in e.name}


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_directions_run_at_once_where_the_gpu_holds_both(dtype, monkeypatch):
    """On CUDA the reverse direction of a bidirectional layer runs on a stream of its own beside the
    forward's where both directions' persistent kernels fit on the GPU together (a small batch and
    state), and after it on the caller's stream where they do not (200x256 in float32, whose
    kernels fit once but not twice) or where LLTM_JIT_SEQUENCES_AT_ONCE=0. Outputs and gradients are the same
    either way, with lengths, an initial state and two layers. The reverse direction's stream runs
    at a greater priority than the caller's, so that its input product does not wait for the SMs
    that the forward direction's persistent kernel holds."""
    for name in ("LLTM_JIT_SEQUENCES_AT_ONCE", "LLTM_JIT_SEQUENCE_KERNEL", "LLTM_JIT_MULTIPROCESSORS"):
        monkeypatch.delenv(name, raising=False)
    torch.manual_seed(0)
    module = lltm_jit.LLTMSequence(24, 40, 2, bidirectional=True, device="cuda", dtype=dtype)
    x = randn(9, 6, 24, device="cuda").to(dtype).requires_grad_()
    h0, c0 = (randn(4, 6, 40, device="cuda", seed=s).to(dtype).requires_grad_() for s in (2, 3))
    lengths = torch.tensor([9, 0, 4, 9, 1, 7])
    leaves = (x, h0, c0, *module.parameters())

    def step():
        output, (h_n, c_n) = module(x, (h0, c0), lengths)
        return [output, h_n, c_n, *torch.autograd.grad((output.float().sum() + h_n.float().sum()
                                                         + c_n.float().sum()), leaves)]

    assert lltm_jit.ops.sequences_at_once(x, module.weights_l0)
    assert len(persistent_forward_streams(step)) == 2
    assert lltm_jit.modules._side_stream(x.device).priority < torch.cuda.current_stream().priority
    at_once = step()
    monkeypatch.setenv("LLTM_JIT_SEQUENCES_AT_ONCE", "0")
    assert not lltm_jit.ops.sequences_at_once(x, module.weights_l0)
    assert len(persistent_forward_streams(step)) == 1
    for a, b in zip(at_once, step(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    monkeypatch.delenv("LLTM_JIT_SEQUENCES_AT_ONCE")
    large = torch.empty(1, 200, 16, device="cuda")
    assert not lltm_jit.ops.sequences_at_once(large, torch.empty(3 * 256, 256 + 16, device="cuda"))
    assert not lltm_jit.ops.sequences_at_once(x.cpu(), module.weights_l0.cpu())


@requires_cuda
def test_directions_at_once_take_the_tiling_for_two(monkeypatch):
    """Where a direction's float32 kernels alone fill the GPU (64 rows at state 512 take groups of
    8 rows over 16 tiles: 128 blocks), a bidirectional layer's paired calls take groups of 16 rows
    (64 blocks each), whose partial sums share other shared memory, and both directions run at
    once. Against the float64 reference, with rows and columns that fill no group or tile, lengths
    and an initial state."""
    for name in ("LLTM_JIT_SEQUENCES_AT_ONCE", "LLTM_JIT_SEQUENCE_KERNEL", "LLTM_JIT_MULTIPROCESSORS"):
        monkeypatch.delenv(name, raising=False)
    if torch.cuda.get_device_properties(0).multi_processor_count < 128:
        pytest.skip("two launches of 64 blocks need 128 multiprocessors")
    torch.manual_seed(0)
    module = lltm_jit.LLTMSequence(37, 500, bidirectional=True, device="cuda")
    x = randn(7, 61, 37, device="cuda").float().requires_grad_()
    h0, c0 = (randn(2, 61, 500, device="cuda", seed=s).float().requires_grad_() for s in (2, 3))
    lengths = torch.arange(61) % 7 + 1  # 1 to 7: a PackedSequence for the reference
    leaves = (x, h0, c0, *module.parameters())
    assert lltm_jit.ops.sequences_at_once(x, module.weights_l0)

    def step():
        output, (h_n, c_n) = module(x, (h0, c0), lengths)
        return [output, h_n, c_n, *torch.autograd.grad(output.sum() + h_n.sum() + c_n.sum(), leaves)]

    ours = step()
    kernels = cuda_kernels(step)
    for direction in ("forward", "backward"):
        assert ran(kernels, f"persistent_{direction}_kernel<float, 16>"), direction
    assert len(persistent_forward_streams(step)) == 2
    # Forcing the streamed forward, which float32 has not, leaves the pair's tiling.
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", "streamed")
    assert ran(cuda_kernels(step), "persistent_forward_kernel<float, 16>")
    monkeypatch.delenv("LLTM_JIT_SEQUENCE_KERNEL")
    reference = module.to("cpu", torch.float64)
    x64, h64, c64 = (t.detach().cpu().double().requires_grad_() for t in (x, h0, c0))
    packed = pack_padded_sequence(x64, lengths, enforce_sorted=False)
    output, (h_n, c_n) = reference_lltm_layers(reference, packed, (h64, c64))
    want = [output, h_n, c_n, *torch.autograd.grad(output.sum() + h_n.sum() + c_n.sum(),
                                                    (x64, h64, c64, *reference.parameters()))]
    for i, (a, b) in enumerate(zip(ours, want, strict=True)):
        assert a.shape == b.shape and rel_err(a.cpu().double(), b) < 1e-5, i
    # A paired call alone at sizes with no tiling for two (200 rows at state 256) takes one
    # launch's, not the per-step path.
    lone = randn(3, 200, 16, device="cuda").float()
    weights, bias = randn(3 * 256, 256 + 16, device="cuda").float() / 16, randn(3 * 256, device="cuda").float()
    assert ran(cuda_kernels(lambda: lltm_jit.lltm_sequence(lone, weights, bias, paired=True)),
               "persistent_forward_kernel<float, ")


@requires_cuda
def test_directions_at_once_inside_a_callers_cuda_graph(monkeypatch):
    """A caller's CUDA graph of a bidirectional module whose directions run at once captures both
    streams (the side stream forks from the capture and joins it), and its replays follow new
    inputs as eager does."""
    monkeypatch.delenv("LLTM_JIT_SEQUENCES_AT_ONCE", raising=False)
    torch.manual_seed(0)
    module = lltm_jit.LLTMSequence(24, 40, 2, bidirectional=True, device="cuda")
    x = randn(9, 6, 24, device="cuda").float()
    assert lltm_jit.ops.sequences_at_once(x, module.weights_l0)
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(warm):  # warm-up, as torch.cuda.graph asks
        module(x)
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        output, (h_n, c_n) = module(x)
    for seed in (21, 22):
        x.copy_(randn(9, 6, 24, device="cuda", seed=seed))
        graph.replay()
        with torch.no_grad():
            expected, (expected_h, expected_c) = module(x)
        for a, b in ((output, expected), (h_n, expected_h), (c_n, expected_c)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["one_way", "bidirectional"])
def test_layers_are_one_layer_modules_stacked(device, bidirectional):
    """Three layers against three one-layer modules fed each other's outputs by hand, in eval
    mode, where dropout does nothing."""
    module = make_module(3, device=device, bidirectional=bidirectional, dropout=0.5).eval()
    x = randn(BATCH, TIME, FEATURES, device=device)  # batch first: the one-layer modules too
    module.batch_first = True
    h0, c0 = random_state(module, BATCH, device)
    lengths = torch.tensor(LENGTHS)
    output, (h_n, c_n) = module(x, (h0, c0), lengths)
    d = module.num_directions
    hs, cs = [], []
    for layer, one in enumerate(split_layers(module)):
        one.batch_first = True
        x, (h, c) = one(x, (h0[layer * d:(layer + 1) * d], c0[layer * d:(layer + 1) * d]), lengths)
        hs.append(h)
        cs.append(c)
    assert output.shape == (BATCH, TIME, d * STATE)
    for a, b in ((output, x), (h_n, torch.cat(hs)), (c_n, torch.cat(cs))):
        assert a.shape == b.shape and rel_err(a, b) < 1e-12


@pytest.mark.parametrize("batch_first", [False, True], ids=["time_first", "batch_first"])
@pytest.mark.parametrize("enforce_sorted", [False, True], ids=["unsorted", "sorted"])
def test_packed_sequence_is_padding_plus_lengths(device, enforce_sorted, batch_first):
    """A PackedSequence in gives a PackedSequence out, with the input's batch sizes and indices,
    and h_n, c_n in the caller's batch order: the padded input with lengths, outputs and
    gradients alike. The padding is random, not zeros: the module must not read it."""
    module = make_module(2, device=device, bidirectional=True, batch_first=batch_first)
    lengths = torch.tensor([6, 6, 4, 3, 1] if enforce_sorted else [4, 6, 1, 6, 3])
    x = randn(TIME, BATCH, FEATURES, device=device).requires_grad_()
    state = tuple(s.requires_grad_() for s in random_state(module, BATCH, device))
    leaves = (x, *state, *module.parameters())
    packed = pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    output, _ = module(packed, state)
    assert isinstance(output, PackedSequence)
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        a, b = getattr(output, name), getattr(packed, name)
        assert (a is None and b is None) or torch.equal(a, b), name

    def unpacked():
        output, final = module(packed, state)
        padded, out_lengths = pad_packed_sequence(output)
        assert torch.equal(out_lengths, lengths)
        return padded, final

    def padded():
        xs = x.transpose(0, 1) if batch_first else x
        output, final = module(xs, state, lengths)
        return (output.transpose(0, 1) if batch_first else output), final

    for i, (a, b) in enumerate(zip(outputs_and_gradients(unpacked, leaves),
                                   outputs_and_gradients(padded, leaves), strict=True)):
        assert a.shape == b.shape and rel_err(a, b) < 1e-14, i


@requires_cuda
@pytest.mark.parametrize("kernel", ["persistent", "step"])
@pytest.mark.parametrize("given", ["packed", "lengths"])
def test_lengths_never_wait_for_the_device(given, kernel, monkeypatch):
    """A PackedSequence (unsorted, with an initial state) or lengths on the CPU: neither the
    forward nor the backward of two bidirectional layers waits for the device (torch's sync debug
    mode raises at any call that would), on the persistent kernels and on the per-step path."""
    monkeypatch.setenv("LLTM_JIT_SEQUENCE_KERNEL", kernel)
    module = make_module(2, device="cuda", bidirectional=True)
    x = randn(TIME, BATCH, FEATURES, device="cuda").requires_grad_()
    state = tuple(s.requires_grad_() for s in random_state(module, BATCH, "cuda"))
    lengths = torch.tensor([4, 6, 1, 6, 3])
    # Packed beforehand: packing copies its sorted indices to the device from pageable memory
    packs = [pack_padded_sequence(x, lengths, enforce_sorted=False) for _ in range(2)]

    def fwd_bwd(packed):
        output, (h_n, c_n) = module(packed, state) if given == "packed" else module(x, state, lengths)
        data = output.data if given == "packed" else output
        (data.sum() + h_n.sum() + c_n.sum()).backward()

    fwd_bwd(packs[0])  # the first call's one-time work (handles, workspaces) is not what is checked
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fwd_bwd(packs[1])
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_dropout_between_layers_in_training_only():
    """Eval: no dropout, deterministic. Training: the same seed gives the same output, which is
    the layers by hand with F.dropout on every layer's output but the last."""
    module = make_module(3, dropout=0.5, bidirectional=True)
    plain = make_module(3, bidirectional=True, seed=1)
    plain.load_state_dict(module.state_dict())
    x = randn(TIME, BATCH, FEATURES)
    module.eval()
    evaluated = module(x)[0]
    assert torch.equal(evaluated, module(x)[0])
    assert torch.equal(evaluated, plain(x)[0]) and torch.equal(evaluated, plain.train()(x)[0])
    module.train()
    torch.manual_seed(7)
    trained, (h_n, _) = module(x)
    torch.manual_seed(7)
    assert torch.equal(trained, module(x)[0])
    assert rel_err(trained, evaluated) > 1e-2
    layers = split_layers(module)  # before seeding: making modules draws numbers
    torch.manual_seed(7)
    by_hand = x
    for layer, one in enumerate(layers):
        by_hand, (h, _) = one(by_hand)
        if layer < 2:
            by_hand = F.dropout(by_hand, 0.5, training=True)
    assert rel_err(trained, by_hand) < 1e-12 and rel_err(h_n[4:], h) < 1e-12


def test_dropout_arguments_as_nn_lstm():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        lltm_jit.LLTMSequence(3, 5, dropout=0.2)
    for bad in (-0.1, 1.5, True, "0.5", 0.5j):
        with pytest.raises(ValueError, match=r"dropout must be a number in \[0, 1\]"):
            lltm_jit.LLTMSequence(3, 5, 2, dropout=bad)
    for number in (np.float32(0.25), np.int64(0), fractions.Fraction(1, 4)):  # a real number, as nn.LSTM takes
        assert lltm_jit.LLTMSequence(3, 5, 2, dropout=number).dropout == nn.LSTM(3, 5, 2, dropout=number).dropout
    with pytest.raises(ValueError, match="num_layers must be positive, got 0"):
        lltm_jit.LLTMSequence(3, 5, 0)


def test_gradcheck_two_layers_bidirectional(device):
    """float64 gradients w.r.t. input, h0, c0 and every parameter, with mixed lengths."""
    torch.manual_seed(0)
    module = lltm_jit.LLTMSequence(2, 3, 2, bidirectional=True, device=device, dtype=torch.float64)
    x = randn(4, 3, 2, device=device).requires_grad_()
    h0, c0 = (randn(4, 3, 3, device=device, seed=s).requires_grad_() for s in (2, 3))
    names = [name for name, _ in module.named_parameters()]
    parameters = [p.detach().requires_grad_() for p in module.parameters()]
    lengths = torch.tensor([4, 0, 3])

    def f(x, h0, c0, *parameters):
        output, (h_n, c_n) = torch.func.functional_call(module, dict(zip(names, parameters)), (x, (h0, c0), lengths))
        return output, h_n, c_n

    assert torch.autograd.gradcheck(f, (x, h0, c0, *parameters))


def test_unbatched_is_a_batch_of_one(device):
    module = make_module(2, device=device, bidirectional=True)
    x = randn(TIME, FEATURES, device=device)
    h0, c0 = random_state(module, 1, device)
    output, (h_n, c_n) = module(x, (h0[:, 0], c0[:, 0]))
    want, (want_h, want_c) = module(x[:, None], (h0, c0))
    for a, b in ((output, want[:, 0]), (h_n, want_h[:, 0]), (c_n, want_c[:, 0])):
        assert a.shape == b.shape and torch.equal(a, b)


def test_state_dict_moves_between_the_cell_and_one_layer():
    """A cell's weights and bias are a one-layer, one-direction module's weights_l0 and bias_l0,
    both ways, also inside a larger model; a module of more layers or directions does not load
    into a cell, nor a cell into it."""
    torch.manual_seed(0)
    cell, layer = lltm_jit.LLTM(FEATURES, STATE), lltm_jit.LLTMSequence(FEATURES, STATE)
    layer.load_state_dict(cell.state_dict())
    assert torch.equal(layer.weights_l0, cell.weights) and torch.equal(layer.bias_l0, cell.bias)
    layer.reset_parameters()
    cell.load_state_dict(layer.state_dict())
    assert torch.equal(layer.weights_l0, cell.weights) and torch.equal(layer.bias_l0, cell.bias)
    outer_cell = nn.Sequential(nn.Linear(2, FEATURES), lltm_jit.LLTM(FEATURES, STATE))
    outer_layer = nn.Sequential(nn.Linear(2, FEATURES), lltm_jit.LLTMSequence(FEATURES, STATE))
    outer_layer.load_state_dict(outer_cell.state_dict())
    assert torch.equal(outer_layer[1].weights_l0, outer_cell[1].weights)
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\) in state_dict: \"weights_l1\""):
        cell.load_state_dict(lltm_jit.LLTMSequence(FEATURES, STATE, 2).state_dict())
    with pytest.raises(RuntimeError, match=r"Missing key\(s\) in state_dict: \"weights_l0_reverse\""):
        lltm_jit.LLTMSequence(FEATURES, STATE, bidirectional=True).load_state_dict(cell.state_dict())


def test_flatten_parameters_does_nothing():
    """nn.LSTM's flatten_parameters(), which code written for it calls, leaves the module as it was."""
    module = lltm_jit.LLTMSequence(4, 5, 2, bidirectional=True, dtype=torch.float64)
    x = torch.randn(6, 3, 4, dtype=torch.float64)
    before = ({name: p.clone() for name, p in module.named_parameters()}, module(x)[0])
    assert module.flatten_parameters() is None
    for name, p in module.named_parameters():
        assert torch.equal(p, before[0][name])
    assert torch.equal(module(x)[0], before[1])


def test_initialisation_and_repr():
    torch.manual_seed(0)
    module = lltm_jit.LLTMSequence(10, 20, 2, bidirectional=True)
    bound = 20 ** -0.5
    for p in module.parameters():
        assert p.abs().max() <= bound and p.std() > bound / 4  # uniform(-bound, bound), not zeros
    before = module.weights_l1_reverse.detach().clone()
    module.reset_parameters()
    assert not torch.equal(before, module.weights_l1_reverse)
    assert repr(module) == "LLTMSequence(10, 20, num_layers=2, bidirectional=True)"
    assert repr(lltm_jit.LLTMSequence(10, 20)) == "LLTMSequence(10, 20)"
    every = lltm_jit.LLTMSequence(10, 20, 3, batch_first=True, dropout=0.25, bidirectional=True)
    assert repr(every) == "LLTMSequence(10, 20, num_layers=3, batch_first=True, dropout=0.25, bidirectional=True)"


B = 4
# (module options, input shape, state shapes or a state, lengths, the error, its message)
MODULE_ERRORS = {
    "input features": ({}, (TIME, B, 4), None, None, RuntimeError,
                       "LLTMSequence(3, 5): input must have 3 features (input_features), got 4 (shape (6, 4, 4))"),
    "input rank": ({}, (2, TIME, B, 3), None, None, RuntimeError,
                   "LLTMSequence(3, 5): input must have shape (time, batch, input_features) or "
                   "(time, input_features), got (2, 6, 4, 3)"),
    "input rank, batch first": ({"batch_first": True}, (3,), None, None, RuntimeError,
                                "LLTMSequence(3, 5, batch_first=True): input must have shape "
                                "(batch, time, input_features) or (time, input_features), got (3,)"),
    "the cell's state layout": ({}, (TIME, B, 3), ((B, 5), (B, 5)), None, RuntimeError,
                                "LLTMSequence(3, 5): state's h must have shape "
                                "(num_layers * num_directions, batch, state_size) = (1, 4, 5), got (4, 5)"),
    "state of one direction": ({"num_layers": 2, "bidirectional": True}, (TIME, B, 3), ((2, B, 5), (4, B, 5)), None,
                               RuntimeError, "LLTMSequence(3, 5, num_layers=2, bidirectional=True): state's h must "
                               "have shape (num_layers * num_directions, batch, state_size) = (4, 4, 5), "
                               "got (2, 4, 5)"),
    "cell's batch": ({}, (TIME, B, 3), ((1, B, 5), (1, B + 1, 5)), None, RuntimeError,
                     "LLTMSequence(3, 5): state's cell must have shape "
                     "(num_layers * num_directions, batch, state_size) = (1, 4, 5), got (1, 5, 5)"),
    "unbatched input, batched state": ({}, (TIME, 3), ((1, 1, 5), (1, 1, 5)), None, RuntimeError,
                                       "LLTMSequence(3, 5): state's h must have shape "
                                       "(num_layers * num_directions, state_size) = (1, 5), got (1, 1, 5)"),
    "state a tensor": ({}, (TIME, B, 3), torch.zeros(1, B, 5), None, TypeError,
                       "LLTMSequence(3, 5): state must be a tuple (h, cell), got a Tensor"),
    "state a tuple of three": ({}, (TIME, B, 3), (torch.zeros(1, B, 5),) * 3, None, ValueError,
                               "LLTMSequence(3, 5): state must be a tuple (h, cell), got a tuple of 3"),
    "lengths unbatched": ({}, (TIME, 3), None, torch.tensor([2]), ValueError,
                          "LLTMSequence(3, 5): lengths needs a batched input, got input of shape (6, 3)"),
    # Bidirectional: the op checks lengths before the reverse direction gathers with them.
    "lengths past time": ({"bidirectional": True}, (TIME, B, 3), None, torch.tensor([1, 7, 2, 3]), RuntimeError,
                          "lltm_sequence: lengths must lie in [0, time] = [0, 6]"),
    "lengths' shape": ({"bidirectional": True}, (TIME, B, 3), None, torch.tensor([[1, 2, 2, 3]]), RuntimeError,
                       "lltm_sequence: lengths must have 1 dimensions (batch,), got 2"),
}


@pytest.mark.parametrize("case", MODULE_ERRORS, ids=list(MODULE_ERRORS))
def test_errors_name_the_module_and_its_terms(case):
    options, input_shape, state, lengths, error, message = MODULE_ERRORS[case]
    module = lltm_jit.LLTMSequence(3, 5, dtype=torch.float64, **options)
    if isinstance(state, tuple) and all(isinstance(s, tuple) for s in state):
        state = tuple(torch.randn(shape, dtype=torch.float64) for shape in state)
    with pytest.raises(error, match=re.escape(message)):
        module(torch.randn(input_shape, dtype=torch.float64), state, lengths)


def test_bias_false_as_in_lstm(device):
    """bias=False: nn.LSTM's parameters without its biases, and the output of a module whose
    biases are zero; a one-layer module's state_dict loads into a cell without bias."""
    options = {"num_layers": 2, "bidirectional": True, "dtype": torch.float64, "device": device}
    module = lltm_jit.LLTMSequence(3, 5, bias=False, **options)
    lstm = nn.LSTM(3, 5, bias=False, **options)
    assert [n.replace("weights_", "") for n, _ in module.named_parameters()] == [
        n.replace("weight_hh_", "").replace("weight_ih_", "") for n, _ in lstm.named_parameters()][::2]
    assert repr(module) == "LLTMSequence(3, 5, num_layers=2, bias=False, bidirectional=True)"
    with_bias = lltm_jit.LLTMSequence(3, 5, **options)
    with torch.no_grad():
        for name, p in with_bias.named_parameters():
            p.copy_(getattr(module, name) if name.startswith("weights") else torch.zeros_like(p))
    x = torch.randn(TIME, 2, 3, dtype=torch.float64, device=device)
    assert torch.equal(module(x)[0], with_bias(x)[0])
    cell = lltm_jit.LLTM(3, 5, bias=False)
    cell.load_state_dict(lltm_jit.LLTMSequence(3, 5, bias=False).state_dict())


@pytest.mark.parametrize("module_type", [lltm_jit.LLTM, lltm_jit.LLTMSequence])
def test_bias_false_after_meta_device_initialisation(module_type):
    """Built on the meta device, then given memory (to_empty, here NaN-filled as memory may be) and
    loaded, or loaded with assign=True: a module without bias computes as the one it was loaded
    from, as nn.LSTM does (neither route initialises or loads anything but parameters)."""
    source = module_type(3, 5, bias=False, dtype=torch.float64)
    x = torch.randn(2, 3, dtype=torch.float64) if module_type is lltm_jit.LLTM else torch.randn(TIME, 2, 3,
                                                                                                dtype=torch.float64)
    poisoned = module_type(3, 5, bias=False, dtype=torch.float64, device="meta")
    poisoned._apply(lambda t: torch.full_like(t, float("nan"), device="cpu"))  # to_empty, with NaN for memory
    poisoned.load_state_dict(source.state_dict())
    assigned = module_type(3, 5, bias=False, dtype=torch.float64, device="meta")
    assigned.load_state_dict(source.state_dict(), assign=True)
    for module in (poisoned, assigned):
        assert torch.equal(module(x)[0], source(x)[0])


@pytest.mark.parametrize("backend", ["reference"], indirect=True)
def test_the_fallback_compiles_and_exports(backend):
    """The reference fallback under torch.compile(fullgraph=True) and torch.export, with lengths:
    the operators' argument checks that it runs in eager mode stay out of the graphs."""
    module = lltm_jit.LLTMSequence(3, 5, dtype=torch.float64)
    x, lengths = torch.randn(TIME, 2, 3, dtype=torch.float64), torch.tensor([6, 2])
    eager = module(x, lengths=lengths)[0]
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")(x, lengths=lengths)[0]
    exported = torch.export.export(module, (x,), {"lengths": lengths}).module()(x, lengths=lengths)[0]
    assert torch.equal(compiled, eager) and torch.equal(exported, eager)
    cell = lltm_jit.LLTM(3, 5, dtype=torch.float64)
    assert torch.equal(torch.compile(cell, fullgraph=True, backend="aot_eager")(x[0])[0], cell(x[0])[0])


def test_packed_sequences_of_the_wrong_rank():
    """nn.utils.rnn packs sequences of any rank: 1-D sequences (a module of one input feature) are
    refused with the shape they need."""
    module = lltm_jit.LLTMSequence(1, 5, dtype=torch.float64)
    packed = torch.nn.utils.rnn.pack_sequence([torch.randn(3, dtype=torch.float64), torch.randn(2, dtype=torch.float64)])
    with pytest.raises(RuntimeError, match=re.escape(
            "LLTMSequence(1, 5): a PackedSequence's data must have shape (sum of the lengths, input_features), "
            "packed from sequences (length, input_features) each, got (5,)")):
        module(packed)
    assert module(torch.nn.utils.rnn.pack_sequence([torch.randn(3, 1, dtype=torch.float64)]))[0].data.shape == (3, 5)


def test_packed_input_carries_its_own_lengths():
    module = lltm_jit.LLTMSequence(3, 5, dtype=torch.float64)
    packed = pack_padded_sequence(torch.randn(TIME, 2, 3, dtype=torch.float64), torch.tensor([6, 2]))
    with pytest.raises(ValueError, match=re.escape("LLTMSequence(3, 5): lengths must be None for a PackedSequence")):
        module(packed, lengths=torch.tensor([6, 2]))


def test_torch_compile_fullgraph_layers_directions_lengths(device):
    """Two bidirectional layers with lengths and batch_first compile into one graph: outputs and
    parameter gradients as eager (on CUDA, whose eager layers run their directions at once, the
    graph's one after the other); in training, dropout between the layers runs in the graph."""
    torch._dynamo.reset()
    module = make_module(2, bidirectional=True, batch_first=True, dropout=0.5, device=device).eval()
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")  # inductor's input, not its codegen
    x = randn(BATCH, TIME, FEATURES, device=device)
    state, lengths = random_state(module, BATCH, device), torch.tensor(LENGTHS)
    parameters = list(module.parameters())
    got = outputs_and_gradients(lambda: compiled(x, state, lengths), parameters)
    want = outputs_and_gradients(lambda: module(x, state, lengths), parameters)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert rel_err(a, b) < 1e-13, i
    module.train()
    trained = compiled(x, state, lengths)[0]
    assert trained.shape == want[0].shape and rel_err(trained, want[0]) > 1e-2
