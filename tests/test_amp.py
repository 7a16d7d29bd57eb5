"""lltm_jit under PyTorch's training machinery: torch.autocast (against casting by hand, in a model
that mixes nn.Linear with the cell and the sequence module), torch.compile of a training step
(no recompilation), and compiled autograd."""

import copy

import pytest
import torch
import torch.nn.functional as F
from helpers import make_inputs, rel_err, requires_cuda
from torch import nn

import lltm_jit

# (device, autocast dtype): CPU autocast runs bf16; CUDA runs both, fp16 with a GradScaler.
AMP_CASES = [
    ("cpu", torch.bfloat16),
    pytest.param("cuda", torch.float16, marks=requires_cuda),
    pytest.param("cuda", torch.bfloat16, marks=requires_cuda),
]


class Model(nn.Module):
    """nn.Linear -> LLTM (two steps) -> LLTMSequence -> nn.Linear, and LLTMSequence on the raw input."""

    def __init__(self, features=6, state=10, device=None):
        super().__init__()
        self.embed = nn.Linear(features, features, device=device)
        self.cell = lltm_jit.LLTM(features, state, device=device)
        self.seq = lltm_jit.LLTMSequence(features, state, batch_first=True, device=device)
        self.raw = lltm_jit.LLTMSequence(features, state, device=device)
        self.head = nn.Linear(state, 3, device=device)

    def forward(self, x, lengths):
        """x (batch, time, features): run under torch.autocast, as a user would."""
        y = self.embed(x)
        h, c = self.cell(y[:, 0])  # the zero state the module makes
        h, c = self.cell(y[:, 1], (h, c))
        out, (h_n, _) = self.seq(y, (h[None], c[None]), lengths=lengths)  # (layers, batch, state)
        raw, _ = self.raw(x.transpose(0, 1), lengths=lengths)  # float32 input, zero state
        return self.head(out), raw, h_n[0]

    def cast_by_hand(self, x, lengths, dtype):
        """What forward computes under autocast, with every float32 tensor cast to dtype by hand
        (each parameter once per forward, as autocast's cache does) and autocast off."""
        p = {name: t.to(dtype) for name, t in self.named_parameters()}
        x = x.to(dtype)
        y = F.linear(x, p["embed.weight"], p["embed.bias"])
        zeros = y.new_zeros(y.shape[0], self.cell.state_size)
        h, c = lltm_jit.lltm(y[:, 0], p["cell.weights"], p["cell.bias"], zeros, zeros)
        h, c = lltm_jit.lltm(y[:, 1], p["cell.weights"], p["cell.bias"], h, c)
        out, (h_n, _) = lltm_jit.lltm_sequence(y, p["seq.weights_l0"], p["seq.bias_l0"], (h, c), lengths=lengths,
                                               batch_first=True)
        raw, _ = lltm_jit.lltm_sequence(x.transpose(0, 1), p["raw.weights_l0"], p["raw.bias_l0"], lengths=lengths)
        return F.linear(out, p["head.weight"], p["head.bias"]), raw, h_n


def loss_of(outputs):
    head, raw, h_n = outputs
    return head.float().square().mean() + raw.float().sum() / 10 + h_n.float().sum()


def train_step(model, optimizer, scaler, run):
    """One step with the loss of run(); returns the outputs and the unscaled gradients."""
    outputs = run()
    scaler.scale(loss_of(outputs)).backward()
    scaler.unscale_(optimizer)
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    return outputs, grads


@pytest.mark.parametrize("device, dtype", AMP_CASES)
def test_autocast_matches_casting_by_hand(device, dtype, backend):
    """Under autocast the floating inputs and float32 parameters run in the autocast dtype, the
    outputs come out in it, and the float32 parameters get float32 gradients: the same, bit for bit,
    as casting by hand, through a training step (with a GradScaler for fp16)."""
    torch.manual_seed(0)
    model = Model(device=device)
    by_hand = copy.deepcopy(model)
    x = torch.randn(4, 5, 6, device=device)
    lengths = torch.tensor([5, 2, 0, 4])  # int64 on the CPU: autocast leaves it as it is

    def autocast_run():
        with torch.autocast(device, dtype=dtype):
            return model(x, lengths)

    steps = []
    for m, run in ((model, autocast_run), (by_hand, lambda: by_hand.cast_by_hand(x, lengths, dtype))):
        optimizer = torch.optim.SGD(m.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10, enabled=dtype == torch.float16)
        steps.append(train_step(m, optimizer, scaler, run))
    (outputs, grads), (expected_outputs, expected_grads) = steps
    for out, expected in zip(outputs, expected_outputs, strict=True):
        assert out.dtype == dtype
        assert torch.equal(out, expected)
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32
        assert grads[name].dtype == torch.float32, name
        assert torch.isfinite(grads[name]).all() and grads[name].abs().sum() > 0, name
        if backend == "extension":
            assert torch.equal(grads[name], expected_grads[name]), name
        else:
            # The fallback casts a parameter at each call, where autocast's cache casts it once:
            # the cell's two steps sum their gradients in float32, not in the autocast dtype.
            assert rel_err(grads[name], expected_grads[name]) < torch.finfo(dtype).eps, name
    for (name, a), b in zip(model.named_parameters(), by_hand.parameters()):
        # The optimizer stepped alike: no step skipped on one side only.
        assert rel_err(a, b) <= (0 if backend == "extension" else 1e-3), name


# On a machine without CUDA, torch warns that it disables the CUDA autocast this test enters.
@pytest.mark.filterwarnings("ignore:CUDA is not available:UserWarning")
def test_autocast_leaves_float64_and_other_devices_alone(device):
    """As for aten's operators: autocast casts only its own device's float32/16 tensors."""
    cell = lltm_jit.LLTM(3, 4, device=device, dtype=torch.float64)
    with torch.autocast(device, dtype=torch.bfloat16):
        h, c = cell(torch.randn(2, 3, device=device, dtype=torch.float64))
    assert h.dtype == c.dtype == torch.float64
    other = "cuda" if device == "cpu" else "cpu"
    seq = lltm_jit.LLTMSequence(3, 4, device=device)
    with torch.autocast(other, dtype=torch.bfloat16):
        out, (h_n, _) = seq(torch.randn(5, 2, 3, device=device))
    assert out.dtype == h_n.dtype == torch.float32


def make_regressor(device, dtype=torch.float32):
    torch.manual_seed(0)
    return nn.ModuleDict({
        "embed": nn.Linear(5, 6, device=device, dtype=dtype),
        "seq": lltm_jit.LLTMSequence(6, 8, batch_first=True, device=device, dtype=dtype),
        "head": nn.Linear(8, 1, device=device, dtype=dtype),
    })


def regression_loss(model, x, y, lengths):
    out, _ = model["seq"](model["embed"](x), lengths=lengths)
    return F.mse_loss(model["head"](out).float().squeeze(-1), y)


@pytest.mark.parametrize("backend, amp", [
    ("aot_eager", False),
    ("aot_eager", True),
    pytest.param("inductor", True, marks=pytest.mark.slow),  # inductor's code generation takes ~20 s
])
@torch._dynamo.config.patch(error_on_recompile=True)
def test_compiled_training_step_does_not_recompile(device, backend, amp):
    """Forward and loss compiled with fullgraph=True, then backward and an optimizer step, several
    times at one shape: one graph, no recompilation (dynamo's guards decide that, whatever the
    backend), and the eager run's parameters."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    autocast_dtype = torch.bfloat16 if amp else None

    def loss_fn(model, x, y, lengths):
        with torch.autocast(device, dtype=autocast_dtype or torch.bfloat16, enabled=amp):
            return regression_loss(model, x, y, lengths)

    compiled_loss = torch.compile(loss_fn, fullgraph=True, backend=backend)
    eager, compiled = make_regressor(device), make_regressor(device)
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(3, 7, 5, generator=gen).to(device), torch.randn(3, 7, generator=gen).to(device),
                torch.randint(0, 8, (3,), generator=gen)) for _ in range(4)]
    for model, fn in ((eager, loss_fn), (compiled, compiled_loss)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y, lengths in batches:
            fn(model, x, y, lengths).backward()
            optimizer.step()
            optimizer.zero_grad()
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    for (name, a), b in zip(compiled.named_parameters(), eager.parameters()):
        # Inductor fuses the elementwise work around the operators and rounds once where eager
        # rounds after each operation: bf16's rounding, or float32's.
        assert rel_err(a.detach(), b.detach()) < (1e-2 if amp else 1e-5), name


# torch's own patch, not monkeypatch's: pytest >= 9.2 undoes a setattr on a module by deleting
# the attribute where the module's __dict__ lacked it, which hides a config entry for good.
@torch._dynamo.config.patch(compiled_autograd=True)
def test_compiled_autograd(device):
    """A backward through both operators' Nodes under compiled autograd
    (torch._dynamo.config.compiled_autograd) traces the backward operators into its graph and
    gives eager's gradients."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    cell = lltm_jit.LLTM(4, 5, device=device, dtype=torch.float64)
    seq = lltm_jit.LLTMSequence(4, 5, device=device, dtype=torch.float64)
    x = torch.randn(6, 3, 4, device=device, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([6, 0, 3])
    leaves = [x, *cell.parameters(), *seq.parameters()]

    def gradients(backward):
        out, (h_n, c_n) = seq(x, lengths=lengths)
        h, c = cell(x[0], (h_n[0], c_n[0]))  # the one layer's state
        backward(out.sum() + (h * c).sum())
        grads = [leaf.grad for leaf in leaves]
        for leaf in leaves:
            leaf.grad = None
        return grads

    # The config takes effect where torch.compile is called; the backward's graph break hands it
    # to compiled autograd.
    compiled = gradients(torch.compile(lambda loss: loss.backward(), backend="aot_eager"))
    assert torch._dynamo.utils.counters["compiled_autograd"]["captures"] == 1
    for a, b in zip(compiled, gradients(lambda loss: loss.backward()), strict=True):
        assert rel_err(a, b) < 1e-12


@torch._dynamo.config.patch(compiled_autograd=True)
def test_compiled_autograd_across_sizes(device):
    """Compiled autograd reuses a traced backward for other sizes where it takes them as symbolic:
    the Nodes' sizes are symbolic too, so that each size gets its own gradients, the state's and
    the features' (a graph with one size fixed in it gave wrong input gradients)."""
    torch._dynamo.reset()
    backward = torch.compile(lambda loss: loss.backward(), backend="aot_eager")
    for seed, (batch, features, state) in enumerate([(3, 5, 7), (3, 5, 9), (3, 5, 11), (4, 6, 11), (2, 3, 5)]):
        args = make_inputs(batch, features, state, device=device, seed=seed)
        for t in args:
            t.grad = None
        new_h, new_cell = lltm_jit.lltm(*args)
        expected = torch.autograd.grad(new_h.sum() + new_cell.sum(), args, retain_graph=True)
        backward(new_h.sum() + new_cell.sum())
        for t, e in zip(args, expected, strict=True):
            assert rel_err(t.grad, e) < 1e-12, (batch, features, state)
