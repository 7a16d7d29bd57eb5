"""A whole sequence: T LLTM steps over a batch, through layers of the cell in one direction or
both, from a padded or a packed batch; its backends, its check and its physical floor.

lltm_jit is imported where a case is made or checked, not at the top (see step.py).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import re
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

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


# The optional suffixes of a sequence size, each at most once after BxFxS: its name -> the field it sets.
SUFFIXES = {"T": "steps", "L": "layers", "bi": "bidirectional", "packed": "packed", "tf32": "tf32"}
SPEC = "BxFxS, then any of :T<steps>, :L<layers> (positive), :bi, :packed, :tf32, each once, e.g. 64x256x512:T128:L2:bi"


@dataclass(frozen=True)
class SequenceSize:
    """T steps of a batch through `layers` layers of the cell, both ways with `bidirectional`;
    `packed`: a PackedSequence of the batch at packed_lengths; `tf32`: TF32 allowed in float32's
    products, ours and cuDNN's, while the case runs (see tolerance)."""

    batch: int
    input_features: int
    state_size: int
    steps: int
    layers: int = 1
    bidirectional: bool = False
    packed: bool = False
    tf32: bool = False

    @classmethod
    def parse(cls, text: str, steps: int) -> SequenceSize:
        """A size from its spec (SPEC); T is `steps` unless the spec gives it."""
        head, *suffixes = text.strip().split(":")
        base = Size.parse(head)
        fields = {}
        for suffix in suffixes:
            match = re.fullmatch(r"(T|L)([1-9][0-9]*)|(bi|packed|tf32)", suffix)
            field = SUFFIXES[match[1] or match[3]] if match else None
            if field is None or field in fields:
                problem = f"{suffix!r} twice" if field else f"unknown suffix {suffix!r}"
                raise argparse.ArgumentTypeError(f"size {text!r}: {problem}; expected {SPEC}")
            fields[field] = int(match[2]) if match[2] else True
        return cls(base.batch, base.input_features, base.state_size, **{"steps": steps, **fields})

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    def __str__(self) -> str:
        words = [f"{self.batch}x{self.input_features}x{self.state_size}", f"T={self.steps}"]
        words += [f"L={self.layers}"] if self.layers != 1 else []
        words += [word for word, given in (("bi", self.bidirectional), ("packed", self.packed),
                                           ("tf32", self.tf32)) if given]
        return " ".join(words)


def packed_lengths(size: SequenceSize) -> torch.Tensor:
    """A packed size's lengths, (batch,) int64 on the CPU: spread evenly from all its steps down to
    a quarter of them (128 to 32 for T = 128), in a shuffled order that is the same in every run.
    Unsorted, as pack_padded_sequence(enforce_sorted=False) packs them for us and nn.LSTM alike."""
    spread = torch.linspace(size.steps, max(size.steps // 4, 1), size.batch).round().long()
    return spread[torch.randperm(size.batch, generator=torch.Generator().manual_seed(0))]


def tensor_of(sequence: torch.Tensor | PackedSequence) -> torch.Tensor:
    """The tensor of an input or output: itself, or a PackedSequence's data."""
    return sequence.data if isinstance(sequence, PackedSequence) else sequence


def shaped_as(sequence: torch.Tensor | PackedSequence, data: torch.Tensor) -> torch.Tensor | PackedSequence:
    """`data` in place of `sequence`'s tensor: itself, or packed as `sequence` is."""
    if isinstance(sequence, PackedSequence):
        return PackedSequence(data, sequence.batch_sizes, sequence.sorted_indices, sequence.unsorted_indices)
    return data


def padded(sequence: torch.Tensor | PackedSequence) -> torch.Tensor:
    """(steps, batch, features): a PackedSequence padded with zeros, in the caller's batch order."""
    return pad_packed_sequence(sequence)[0] if isinstance(sequence, PackedSequence) else sequence


@dataclass
class Case:
    """The tensors of one (size, dtype), allocated once and shared by the backends."""

    size: SequenceSize
    dtype: torch.dtype
    # An lltm_jit.LLTMSequence of the size's layers and directions; its parameters serve every
    # LLTM backend.
    module: nn.Module
    # What every backend is fed: (steps, batch, input_features) requiring grad, or for a packed
    # size a PackedSequence whose data, (sum of the lengths, input_features), requires grad.
    input: torch.Tensor | PackedSequence

    @classmethod
    def make(cls, size: SequenceSize, dtype: torch.dtype, device: torch.device) -> Case:
        import lltm_jit

        module = lltm_jit.LLTMSequence(size.input_features, size.state_size, size.layers,
                                       bidirectional=size.bidirectional, device=device, dtype=dtype)
        input = torch.randn(size.steps, size.batch, size.input_features, device=device, dtype=dtype)
        if size.packed:
            input = pack_padded_sequence(input, packed_lengths(size), enforce_sorted=False)
        tensor_of(input).requires_grad_()
        return cls(size, dtype, module, input)


def check(sequence: Callable, case: Case) -> dict[str, float]:
    """Relative errors against reference_lltm_layers in float64, on fresh random inputs (packed as
    the case's), the case's parameters and random incoming gradients of all three results: output,
    h_n, c_n and the gradients of input, h0, c0 and every parameter from a random initial state;
    the same from a zero state (None, as the rows are timed: the op then makes its own zeros); and
    the outputs of a forward under no_grad from it (the fwd rows: the op keeps nothing for a
    backward then). A packed output is compared padded."""
    from lltm_jit.reference import reference_lltm_layers

    m, size = case.module, case.size
    x = torch.randn_like(tensor_of(case.input)).requires_grad_()
    state_shape = (size.layers * size.directions, size.batch, size.state_size)
    h0, c0 = (x.new_empty(state_shape).normal_().requires_grad_() for _ in range(2))
    # The reference sees the very values the backend saw, so rounding the inputs is not counted.
    m64 = copy.deepcopy(m).double()
    x64, h64, c64 = (t.detach().double().requires_grad_() for t in (x, h0, c0))
    names = ("output", "h_n", "c_n", "d_input", *(f"d_{name}" for name, _ in m.named_parameters()))
    errors = {}
    for state, state64, suffix in (((h0, c0), (h64, c64), ""), (None, None, " (zero state)")):
        leaves, leaves64 = (x, *m.parameters()), (x64, *m64.parameters())
        given = () if state is None else state
        output, (h_n, c_n) = sequence(shaped_as(case.input, x), state)
        outputs = (padded(output), h_n, c_n)
        grads = tuple(torch.randn_like(t) for t in outputs)
        got = (*outputs, *torch.autograd.grad(outputs, (*leaves, *given), grads))
        output64, (h_n64, c_n64) = reference_lltm_layers(m64, shaped_as(case.input, x64), state64)
        outputs64 = (output64, h_n64, c_n64)
        given64 = () if state64 is None else state64
        want = (*outputs64, *torch.autograd.grad(outputs64, (*leaves64, *given64), [g.double() for g in grads]))
        state_names = () if state is None else ("d_h0", "d_c0")
        errors |= relative_errors([n + suffix for n in (*names, *state_names)], got, want)
    with torch.no_grad():
        output, (h_n, c_n) = sequence(shaped_as(case.input, x), None)
    errors |= relative_errors([n + " (no_grad)" for n in names[:3]], (padded(output), h_n, c_n), outputs64)
    return errors


def tolerance(size: SequenceSize, dtype: torch.dtype) -> float:
    """TOLERANCES' for the dtype; with TF32 allowed, float32 takes float16's, since TF32 rounds the
    products' operands to float16's 10-bit mantissa."""
    return TOLERANCES[torch.float16 if size.tf32 and dtype == torch.float32 else dtype]


@contextlib.contextmanager
def tf32_allowed():
    """TF32 allowed while inside in float32's products, cuBLAS's (ours: the op follows torch's
    flag) and cuDNN's (nn.LSTM); both flags restored after."""
    previous = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = previous


def precision(size: SequenceSize) -> contextlib.AbstractContextManager:
    """What a case of the size runs in: TF32 allowed where it says so."""
    return tf32_allowed() if size.tf32 else contextlib.nullcontext()


def floor_seconds(size: SequenceSize, mode: str, dtype: torch.dtype,
                  machine: Machine) -> tuple[float | None, str | None]:
    """The least time one sequence can take here, and what bounds it ("compute" or "memory"); none
    for float32 with TF32 allowed, whose products run faster than the float32 peak measured (with
    TF32 off), so that a floor from it would be no bound.

    Per layer, of F input features (the previous layer's directions * S past the first), and per
    direction, over N tokens (T * B, or the sum of a packed batch's lengths):

    FLOPs: the matrix products, 2 * N * (S + F) * 3S for the gates of all steps in the forward,
    twice that in the backward (d_[h, x] and d_weights); the elementwise work is left out.

    Bytes: the tensors that must cross memory, once each: the forward reads the layer's input
    (N*F, once for both directions), weights and bias and writes output (N*S) and h_n, c_n; the
    backward reads the output's gradient, input, output (the steps' h) and weights, and writes
    the gradients of input, weights and bias. Cells and gates are not counted: a backward could
    recompute them.
    """
    if size.tf32 and dtype == torch.float32:
        return None, None
    b, s, d = size.batch, size.state_size, size.directions
    n = int(packed_lengths(size).sum()) if size.packed else size.steps * b
    flops = elements = 0
    for layer in range(size.layers):
        f = size.input_features if layer == 0 else d * s
        parameters = 3 * s * (s + f) + 3 * s
        forward_flops = d * 2 * n * (s + f) * 3 * s
        forward = n * f + d * (parameters + n * s + 2 * b * s)
        if mode == "fwd":
            flops, elements = flops + forward_flops, elements + forward
        else:
            backward = d * 2 * n * s + n * f + d * parameters + n * f + d * parameters
            flops, elements = flops + 3 * forward_flops, elements + forward + backward
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
    """forward() returns (output, state); the loss is the sum of the output (of a packed one's
    data). autograd.grad rather than .backward(): nothing accumulates into .grad between repeats."""
    return lambda: torch.autograd.grad(tensor_of(forward()[0]).sum(), leaves)


def lltm_runner(case: Case, sequence: Callable) -> Runner:
    """A backend computing the LLTM sequence with the case's module parameters, called as the
    module is: sequence(input, state) -> (output, (h_n, c_n)); timed from a zero state, checked
    against the reference."""
    leaves = (tensor_of(case.input), *case.module.parameters())

    def forward():
        return sequence(case.input, None)

    return Runner(forward, train_step(forward, leaves), check=lambda: check(sequence, case))


def lltm_jit_runner(case: Case) -> Runner:
    """lltm_jit.LLTMSequence: the sequence op"""
    return lltm_runner(case, case.module)


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
    from lltm_jit import lltm
    from lltm_jit.reference import reference_lltm_layers

    return lltm_runner(case, lambda x, state: reference_lltm_layers(case.module, x, state, step=lltm))


def eager_runner(case: Case) -> Runner:
    """a Python loop over the pure-PyTorch reference step, eager"""
    from lltm_jit.reference import reference_lltm_layers

    return lltm_runner(case, lambda x, state: reference_lltm_layers(case.module, x, state))


def lstm_runner(case: Case) -> Runner:
    """nn.LSTM, hidden_size = state_size, our layers and directions, cuDNN on CUDA (a different cell: speed peer)"""
    size, x = case.size, tensor_of(case.input)
    lstm = flat_lstm(size, x.device, case.dtype, num_layers=size.layers, bidirectional=size.bidirectional)

    def forward():
        return lstm(case.input)

    return Runner(forward, train_step(forward, (x, *lstm.parameters())), note="peer (4 gates)")


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
    tolerance=tolerance,
    floor=floor_seconds,
    floor_backends=("eager", "lltm_jit", "lltm_jit_step_kernels", "loop"),  # those doing the LLTM's work
    yardstick="lstm",  # cuDNN's LSTM on CUDA: lltm_jit's target is a time below its
    extras={"peak MiB": peak_memory_mib},
    context=precision,
)
