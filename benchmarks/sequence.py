"""A whole sequence: T LLTM steps over a batch, its backends, its check and its physical floor.

lltm_jit is imported where a case is made or checked, not at the top (see step.py).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .cases import Kind, Runner, relative_errors
from .step import TOLERANCES as STEP_TOLERANCES
from .step import Size, flat_lstm
from .timing import Machine, synchronize

# Low precision rounds h and the cell at every step, and each step carries that rounding into the
# next: a sequence accepts twice one step's error in half and bfloat16.
TOLERANCES = {
    dtype: 2 * tolerance if dtype in (torch.bfloat16, torch.float16) else tolerance
    for dtype, tolerance in STEP_TOLERANCES.items()
}
KERNEL_VARIABLE = "LLTM_JIT_SEQUENCE_KERNEL"  # "step": the CUDA op's per-step path (src/sequence_cuda.cpp)


@dataclass(frozen=True)
class SequenceSize:
    batch: int
    input_features: int
    state_size: int
    steps: int

    @classmethod
    def of(cls, size: Size, steps: int) -> SequenceSize:
        return cls(size.batch, size.input_features, size.state_size, steps)

    def __str__(self) -> str:
        return f"{self.batch}x{self.input_features}x{self.state_size} T={self.steps}"


@dataclass
class Case:
    """The tensors of one (size, dtype), allocated once and shared by the backends."""

    size: SequenceSize
    dtype: torch.dtype
    module: nn.Module  # a one-layer lltm_jit.LLTMSequence; its parameters serve every LLTM backend
    input: torch.Tensor  # (steps, batch, input_features), requiring grad

    @classmethod
    def make(cls, size: SequenceSize, dtype: torch.dtype, device: torch.device) -> Case:
        import lltm_jit

        module = lltm_jit.LLTMSequence(size.input_features, size.state_size, device=device, dtype=dtype)
        shape = (size.steps, size.batch, size.input_features)
        return cls(size, dtype, module, torch.randn(shape, device=device, dtype=dtype, requires_grad=True))


def check(sequence: Callable, case: Case) -> dict[str, float]:
    """Relative errors of output, h_n, c_n and the gradients of input, weights, bias, h0 and c0
    against the reference loop in float64, on fresh random inputs and initial state (the case's
    parameters) and random incoming gradients of all three results."""
    from lltm_jit import reference_lltm_sequence

    m = case.module
    x = torch.randn_like(case.input).requires_grad_()
    h0, c0 = (x.new_empty(case.size.batch, case.size.state_size).normal_().requires_grad_() for _ in range(2))
    leaves = (x, m.weights_l0, m.bias_l0, h0, c0)
    output, (h_n, c_n) = sequence(x, (h0, c0))
    outputs = (output, h_n, c_n)
    grads = tuple(torch.randn_like(t) for t in outputs)
    got = (*outputs, *torch.autograd.grad(outputs, leaves, grads))
    # The reference sees the very values the backend saw, so rounding the inputs is not counted.
    x64, w64, b64, h64, c64 = leaves64 = tuple(t.detach().double().requires_grad_() for t in leaves)
    output64, (h_n64, c_n64) = reference_lltm_sequence(x64, w64, b64, (h64, c64))
    outputs64 = (output64, h_n64, c_n64)
    want = (*outputs64, *torch.autograd.grad(outputs64, leaves64, [g.double() for g in grads]))
    names = ("output", "h_n", "c_n", "d_input", "d_weights", "d_bias", "d_h0", "d_c0")
    return relative_errors(names, got, want)


def floor_seconds(size: SequenceSize, mode: str, dtype: torch.dtype, machine: Machine) -> tuple[float, str]:
    """The least time one sequence can take here, and what bounds it ("compute" or "memory").

    FLOPs: the matrix products, 2 * T * B * (S + F) * 3S for the gates of all steps in the
    forward, twice that in the backward (d_[h, x] and d_weights); the elementwise work is left out.

    Bytes: the tensors that must cross memory, once each: the forward reads input (T*B*F),
    weights and bias and writes output (T*B*S) and h_n, c_n; the backward reads the output's
    gradient, input, output (the steps' h) and weights, and writes the gradients of input,
    weights and bias. Cells and gates are not counted: a backward could recompute them.
    """
    t, b, f, s = size.steps, size.batch, size.input_features, size.state_size
    parameters = 3 * s * (s + f) + 3 * s
    forward_flops = 2 * t * b * (s + f) * 3 * s
    forward = t * b * f + parameters + t * b * s + 2 * b * s
    if mode == "fwd":
        flops, elements = forward_flops, forward
    else:
        backward = 2 * t * b * s + t * b * f + parameters + t * b * f + parameters
        flops, elements = 3 * forward_flops, forward + backward
    return machine.floor(flops, elements * dtype.itemsize, dtype)


def peak_memory_mib(step: Callable[[], object], device: torch.device) -> float | None:
    """CUDA: the most memory one call has allocated at once beyond what was allocated before it,
    in MiB (what the caching allocator hands out, workspaces included); None elsewhere."""
    if device.type != "cuda":
        return None
    synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step()
    synchronize(device)
    return (torch.cuda.max_memory_allocated(device) - before) / 2**20


# ---------------------------------------------------------------------------------------------
# The backends: each sets itself up for a case; its docstring is its line in bench.py --help.


def train_step(forward: Callable[[], tuple], leaves: tuple) -> Callable[[], object]:
    """forward() returns (output, state); the loss is output.sum(). autograd.grad rather than
    .backward(): nothing accumulates into .grad between repeats."""
    return lambda: torch.autograd.grad(forward()[0].sum(), leaves)


def lltm_runner(case: Case, sequence: Callable) -> Runner:
    """A backend computing the LLTM sequence: sequence(input, state) -> (output, (h_n, c_n)) with
    the case's module parameters; timed from a zero state, checked against the reference."""
    leaves = (case.input, case.module.weights_l0, case.module.bias_l0)

    def forward():
        return sequence(case.input, None)

    return Runner(forward, train_step(forward, leaves), check=lambda: check(sequence, case))


def lltm_jit_runner(case: Case) -> Runner:
    """lltm_jit.LLTMSequence: the sequence op"""

    def sequence(x, state):  # the module's state has a leading (layers * directions) dimension
        output, (h_n, c_n) = case.module(x, None if state is None else (state[0][None], state[1][None]))
        return output, (h_n[0], c_n[0])

    return lltm_runner(case, sequence)


@contextlib.contextmanager
def per_step_kernels():
    """The CUDA sequence op's per-step path while inside: the op reads the variable at each call,
    forward and backward."""
    previous = os.environ.get(KERNEL_VARIABLE)
    os.environ[KERNEL_VARIABLE] = "step"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[KERNEL_VARIABLE]
        else:
            os.environ[KERNEL_VARIABLE] = previous


def lltm_jit_step_kernels_runner(case: Case) -> Runner:
    """the op with LLTM_JIT_SEQUENCE_KERNEL=step: a cuBLAS product per step (CUDA only)"""
    if case.input.device.type != "cuda":
        raise ValueError("lltm_jit_step_kernels: CUDA only (the CPU op has one path)")
    runner = lltm_jit_runner(case)

    def within(fn):
        def call():
            with per_step_kernels():
                return fn()

        return call

    return Runner(within(runner.forward), within(runner.train), check=within(runner.check))


def loop_runner(case: Case) -> Runner:
    """a Python loop over lltm_jit.lltm, the step op"""
    import lltm_jit

    m = case.module
    return lltm_runner(case, lambda x, state: lltm_jit.reference_lltm_sequence(
        x, m.weights_l0, m.bias_l0, state, step=lltm_jit.lltm))


def eager_runner(case: Case) -> Runner:
    """a Python loop over the pure-PyTorch reference step, eager"""
    from lltm_jit import reference_lltm_sequence

    m = case.module
    return lltm_runner(case, lambda x, state: reference_lltm_sequence(x, m.weights_l0, m.bias_l0, state))


def lstm_runner(case: Case) -> Runner:
    """nn.LSTM, hidden_size = state_size, cuDNN on CUDA (a different cell: speed peer only)"""
    lstm = flat_lstm(case.size, case.input.device, case.dtype)

    def forward():
        return lstm(case.input)

    return Runner(forward, train_step(forward, (case.input, *lstm.parameters())), note="peer (4 gates)")


SEQUENCE = Kind(
    name="sequence",
    call="T steps over a batch from a zero state (fwd+bwd: loss = output.sum())",
    make_case=Case.make,
    backends={
        "eager": eager_runner,
        "lltm_jit": lltm_jit_runner,
        "lltm_jit_step_kernels": lltm_jit_step_kernels_runner,
        "loop": loop_runner,
        "lstm": lstm_runner,
    },
    tolerances=TOLERANCES,
    floor=floor_seconds,
    floor_backends=("eager", "lltm_jit", "lltm_jit_step_kernels", "loop"),  # those doing the LLTM's work
    yardstick="lstm",  # cuDNN's LSTM on CUDA: lltm_jit's target is a time below its
    extras={"peak MiB": peak_memory_mib},
)
