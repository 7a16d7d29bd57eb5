"""The LLTM operators: loading the compiled library, their fake kernels, and the
functional entry points `lltm` and `lltm_sequence`.

The C++ library defines ``<namespace>::forward`` and ``backward`` (one step) and
``sequence_forward`` and ``sequence_backward`` (a whole sequence), their CPU and CUDA kernels and
the autograd of the forwards, and ``sequences_at_once`` (whether two sequences of a size run side
by side); their fake kernels are registered here. The build loaded at
import uses the namespace ``lltm_jit`` (``torch.ops.lltm_jit.*``). Torch can neither unload a
library nor redefine an operator, so `reload` gives each rebuilt library a namespace of its own
and points `lltm` at it.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import warnings

import torch

from . import checks, jit
from .reference import reference_lltm, reference_lltm_sequence

NAMESPACE = "lltm_jit"

_builds: dict[str, jit.Build] = {}  # namespace -> loaded build
_active: jit.Build | None = None  # the build lltm() runs; None: the reference fallback
_forward = None  # torch.ops.<active namespace>.forward.default
_sequence_forward = None  # torch.ops.<active namespace>.sequence_forward.default
_sequences_at_once = None  # torch.ops.<active namespace>.sequences_at_once.default
_fallback_reason: str | None = None


def _register_fake_kernels(namespace: str) -> None:
    """Shapes of one build's ops, for torch.compile and meta tensors (autograd is in C++)."""
    ops = getattr(torch.ops, namespace)

    @torch.library.register_fake(ops.forward.default)
    def _(input, weights, bias, old_h, old_cell):
        batch, state = checks.check_step(input, weights, bias, old_h, old_cell)
        new = input.new_empty((batch, state))
        return new, torch.empty_like(new), input.new_empty((batch, 3 * state))

    @torch.library.register_fake(ops.backward.default)
    def _(grad_h, grad_cell, input, weights, old_h, gates, old_cell, output_mask):
        batch, features, state = checks.check_step_backward(grad_h, grad_cell, input, weights, old_h, gates, old_cell)
        want_old_h_input, want_weights, want_bias = output_mask
        return (
            input.new_empty((batch, state + features)) if want_old_h_input else None,
            weights.new_empty(weights.shape) if want_weights else None,
            weights.new_empty((weights.shape[0],)) if want_bias else None,
            old_cell.new_empty((batch, state)),
        )

    @torch.library.register_fake(ops.sequence_forward.default)
    def _(input, weights, bias, h0, c0, lengths, for_backward=None, paired=False):
        time, batch, state = checks.check_sequence_call(input, weights, bias, h0, c0, lengths)
        output = input.new_empty((time, batch, state))
        if for_backward is False:  # what only the backward reads comes back empty
            gates, cells = input.new_empty((0,)), input.new_empty((0,))
        else:
            gates, cells = input.new_empty((time, batch, 3 * state)), torch.empty_like(output)
        return output, input.new_empty((batch, state)), input.new_empty((batch, state)), gates, cells

    @torch.library.register_fake(ops.sequences_at_once.default)
    def _(input, weights):
        op = "lltm_sequences_at_once"
        checks.check_same_kind(op, [("input", input), ("weights", weights)])
        checks.check_rank(op, input, "input", 3, "(time, batch, input_features)")
        checks.check_weight_rows(op, weights)
        return False  # a traced graph keeps one stream

    @torch.library.register_fake(ops.sequence_backward.default)
    def _(grad_output, grad_h_n, grad_c_n, input, weights, h0, c0, lengths, output, gates, cells, output_mask,
          paired=False):
        _, batch, state = checks.check_sequence_backward(input, weights, h0, c0, lengths, output, gates, cells)
        want_input, want_weights, want_bias = output_mask
        return (
            torch.empty_like(input, memory_format=torch.contiguous_format) if want_input else None,
            weights.new_empty(weights.shape) if want_weights else None,
            weights.new_empty((weights.shape[0],)) if want_bias else None,
            output.new_empty((batch, state)),
            output.new_empty((batch, state)),
        )


def _tag_compile_caches(key: str) -> None:
    """Key torch.compile's on-disk caches on the build too: they key a compiled graph on the
    graph, which names our operators but not what they do in C++ (their autograd, their schemas'
    defaults), so an edited build would be served graphs compiled for the one before."""
    tag = f"lltm_jit-{key[:12]}"
    current = torch.compiler.config.cache_key_tag
    if tag not in current.split(":"):
        torch.compiler.config.cache_key_tag = f"{current}:{tag}" if current else tag


def _use(spec: jit.BuildSpec) -> jit.Build:
    global _active, _forward, _sequence_forward, _sequences_at_once
    if spec.namespace in _builds:  # loaded before: nothing is built now
        _builds[spec.namespace] = dataclasses.replace(_builds[spec.namespace], built_now=False)
    else:
        build = jit.load(spec)
        _register_fake_kernels(spec.namespace)
        _tag_compile_caches(build.key)
        _builds[spec.namespace] = build
    _active = _builds[spec.namespace]
    _forward = getattr(torch.ops, spec.namespace).forward.default
    _sequence_forward = getattr(torch.ops, spec.namespace).sequence_forward.default
    _sequences_at_once = getattr(torch.ops, spec.namespace).sequences_at_once.default
    return _active


def load_at_import() -> None:
    """Build (first time) or load the library; on failure, fall back only if asked to."""
    global _fallback_reason
    try:
        _use(jit.BuildSpec.current(NAMESPACE))
    except jit.BuildError as error:
        if not jit.env_flag("LLTM_JIT_FALLBACK"):
            raise jit.BuildError(
                f"{error}\n(To run on the slow pure-PyTorch reference instead, set LLTM_JIT_FALLBACK=1.)"
            ) from None
        _fallback_reason = str(error)
        warnings.warn(
            f"{error}\nLLTM_JIT_FALLBACK is set: lltm_jit runs the pure-PyTorch reference, "
            "which is correct but not fast.",
            RuntimeWarning,
            stacklevel=3,
        )


def reload(src=None) -> jit.Build:
    """Rebuild from the sources as they are now and make `lltm` and `LLTM` use that build.

    For kernel iteration in a running session: edit ``src/``, call ``lltm_jit.reload()``; or
    edit a copy of it and call ``lltm_jit.reload(copy)``, and ``lltm_jit.reload()`` goes back.
    src: a folder of sources (default: the package's own, `jit.source_dir`); BuildError, before
    anything is built, if it has no C++ sources.
    A changed build gets its own operator namespace ``lltm_jit_<id>``, ``<id>`` the first 12 hex
    digits of the sources' key under ``lltm_jit`` (torch cannot redefine ``torch.ops.lltm_jit.*``,
    which keeps naming the build loaded at import).
    """
    global _fallback_reason
    spec = jit.BuildSpec.current(NAMESPACE, src=src)
    if NAMESPACE in _builds and _builds[NAMESPACE].key != spec.key():
        spec = jit.BuildSpec.current(f"{NAMESPACE}_{spec.key()[:12]}", src=src)
    build = _use(spec)
    _fallback_reason = None
    return build


def backend() -> str:
    """``"extension"`` when the compiled kernels run, ``"reference"`` in the fallback."""
    return "extension" if _active is not None else "reference"


def build_info() -> dict:
    """What runs: the backend, the active build's key, namespace, library and devices, and what
    the CPU's sequence products run through by default on this machine (``cpu_products``:
    float32 "avx512", "mkl-packed", "sgemm" or "aten"; bfloat16 "amx", "avx512-bf16", "float" or
    "aten"; float16 "float" or "aten" ("float": in float32, where the CPU lacks the type's dot
    products); amx "available" or why not; LLTM_JIT_CPU_RECURRENCE lowers them, docs/build.md)."""
    if _active is None:
        return {"backend": "reference", "fallback_reason": _fallback_reason}
    return {
        "backend": "extension",
        "namespace": _active.namespace,
        "key": _active.key,
        "library": str(_active.library),
        "devices": ["cpu", *(["cuda"] if _active.cuda_archs else [])],
        "cuda_archs": list(_active.cuda_archs),
        "built_now": _active.built_now,
        "cpu_products": _cpu_products(str(_active.library)),
    }


@functools.cache
def _cpu_products(library: str) -> dict:
    """The library's own answer (src/cpu_blas.h, src/cpu_bf16.h): the CPU's features, and the BLAS
    symbols it finds from inside."""
    handle = ctypes.CDLL(library)  # the handle torch opened: dlopen counts, it loads nothing again
    answers = {"float32": handle.lltm_jit_cpu_recurrence, "bfloat16": handle.lltm_jit_cpu_bf16,
               "float16": handle.lltm_jit_cpu_fp16, "amx": handle.lltm_jit_cpu_amx}
    for function in answers.values():
        function.restype = ctypes.c_char_p
    return {dtype: function().decode() for dtype, function in answers.items()}


def _reference(fn, device_type, *args, **kwargs):
    """The reference fn(*args, **kwargs) with the operators' autocast (src/ops.cpp): under
    torch.autocast on device_type, the floating tensors in args on that device, float64 aside, are
    cast to the autocast dtype and fn runs in it. Autocast inside fn would instead run each of its
    operations at its own precision (the matrix product in the low one, the sums in float32).
    Unlike aten's cast, this one has no cache: a parameter used by several calls in one autocast
    region is cast, and its gradient summed in float32, at each call."""
    if not torch.is_autocast_enabled(device_type):
        return fn(*args, **kwargs)
    dtype = torch.get_autocast_dtype(device_type)

    def cast(arg):
        if isinstance(arg, (tuple, list)):
            return type(arg)(cast(a) for a in arg)
        if (isinstance(arg, torch.Tensor) and arg.is_floating_point() and arg.device.type == device_type
                and arg.dtype != torch.float64):
            return arg.to(dtype)
        return arg

    with torch.autocast(device_type, enabled=False):
        return fn(*(cast(a) for a in args), **kwargs)


# The fallback checks what the operators check, in eager mode: dynamo cannot trace the checks'
# messages, and export cannot look at the lengths' values.


def _checked_reference_lltm(input, weights, bias, old_h, old_cell):
    """The reference step with the operator's argument checks (the reference checks only types)."""
    if not torch.compiler.is_compiling():
        checks.check_step(input, weights, bias, old_h, old_cell)
    return reference_lltm(input, weights, bias, old_h, old_cell)


def _checked_reference_sequence(input, weights, bias, state, lengths, batch_first):
    """The reference sequence with the operator's argument checks (the reference checks only types)."""
    if not torch.compiler.is_compiling():
        h0, c0 = (None, None) if state is None else state
        time, _, _ = checks.check_sequence_call(input, weights, bias, h0, c0, lengths, batch_first)
        checks.check_lengths_values("lltm_sequence", lengths, time)
    return reference_lltm_sequence(input, weights, bias, state, lengths=lengths, batch_first=batch_first)


def lltm(input, weights, bias, old_h, old_cell):
    """One LLTM step: returns (new_h, new_cell), each (batch, state_size).

    input (batch, input_features); weights (3 * state_size, state_size + input_features),
    multiplying ``[old_h, input]``; bias (3 * state_size,) or (1, 3 * state_size);
    old_h, old_cell (batch, state_size). All on one device, of one floating dtype.
    """
    checks.check_tensors("lltm", input=input, weights=weights, bias=bias, old_h=old_h, old_cell=old_cell)
    if _forward is None:
        return _reference(_checked_reference_lltm, input.device.type, input, weights, bias, old_h, old_cell)
    new_h, new_cell, _ = _forward(input, weights, bias, old_h, old_cell)
    return new_h, new_cell


def lltm_sequence(input, weights, bias, state=None, *, lengths=None, batch_first=False, paired=False):
    """A whole sequence of LLTM steps: returns output and the final state (h_n, c_n).

    input (time, batch, input_features), or (batch, time, input_features) with ``batch_first``;
    weights and bias as for `lltm` (a cell's parameters); state None (zeros) or (h0, c0), each
    (batch, state_size); lengths None or an int64 tensor (batch,) of values in [0, time], best on
    the CPU: past its length a sequence's state stays as it is and its output is zero.
    output (time, batch, state_size), or (batch, time, state_size) with ``batch_first``.
    paired: another call of the same sizes runs at the same time on another CUDA stream, as
    `LLTMSequence` runs a bidirectional layer's directions where `sequences_at_once` says they fit:
    the kernels then leave the GPU room for both. It changes no result.
    """
    checks.check_sequence_types("lltm_sequence", input, weights, bias, state, lengths)
    if _sequence_forward is None:
        return _reference(_checked_reference_sequence, input.device.type, input, weights, bias, state, lengths,
                          batch_first)
    if batch_first:
        # The op's messages name input's dimensions in its own layout, (time, batch, input_features):
        # where it would blame them, the caller's layout names them here (a cost only there).
        if input.dim() != 3 or weights.dim() != 2 or input.shape[2] == 0 or (
                input.shape[2] != weights.shape[1] - weights.shape[0] // 3):
            h0, c0 = (None, None) if state is None else state
            checks.check_sequence("lltm_sequence", input, weights, bias, h0, c0, lengths, batch_first=True)
        input = input.transpose(0, 1)
    if state is None:
        state = (None, None)  # the op's zeros: no tensors to allocate and fill
    # Inference mode skips the autograd kernel, which otherwise tells the op whether a backward follows
    # (the C++ API's lltm_jit::lltm_sequence in src/ops.cpp follows the same rule).
    for_backward = False if not torch.compiler.is_compiling() and torch.is_inference_mode_enabled() else None
    output, h_n, c_n, _, _ = _sequence_forward(input, weights, bias, state[0], state[1], lengths, for_backward,
                                               paired)
    return (output.transpose(0, 1) if batch_first else output), (h_n, c_n)


def sequences_at_once(input, weights) -> bool:
    """The op ``sequences_at_once`` (its schema in src/ops.cpp says when two sequences, each
    called with paired=True, run at once) for a module's checked input (time, batch,
    input_features) and weights; False off CUDA, in the reference fallback, and while
    torch.compile or torch.export traces: their graphs take the directions one after the other."""
    if _sequences_at_once is None or input.device.type != "cuda" or torch.compiler.is_compiling():
        return False
    # The op reads sizes, dtypes and the device: views of no elements, which autocast casts for
    # nothing, made outside autograd's graph.
    with torch.no_grad():
        return _sequences_at_once(input[:0], weights[:, :0])
