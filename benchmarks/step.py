"""The LLTM step: one cell update of a batch, its backends, its check and its physical floor.

lltm_jit is imported where a case is made or checked, not at the top: importing it builds the
kernels, and `bench.py --help` (which lists these backends) must answer without them.
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .cases import Kind, Runner, relative_errors
from .timing import Machine, synchronize

# The largest relative error ||out - ref|| / ||ref|| accepted against the float64 reference.
TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 3e-2}


@dataclass(frozen=True)
class Size:
    batch: int
    input_features: int
    state_size: int

    @classmethod
    def parse(cls, text: str) -> Size:
        match = re.fullmatch(r"(\d+)x(\d+)x(\d+)", text.strip())
        if not match or 0 in map(int, match.groups()):
            # A sequence's size spec (sequence.py) starts with one of these and goes on with ":".
            suffixes = " (a :suffix belongs to a sequence's size: --kind sequence)" if ":" in text else ""
            raise argparse.ArgumentTypeError(
                f"size {text!r}: expected BxFxS with positive integers, e.g. 16x32x128{suffixes}"
            )
        return cls(*map(int, match.groups()))

    def __str__(self) -> str:
        return f"{self.batch}x{self.input_features}x{self.state_size}"


@dataclass
class Case:
    """The tensors of one (size, dtype), allocated once and shared by the backends."""

    size: Size
    dtype: torch.dtype
    module: nn.Module  # an lltm_jit.LLTM; its parameters serve eager, lltm_jit and compile
    input: torch.Tensor  # the leaves, requiring grad
    old_h: torch.Tensor
    old_cell: torch.Tensor
    grads: tuple[torch.Tensor, torch.Tensor]  # incoming gradients of new_h and new_cell

    @classmethod
    def make(cls, size: Size, dtype: torch.dtype, device: torch.device) -> Case:
        import lltm_jit

        def randn(columns, requires_grad=False):
            shape = (size.batch, columns)
            return torch.randn(shape, device=device, dtype=dtype, requires_grad=requires_grad)

        f, s = size.input_features, size.state_size
        module = lltm_jit.LLTM(f, s, device=device, dtype=dtype)
        leaves = randn(f, True), randn(s, True), randn(s, True)
        return cls(size, dtype, module, *leaves, (randn(s), randn(s)))


def check(step: Callable, case: Case) -> dict[str, float]:
    """Relative errors ||out - ref|| / ||ref|| of new_h, new_cell and the gradients of the five
    inputs against the reference in float64, on fresh random inputs (the case's parameters)."""
    from lltm_jit import reference_lltm

    m = case.module
    x, h, c = (torch.randn_like(t).requires_grad_() for t in (case.input, case.old_h, case.old_cell))
    grads = tuple(torch.randn_like(g) for g in case.grads)
    leaves = (x, m.weights, m.bias, h, c)
    outputs = step(x, h, c)
    got = (*outputs, *torch.autograd.grad(outputs, leaves, grads))
    # The reference sees the very values the backend saw, so rounding the inputs is not counted.
    leaves64 = tuple(t.detach().double().requires_grad_() for t in leaves)
    outputs64 = reference_lltm(*leaves64)
    want = (*outputs64, *torch.autograd.grad(outputs64, leaves64, [g.double() for g in grads]))
    names = ("new_h", "new_cell", "d_input", "d_weights", "d_bias", "d_old_h", "d_old_cell")
    return relative_errors(names, got, want)


def floor_seconds(size: Size, mode: str, dtype: torch.dtype, machine: Machine) -> tuple[float, str]:
    """The least time one LLTM step can take here, and what bounds it ("compute" or "memory").

    FLOPs: the matrix products, 2 * B * (S + F) * 3S each: the gates in the forward, then
    d_[old_h, input] = d_gates @ weights and d_weights = d_gates^T @ [old_h, input] in the
    backward. The elementwise work (tens of FLOPs per B * S element) is left out.

    Bytes: every tensor that must cross memory, read or written once:
      forward   reads input (B*F), old_h, old_cell (B*S each), weights (3S * (S+F)), bias (3S);
                writes new_h, new_cell (B*S each) and, when a backward follows, what it keeps
                besides its inputs: the gate pre-activations (3 * B*S);
      backward  reads grad_h, grad_cell (B*S each), the kept gates, old_cell, input, old_h and
                weights; writes the gradients of input, weights, bias, old_h, old_cell.
    d_gates is not counted: a kernel that fused the elementwise pass into the products would
    never store it.
    """
    b, f, s = size.batch, size.input_features, size.state_size
    weights = 3 * s * (s + f)
    gemm_flops = 2 * b * (s + f) * 3 * s
    forward = (b * f + 2 * b * s + weights + 3 * s) + 2 * b * s
    if mode == "fwd":
        flops, elements = gemm_flops, forward
    else:
        kept = 3 * b * s
        backward_reads = 2 * b * s + kept + b * s + b * f + b * s + weights
        backward_writes = b * f + weights + 3 * s + 2 * b * s
        flops, elements = 3 * gemm_flops, forward + kept + backward_reads + backward_writes
    return machine.floor(flops, elements * dtype.itemsize, dtype)


# ---------------------------------------------------------------------------------------------
# The backends: each sets itself up for a case; its docstring is its line in bench.py --help.


def backward_step(forward: Callable[[], tuple], leaves: tuple, grads: tuple) -> Callable[[], object]:
    # autograd.grad rather than .backward(): nothing accumulates into .grad between repeats.
    return lambda: torch.autograd.grad(forward(), leaves, grads)


def lltm_runner(case: Case, step: Callable) -> Runner:
    """A backend computing the LLTM function: step(input, old_h, old_cell) -> (new_h, new_cell)
    with the case's module parameters; checked against the reference."""
    leaves = (case.input, case.module.weights, case.module.bias, case.old_h, case.old_cell)

    def forward():
        return step(case.input, case.old_h, case.old_cell)

    return Runner(forward, backward_step(forward, leaves, case.grads), check=lambda: check(step, case))


def eager_runner(case: Case) -> Runner:
    """the pure-PyTorch reference, eager"""
    from lltm_jit import reference_lltm

    m = case.module
    return lltm_runner(case, lambda x, h, c: reference_lltm(x, m.weights, m.bias, h, c))


def lltm_jit_runner(case: Case) -> Runner:
    """lltm_jit.LLTM"""
    return lltm_runner(case, lambda x, h, c: case.module(x, (h, c)))


def compile_runner(case: Case) -> Runner:
    """torch.compile of the reference (compile time reported apart)"""
    from lltm_jit import reference_lltm

    # Dynamo keeps a few graphs per function (8 by default), then silently runs eager: sizes x
    # dtypes x {no_grad, grad} would overflow that, so each case starts from an empty cache.
    torch.compiler.reset()
    compiled = torch.compile(reference_lltm, dynamic=False)
    m = case.module
    runner = lltm_runner(case, lambda x, h, c: compiled(x, m.weights, m.bias, h, c))
    start = time.perf_counter()
    with torch.no_grad():
        runner.forward()
    runner.train()  # the training graph, with its backward
    synchronize(case.input.device)
    runner.compile_s = time.perf_counter() - start
    runner.note = f"compiled in {runner.compile_s:.1f} s"
    return runner


def lstmcell_runner(case: Case) -> Runner:
    """nn.LSTMCell, hidden_size = state_size (a different cell: speed peer only)"""
    s = case.size
    cell = nn.LSTMCell(s.input_features, s.state_size, device=case.input.device, dtype=case.dtype)

    def forward():
        return cell(case.input, (case.old_h, case.old_cell))

    leaves = (case.input, case.old_h, case.old_cell, *cell.parameters())
    return Runner(forward, backward_step(forward, leaves, case.grads), note="peer (different cell)")


def flat_lstm(size, device: torch.device, dtype: torch.dtype, **options) -> nn.LSTM:
    """nn.LSTM(size.input_features, hidden_size=size.state_size, **options) on the device, its
    weights in cuDNN's one buffer."""
    lstm = nn.LSTM(size.input_features, size.state_size, device=device, dtype=dtype, **options)
    # Built on the device directly, its weights are not yet in cuDNN's one buffer, and every call
    # would copy them there ("RNN module weights are not part of single contiguous chunk").
    lstm.flatten_parameters()
    if dtype == torch.bfloat16 and device.type == "cuda" and torch.backends.cudnn.is_available():
        # flatten_parameters() passes bfloat16 by (torch's cudnn.is_acceptable lists half, float
        # and double), although cuDNN runs it: its call, as flatten_parameters() makes it.
        from torch.backends.cudnn import rnn

        with torch.no_grad():
            torch._cudnn_rnn_flatten_weight(lstm._flat_weights, 4 if lstm.bias else 2, lstm.input_size,
                                            rnn.get_cudnn_mode(lstm.mode), lstm.hidden_size, lstm.proj_size,
                                            lstm.num_layers, lstm.batch_first, bool(lstm.bidirectional))
    return lstm


def lstm_runner(case: Case) -> Runner:
    """nn.LSTM, one time step, cuDNN on CUDA (a different cell: speed peer only)"""
    lstm = flat_lstm(case.size, case.input.device, case.dtype)
    # (seq_len = 1, batch, features) leaves sharing the case's memory.
    x, h, c = (t.detach().unsqueeze(0).requires_grad_() for t in (case.input, case.old_h, case.old_cell))

    def forward():
        return lstm(x, (h, c))[1]  # (h_n, c_n)

    leaves = (x, h, c, *lstm.parameters())
    grads = tuple(g.unsqueeze(0) for g in case.grads)
    return Runner(forward, backward_step(forward, leaves, grads), note="peer (different cell)")


def gemm_runner(case: Case) -> Runner:
    """the matrix products of lltm_jit alone (default on CUDA only)"""
    weights, bias = case.module.weights.detach(), case.module.bias.detach()
    # The same products as lltm_jit's kernels, on operands made once so that only the products
    # are timed.
    x = torch.cat([case.old_h.detach(), case.input.detach()], dim=1)
    weights_t = weights.t()
    d_gates = torch.randn(case.size.batch, 3 * case.size.state_size, device=x.device, dtype=case.dtype)
    d_gates_t = d_gates.t()

    def forward():
        return torch.addmm(bias, x, weights_t)

    def train():
        forward()
        torch.mm(d_gates, weights)
        torch.mm(d_gates_t, x)

    return Runner(forward, train)


STEP = Kind(
    name="step",
    call="one LLTM step of a batch",
    make_case=Case.make,
    backends={
        "eager": eager_runner,
        "lltm_jit": lltm_jit_runner,
        "compile": compile_runner,
        "lstmcell": lstmcell_runner,
        "lstm": lstm_runner,
        "gemm": gemm_runner,
    },
    tolerance=lambda size, dtype: TOLERANCES[dtype],
    peers=("compile", "lstmcell", "lstm"),  # what lltm_jit competes with
    floor=floor_seconds,
    floor_backends=("eager", "lltm_jit", "compile", "gemm"),  # those doing the LLTM step's work
    yardstick="gemm",  # the products alone: what the fused elementwise work adds to them
)
