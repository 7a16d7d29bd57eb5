// Host side of the sequence operators, shared by the CPU and CUDA backends: argument checks and
// the products over all steps at once (the input projection before the recurrence; the input and
// weight gradients after it). Each backend supplies the recurrence over the steps.
//
// Layout: every (time, batch, n) tensor is contiguous, so that step t is a contiguous
// (batch, n) block. gates holds the pre-activations of every step, cells the cell state after
// every step; with the output (h after every step) and the initial state they are all the
// backward needs. Each backend instantiates `sequence_forward` / `sequence_backward` with its
// recurrence, as its sequence_forward and sequence_backward (kernels.h).
#pragma once

#include "aten.h"
#include "checks.h"

#include <array>
#include <optional>
#include <tuple>
#include <utility>

namespace lltm {

struct SequenceSizes {
  int64_t time, batch, features, state;
};

// The dtypes and devices are the caller's to check. bias: nullptr where the caller has none; h0
// and c0 may be undefined (zeros).
inline SequenceSizes check_sequence(const char* op, const Tensor& input, const Tensor& weights, const Tensor* bias,
                                    const Tensor& h0, const Tensor& c0, const Tensor& lengths) {
  check_rank(op, input, "input", 3, "(time, batch, input_features)");
  for (const auto& [name, state] : {Named{"h0", &h0}, Named{"c0", &c0}}) {
    if (!state->defined()) continue;
    check_rank(op, *state, name, 2, "(batch, state_size)");
    check_non_empty(op, *state, name, 1, "state");
  }
  check_non_empty(op, input, "input", 2, "feature");
  const Tensor& given = h0.defined() ? h0 : c0;
  const CellSizes cell = check_parameters(op, weights, bias, input.size(2), given.defined() ? given.size(1) : 0,
                                          h0.defined() && c0.defined() ? c0.size(1) : 0);
  check_input_features(op, input, "(time, batch, input_features)", weights, cell.features);
  const SequenceSizes s{input.size(0), input.size(1), cell.features, cell.state};
  if (h0.defined()) check_shape(op, h0, "h0", "(batch, state_size)", {s.batch, s.state});
  if (c0.defined()) check_shape(op, c0, "c0", "(batch, state_size)", {s.batch, s.state});
  if (lengths.defined()) {
    TORCH_CHECK(lengths.scalar_type() == at::kLong,
                join({op, ": lengths must be an int64 tensor, got ", c10::toString(lengths.scalar_type())}));
    check_rank(op, lengths, "lengths", 1, "(batch,)");
    check_shape(op, lengths, "lengths", "(batch,)", {s.batch});
    TORCH_CHECK(lengths.is_cpu() || lengths.device() == input.device(),
                join({op, ": lengths must be on the CPU or on input's device (", input.device().str(), "), got ",
                      lengths.device().str()}));
  }
  return s;
}

// lengths on the CPU, its values checked to lie in [0, time]. A CUDA tensor is copied over, which
// waits for the device: lengths given on the CPU, as nn.utils.rnn keeps them, avoid that.
inline Tensor checked_lengths(const char* op, const Tensor& lengths, int64_t time) {
  if (!lengths.defined()) return lengths;
  const Tensor host = lengths.cpu().contiguous();
  const int64_t* values = host.const_data_ptr<int64_t>();
  for (int64_t b = 0; b < host.numel(); ++b) {
    TORCH_CHECK(values[b] >= 0 && values[b] <= time, op, ": lengths must lie in [0, time] = [0, ", time,
                "], got ", values[b], " at batch index ", b);
  }
  return host;
}

// What a backend's recurrence reads and writes: the base in both directions, each extension in one.
// Forward: gates holds the input projection and receives the pre-activations; output, h_n, c_n
// and, when defined (a backward may follow), cells are written. With cells undefined, gates is
// only a workspace. Backward: output, gates and cells are the forward's; grad_h_n and grad_c_n
// (undefined: zero) are the gradients of h_n and c_n; d_h and d_c receive those of h0 and c0, and
// gates its gradients. d_bias, where defined, is the bias gradient the caller wants: a backend that
// sums it as the steps go sets bias_summed, and the caller sums the gate gradients otherwise.
struct Recurrence {
  SequenceSizes sizes;
  Tensor weights, h0, c0;  // h0, c0: undefined where the initial state is zeros
  Tensor lengths;  // on the CPU, checked; undefined: every sequence runs `time` steps
  Tensor gates, output, cells;
  bool paired = false;  // another sequence of these sizes runs at once beside this one (the op's
                        // `paired`): the CUDA kernels' tiling leaves the GPU room for both
};

struct ForwardRecurrence : Recurrence {
  Tensor input, bias;  // bias as (3 * state,)
  Tensor h_n, c_n;
};

struct BackwardRecurrence : Recurrence {
  Tensor grad_output;  // may be undefined (zero) and of any strides
  Tensor grad_h_n, grad_c_n;  // undefined or contiguous, of the dtype
  Tensor d_h, d_c;
  Tensor d_bias;
  bool bias_summed = false;
};

using RecurrenceForward = void (*)(ForwardRecurrence& r);
using RecurrenceBackward = void (*)(BackwardRecurrence& r);

// The initial state to read, in `dtype`: `given`, or zeros like `like` where it is undefined.
inline Tensor state_or_zeros(const Tensor& given, const Tensor& like, at::ScalarType dtype) {
  return given.defined() ? given.to(dtype) : like.new_zeros(like.sizes(), like.options().dtype(dtype));
}

// Where a backend carries a state gradient from step to step, in `dtype`: `out` itself where it
// has that dtype, else a new tensor; holding `given`, or zeros where it is undefined (zero). The
// backend copies it back into `out` at the end (a no-op where it is `out`).
inline Tensor carried_gradient(const Tensor& out, const Tensor& given, at::ScalarType dtype) {
  Tensor carried = out.scalar_type() == dtype ? out : out.new_empty(out.sizes(), out.options().dtype(dtype));
  return given.defined() ? carried.copy_(given) : carried.zero_();
}

// The input projection of every step in one product, into gates (the backends call it first,
// each in the dtype it runs the recurrence in).
inline void project_input(const ForwardRecurrence& r) {
  const SequenceSizes& s = r.sizes;
  Tensor projection = r.gates.view({s.time * s.batch, 3 * s.state});
  aten::addmm_out(projection, r.bias, r.input.reshape({s.time * s.batch, s.features}),
                r.weights.narrow(1, s.state, s.features).t());
}

// An optional tensor argument as the backends read it: contiguous, or undefined where not given.
inline Tensor contiguous_or_none(const std::optional<Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : Tensor();
}

// Returns output (time, batch, state), h_n, c_n (batch, state) and, for the backward, gates and
// cells (time, batch, 3 * state and state), or two empty tensors when for_backward is false.
template <RecurrenceForward recurrence>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> sequence_forward(const Tensor& input, const Tensor& weights,
                                                                    const Tensor& bias,
                                                                    const std::optional<Tensor>& h0,
                                                                    const std::optional<Tensor>& c0,
                                                                    const std::optional<Tensor>& lengths,
                                                                    std::optional<bool> for_backward,
                                                                    bool paired) {
  constexpr const char* op = "lltm_sequence";
  const Tensor given_lengths = lengths.value_or(Tensor());
  ForwardRecurrence r{{{}, weights, contiguous_or_none(h0), contiguous_or_none(c0)}};
  check_defined(op, {{"input", &input}, {"weights", &weights}, {"bias", &bias}});
  check_same_kind(op, {{"input", &input}, {"weights", &weights}, {"bias", &bias}, {"h0", &r.h0}, {"c0", &r.c0}});
  const SequenceSizes s = r.sizes = check_sequence(op, input, weights, &bias, r.h0, r.c0, given_lengths);
  r.lengths = checked_lengths(op, given_lengths, s.time);
  r.paired = paired;
  r.input = input;
  r.bias = bias.reshape({3 * s.state});
  r.gates = input.new_empty({s.time, s.batch, 3 * s.state});
  r.output = input.new_empty({s.time, s.batch, s.state});
  const bool keep = for_backward.value_or(true);
  if (keep) r.cells = input.new_empty({s.time, s.batch, s.state});
  r.h_n = input.new_empty({s.batch, s.state});
  r.c_n = input.new_empty({s.batch, s.state});
  recurrence(r);
  if (keep) return {r.output, r.h_n, r.c_n, r.gates, r.cells};
  return {r.output, r.h_n, r.c_n, input.new_empty({0}), input.new_empty({0})};
}

// out = a b, or out += a b where `accumulate`: how sequence_weights_gradient runs its products.
using ProductInto = void (*)(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate);

inline void aten_product_into(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  Tensor result = out;
  accumulate ? result.addmm_(a, b) : aten::mm_out(result, a, b);
}

// d_weights from the gate gradients of every step (time * batch, 3 * state): against the input
// for W_x, against h before each step for W_h (h0 undefined: zeros); ATen's products unless a
// backend passes its own.
template <ProductInto product_into = aten_product_into>
Tensor sequence_weights_gradient(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input, const Tensor& h0,
                                 const Tensor& output) {
  Tensor d_weights = d_gates.new_empty({3 * s.state, s.state + s.features});
  Tensor d_w_h = d_weights.narrow(1, 0, s.state), d_w_input = d_weights.narrow(1, s.state, s.features);
  product_into(d_w_input, d_gates.t(), input.reshape({s.time * s.batch, s.features}), /*accumulate=*/false);
  // h before step t is h0 for t = 0 and output[t - 1] after: wherever a step ran, the step before
  // it ran too, and where it did not the gate gradients are zero.
  const bool from_h0 = h0.defined() && s.time > 0;
  if (from_h0) product_into(d_w_h, d_gates.narrow(0, 0, s.batch).t(), h0, /*accumulate=*/false);
  if (s.time > 1) {
    const Tensor d_later = d_gates.narrow(0, s.batch, (s.time - 1) * s.batch).t();
    const Tensor h_later = output.narrow(0, 0, s.time - 1).reshape({(s.time - 1) * s.batch, s.state});
    product_into(d_w_h, d_later, h_later, /*accumulate=*/from_h0);
  } else if (!from_h0) {
    d_w_h.zero_();
  }
  return d_weights;
}

// The products after the recurrence: d_input (time, batch, features) = d_gates W_x where
// want_input, d_weights where want_weights (each undefined otherwise). ATen's here; a backend may
// supply its own (the CPU's, on raw pointers).
using SequenceProducts = std::pair<Tensor, Tensor> (*)(const SequenceSizes& s, const Tensor& d_gates,
                                                       const Tensor& input, const Tensor& weights, const Tensor& h0,
                                                       const Tensor& output, bool want_input, bool want_weights);

inline std::pair<Tensor, Tensor> aten_sequence_products(const SequenceSizes& s, const Tensor& d_gates,
                                                        const Tensor& input, const Tensor& weights, const Tensor& h0,
                                                        const Tensor& output, bool want_input, bool want_weights) {
  return {want_input ? d_gates.mm(weights.narrow(1, s.state, s.features)).view({s.time, s.batch, s.features})
                     : Tensor(),
          want_weights ? sequence_weights_gradient(s, d_gates, input, h0, output) : Tensor()};
}

// Returns the gradients of input, weights, bias (as (3 * state_size,)), h0 and c0; output_mask
// says which of the first three to compute (the others are undefined). Overwrites `gates` with
// its gradients: the autograd node hands over its saved pre-activations when it will not need
// them again, which spares the backward a (time, batch, 3 * state) buffer.
template <RecurrenceBackward recurrence, SequenceProducts products = aten_sequence_products>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> sequence_backward(
    const std::optional<Tensor>& grad_output, const std::optional<Tensor>& grad_h_n,
    const std::optional<Tensor>& grad_c_n, const Tensor& input, const Tensor& weights,
    const std::optional<Tensor>& h0, const std::optional<Tensor>& c0, const std::optional<Tensor>& lengths,
    const Tensor& output, const Tensor& gates, const Tensor& cells, std::array<bool, 3> output_mask, bool paired) {
  constexpr const char* op = "lltm_sequence_backward";
  const Tensor given_lengths = lengths.value_or(Tensor());
  BackwardRecurrence r{{{}, weights, contiguous_or_none(h0), contiguous_or_none(c0)}};
  r.grad_output = grad_output.value_or(Tensor());
  r.grad_h_n = contiguous_or_none(grad_h_n);
  r.grad_c_n = contiguous_or_none(grad_c_n);
  check_defined(op, {{"input", &input}, {"weights", &weights}, {"output", &output}, {"gates", &gates},
                     {"cells", &cells}});
  check_same_kind(op, {{"input", &input}, {"weights", &weights}, {"h0", &r.h0}, {"c0", &r.c0}, {"output", &output},
                       {"gates", &gates}, {"cells", &cells}, {"grad_output", &r.grad_output},
                       {"grad_h_n", &r.grad_h_n}, {"grad_c_n", &r.grad_c_n}});
  const SequenceSizes s = r.sizes = check_sequence(op, input, weights, nullptr, r.h0, r.c0, given_lengths);
  check_shape(op, output, "output", "(time, batch, state_size)", {s.time, s.batch, s.state});
  check_shape(op, cells, "cells", "(time, batch, state_size)", {s.time, s.batch, s.state});
  check_shape(op, gates, "gates", "(time, batch, 3 * state_size)", {s.time, s.batch, 3 * s.state});
  TORCH_CHECK(gates.is_contiguous() && cells.is_contiguous() && output.is_contiguous(),
              join({op, ": output, gates and cells must be contiguous, as the forward returns them"}));
  // What the fake kernel checks comes first (lltm_jit/checks.py): then the values and the gradients.
  r.lengths = checked_lengths(op, given_lengths, s.time);
  r.paired = paired;
  r.gates = gates;
  r.output = output;
  r.cells = cells;
  if (r.grad_output.defined()) {
    check_shape(op, r.grad_output, "grad_output", "(time, batch, state_size)", {s.time, s.batch, s.state});
  }
  for (const auto& [name, t] : {Named{"grad_h_n", &r.grad_h_n}, Named{"grad_c_n", &r.grad_c_n}}) {
    if (t->defined()) check_shape(op, *t, name, "(batch, state_size)", {s.batch, s.state});
  }
  // Two allocations: outputs of an operator must not alias each other.
  r.d_h = input.new_empty({s.batch, s.state});
  r.d_c = input.new_empty({s.batch, s.state});
  const auto [want_input, want_weights, want_bias] = output_mask;
  if (want_bias) r.d_bias = input.new_empty({3 * s.state});
  recurrence(r);

  // With the gate gradients of every step: the input and weight gradients in a few products.
  const Tensor d_gates = gates.view({s.time * s.batch, 3 * s.state});
  const auto [d_input, d_weights] = products(s, d_gates, input, weights, r.h0, output, want_input, want_weights);
  // d_bias as a product with ones rather than at::sum over the rows: on CUDA the sum stages its
  // partial sums in a buffer of about two thirds of d_gates' size.
  if (want_bias && !r.bias_summed) aten::mv_out(r.d_bias, d_gates.t(), d_gates.new_ones({s.time * s.batch}));
  return {d_input, d_weights, r.d_bias, r.d_h, r.d_c};
}

}  // namespace lltm
