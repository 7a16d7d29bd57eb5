"""The operators' argument checks for their fake kernels (torch.compile, meta tensors) and for the
fallback to the reference: the same rules and messages as the C++ checks in src/checks.h, which
run on real tensors. Values that only real data has (lengths' range) are checked in C++, and for
the fallback by check_lengths_values."""

from __future__ import annotations

import torch

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _dtype_name(dtype: torch.dtype) -> str:
    """c10::toString's name for a dtype: Double, Float, Half, BFloat16, Long, ...; past the classic
    ones, torch's name capitalised as c10 spells it (UInt16, Float8_e4m3fn, QInt8, Bits16)."""
    classic = {
        torch.float64: "Double", torch.float32: "Float", torch.float16: "Half", torch.bfloat16: "BFloat16",
        torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
        torch.bool: "Bool", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
        torch.complex32: "ComplexHalf",
    }
    if dtype in classic:
        return classic[dtype]
    name = str(dtype).removeprefix("torch.")
    for prefix, spelled in (("uint", "UInt"), ("quint", "QUInt"), ("qint", "QInt")):
        if name.startswith(prefix):
            return spelled + name[len(prefix):]
    return name[:1].upper() + name[1:]


def _who(op) -> str:
    """`op` in a message: the operator's name, or the module (its repr, made only for the message)."""
    return op if isinstance(op, str) else repr(op)


def check_tensors(op, **named) -> None:
    """A TypeError naming the first argument that is not a Tensor and the type it has: never its
    value, which torch's schema error prints whole (megabytes for a list of a large batch). `op`:
    the operator's name, or the module."""
    for name, value in named.items():
        if not isinstance(value, torch.Tensor):
            got = "None" if value is None else type(value).__name__
            raise TypeError(f"{_who(op)}: {name} must be a Tensor, got {got}")


def check_state_pair(op, state, names=("h", "cell"), parts_optional=False) -> None:
    """state, given, must be a tuple (or list) of two Tensors, or of Tensors and None where
    `parts_optional` (`op` as for check_tensors)."""
    if not isinstance(state, (tuple, list)) or len(state) != 2:
        error = TypeError if not isinstance(state, (tuple, list)) else ValueError
        got = f"a {type(state).__name__}" + ("" if error is TypeError else f" of {len(state)}")
        raise error(f"{_who(op)}: state must be a tuple ({', '.join(names)}), got {got}")
    parts = {f"state's {name}": part for name, part in zip(names, state) if not (parts_optional and part is None)}
    check_tensors(op, **parts)


def check_sequence_types(op, input, weights, bias, state, lengths) -> None:
    """The types of a sequence function's arguments (lltm_sequence's and the reference's): state
    None or a pair (h0, c0), each part None for zeros; lengths None or a Tensor."""
    check_tensors(op, input=input, weights=weights, bias=bias)
    if state is not None:
        check_state_pair(op, state, ("h0", "c0"), parts_optional=True)
    if lengths is not None:
        check_tensors(op, lengths=lengths)


def shape_str(sizes) -> str:
    sizes = tuple(sizes)
    return "(" + ", ".join(str(s) for s in sizes) + ("," if len(sizes) == 1 else "") + ")"


def check_rank(op, t, name, rank, dims):
    torch._check(t.dim() == rank, lambda: f"{op}: {name} must have {rank} dimensions {dims}, got {t.dim()} "
                                          f"with shape {shape_str(t.shape)}")


def check_shape(op, t, name, dims, expected):
    torch._check(tuple(t.shape) == tuple(expected), lambda: f"{op}: {name} must have shape {dims} = "
                                                            f"{shape_str(expected)}, got {shape_str(t.shape)}")


def check_non_empty(op, t, name, dim, what):
    torch._check(t.shape[dim] > 0, lambda: f"{op}: {name} must have a non-empty {what} dimension, "
                                           f"got shape {shape_str(t.shape)}")


def check_defined(op, named) -> None:
    """Tensors an operator needs: None is what C++ calls an undefined tensor (torch.ops passes one
    for a None given to the raw operators), and its words."""
    for name, t in named:
        if t is None:
            raise TypeError(f"{op}: {name} must be a Tensor, got an undefined one")


def check_same_kind(op, named):
    """Every tensor but None (an optional argument not given) on the first's device, of its dtype."""
    first_name, first = named[0]
    torch._check(first.dtype in DTYPES, lambda: f"{op}: {first_name} must be a floating-point tensor "
                                                f"(float64, float32, float16 or bfloat16), got {_dtype_name(first.dtype)}")
    for name, t in named:
        if t is None:
            continue
        torch._check(t.device == first.device, lambda: f"{op}: all tensors must be on one device: {first_name} is "
                                                       f"on {first.device} but {name} is on {t.device}")
        torch._check(t.dtype == first.dtype, lambda: f"{op}: all tensors must have one dtype: {first_name} is "
                                                     f"{_dtype_name(first.dtype)} but {name} is {_dtype_name(t.dtype)}")


def check_parameters(op, weights, bias, features, given_state, other_state=0) -> tuple[int, int]:
    """(input_features, state_size) as weights gives them, so that an input or a state of the
    wrong width is the one blamed; features: the input's width, which the weights' message
    expects where weights cannot give the sizes. bias None where there is none to check;
    given_state: the state size of the caller's first state tensor (0: none), expected where
    weights' rows do not divide by three or where bias and other_state (the second's; 0: none)
    agree with it and weights do not."""
    check_rank(op, weights, "weights", 2, "(3 * state_size, state_size + input_features)")
    check_non_empty(op, weights, "weights", 0, "first")
    rows = weights.shape[0]
    outvoted = (given_state > 0 and rows != 3 * given_state and bias is not None and bias.numel() == 3 * given_state
                and other_state in (0, given_state))
    state = rows // 3 if rows % 3 == 0 and not outvoted else given_state if given_state > 0 else rows // 3
    if rows != 3 * state or weights.shape[1] <= state:
        check_shape(op, weights, "weights", "(3 * state_size, state_size + input_features)",
                    (3 * state, state + features))
    if bias is not None:
        torch._check(bias.numel() == 3 * state and (bias.dim() == 1 or (bias.dim() == 2 and bias.shape[0] == 1)),
                     lambda: f"{op}: bias must have shape (3 * state_size,) or (1, 3 * state_size) = "
                             f"{shape_str((3 * state,))}, got {shape_str(bias.shape)}")
    return weights.shape[1] - state, state


def check_weight_rows(op, weights) -> None:
    """Where only weights' rows are read (the state size): 2-D, with a positive multiple of 3 rows."""
    check_rank(op, weights, "weights", 2, "(3 * state_size, state_size + input_features)")
    torch._check(weights.shape[0] > 0 and weights.shape[0] % 3 == 0,
                 lambda: f"{op}: weights must have 3 * state_size rows, a positive multiple of 3, got shape "
                         f"{shape_str(weights.shape)}")


def check_input_features(op, input, dims, weights, features) -> None:
    """input's last dimension against the features that weights take; dims names input's dimensions."""
    torch._check(input.shape[-1] == features,
                 lambda: f"{op}: input must have shape {dims} = {shape_str((*input.shape[:-1], features))} to match "
                         f"weights {shape_str(weights.shape)}, got {shape_str(input.shape)}")


def check_step(input, weights, bias, old_h, old_cell) -> tuple[int, int]:
    """(batch, state_size) of the cell's forward operator."""
    op = "lltm"
    named = [("input", input), ("weights", weights), ("bias", bias), ("old_h", old_h), ("old_cell", old_cell)]
    check_defined(op, named)
    check_same_kind(op, named)
    check_rank(op, input, "input", 2, "(batch, input_features)")
    check_rank(op, old_h, "old_h", 2, "(batch, state_size)")
    check_non_empty(op, old_h, "old_h", 1, "state")
    check_non_empty(op, input, "input", 1, "feature")
    features, state = check_parameters(op, weights, bias, input.shape[1], old_h.shape[1],
                                       old_cell.shape[1] if old_cell.dim() == 2 else 0)
    check_input_features(op, input, "(batch, input_features)", weights, features)
    batch = input.shape[0]
    check_shape(op, old_h, "old_h", "(batch, state_size)", (batch, state))
    check_shape(op, old_cell, "old_cell", "(batch, state_size)", (batch, state))
    return batch, state


# The backward operators' fake kernels check what the forward saved as the operators do, and of
# the incoming gradients only that the cell's are given: compiled autograd traces a Node's
# backward with placeholders for them (float32 whatever the forward's dtype, of sizes such as
# (0, 123456789)), and the real operator, which checks them too, runs on the real ones. The
# operators check what the fakes check first (then the gradients, and lengths' values), so that
# the two give the same words for a bad saved tensor.


def check_step_backward(grad_h, grad_cell, input, weights, old_h, gates, old_cell) -> tuple[int, int, int]:
    """(batch, input_features, state_size) of the cell's backward operator from what the forward
    saved."""
    op = "lltm_backward"
    saved = [("input", input), ("weights", weights), ("old_h", old_h), ("gates", gates), ("old_cell", old_cell)]
    check_defined(op, [*saved, ("grad_h", grad_h), ("grad_cell", grad_cell)])
    check_same_kind(op, saved)
    check_rank(op, input, "input", 2, "(batch, input_features)")
    check_rank(op, old_h, "old_h", 2, "(batch, state_size)")
    check_non_empty(op, old_h, "old_h", 1, "state")
    batch, features, state = input.shape[0], input.shape[1], old_h.shape[1]
    for name, t in (("old_h", old_h), ("old_cell", old_cell)):
        check_shape(op, t, name, "(batch, state_size)", (batch, state))
    check_shape(op, gates, "gates", "(batch, 3 * state_size)", (batch, 3 * state))
    check_shape(op, weights, "weights", "(3 * state_size, state_size + input_features)", (3 * state, state + features))
    return batch, features, state


def check_sequence(op, input, weights, bias, h0, c0, lengths, batch_first=False) -> tuple[int, int, int]:
    """(time, batch, state_size) of a sequence operator; dtypes and devices are the caller's; h0
    and c0 may be None (zeros). With batch_first, input is (batch, time, input_features)."""
    dims = "(batch, time, input_features)" if batch_first else "(time, batch, input_features)"
    check_rank(op, input, "input", 3, dims)
    states = [(name, t) for name, t in (("h0", h0), ("c0", c0)) if t is not None]
    for name, t in states:
        check_rank(op, t, name, 2, "(batch, state_size)")
        check_non_empty(op, t, name, 1, "state")
    check_non_empty(op, input, "input", 2, "feature")
    features, state = check_parameters(op, weights, bias, input.shape[2], states[0][1].shape[1] if states else 0,
                                       states[1][1].shape[1] if len(states) == 2 else 0)
    check_input_features(op, input, dims, weights, features)
    time, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    for name, t in states:
        check_shape(op, t, name, "(batch, state_size)", (batch, state))
    if lengths is not None:
        torch._check(lengths.dtype == torch.int64,
                     lambda: f"{op}: lengths must be an int64 tensor, got {_dtype_name(lengths.dtype)}")
        check_rank(op, lengths, "lengths", 1, "(batch,)")
        check_shape(op, lengths, "lengths", "(batch,)", (batch,))
        torch._check(lengths.device.type == "cpu" or lengths.device == input.device,
                     lambda: f"{op}: lengths must be on the CPU or on input's device ({input.device}), "
                             f"got {lengths.device}")
    return time, batch, state


def check_sequence_call(input, weights, bias, h0, c0, lengths, batch_first=False) -> tuple[int, int, int]:
    """(time, batch, state_size) of a call of the sequence operator: one dtype and device for
    every tensor, then check_sequence's shapes."""
    op = "lltm_sequence"
    check_defined(op, [("input", input), ("weights", weights), ("bias", bias)])
    check_same_kind(op, [("input", input), ("weights", weights), ("bias", bias), ("h0", h0), ("c0", c0)])
    return check_sequence(op, input, weights, bias, h0, c0, lengths, batch_first)


def check_sequence_backward(input, weights, h0, c0, lengths, output, gates, cells) -> tuple[int, int, int]:
    """(time, batch, state_size) of the sequence's backward operator from what the forward saved
    (h0, c0 and lengths None where not given)."""
    op = "lltm_sequence_backward"
    check_defined(op, [("input", input), ("weights", weights), ("output", output), ("gates", gates), ("cells", cells)])
    check_same_kind(op, [("input", input), ("weights", weights), ("h0", h0), ("c0", c0), ("output", output),
                         ("gates", gates), ("cells", cells)])
    time, batch, state = check_sequence(op, input, weights, None, h0, c0, lengths)
    check_shape(op, output, "output", "(time, batch, state_size)", (time, batch, state))
    check_shape(op, cells, "cells", "(time, batch, state_size)", (time, batch, state))
    check_shape(op, gates, "gates", "(time, batch, 3 * state_size)", (time, batch, 3 * state))
    torch._check(gates.is_contiguous() and cells.is_contiguous() and output.is_contiguous(),
                 lambda: f"{op}: output, gates and cells must be contiguous, as the forward returns them")
    return time, batch, state


def check_lengths_values(op, lengths, time) -> None:
    """lengths' values in [0, time]: real data only (the C++ operators check them as they copy
    lengths to the host)."""
    if lengths is None:
        return
    outside = ((lengths < 0) | (lengths > time)).nonzero()
    if outside.numel() > 0:
        b = int(outside[0, 0])
        raise RuntimeError(f"{op}: lengths must lie in [0, time] = [0, {time}], got {int(lengths[b])} at batch index {b}")
