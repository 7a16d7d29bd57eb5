// Host side of the sequence operators, shared by the CPU and CUDA backends: argument checks and
// the products over all steps at once (the input projection before the recurrence; the input and
// weight gradients after it). Each backend supplies the recurrence over the steps.
//
// Layout: every (time, batch, n) tensor is contiguous, so that step t is a contiguous
// (batch, n) block. gates holds the pre-activations of every step, cells the cell state after
// every step; with the output (h after every step) and the initial state they are all the
// backward needs.
#pragma once

#include "checks.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mv.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <array>
#include <optional>
#include <tuple>
#include <utility>

namespace lltm {

struct SequenceSizes {
  int64_t time, batch, features, state;
};

// The dtypes and devices are the caller's to check. bias: nullptr where the caller has none.
inline SequenceSizes check_sequence(const char* op, const Tensor& input, const Tensor& weights, const Tensor* bias,
                                    const Tensor& h0, const Tensor& c0, const Tensor& lengths) {
  check_rank(op, input, "input", 3, "(time, batch, input_features)");
  check_rank(op, h0, "h0", 2, "(batch, state_size)");
  check_non_empty(op, h0, "h0", 1, "state");
  check_non_empty(op, input, "input", 2, "feature");
  const CellSizes cell = check_parameters(op, weights, bias, input.size(2), h0);
  const SequenceSizes s{input.size(0), input.size(1), cell.features, cell.state};
  check_shape(op, h0, "h0", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, c0, "c0", "(batch, state_size)", {s.batch, s.state});
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

// What a backend's recurrence reads and writes. Forward: gates holds the input projection and
// receives the pre-activations; output, h_n, c_n and, when defined (a backward may follow), cells
// are written. With cells undefined, gates is only a workspace. Backward: d_h and d_c hold the
// gradients of h_n and c_n and receive those of h0 and c0; gates receives its gradients.
struct Recurrence {
  SequenceSizes sizes;
  Tensor weights, h0, c0;
  Tensor lengths;  // on the CPU, checked; undefined: every sequence runs `time` steps
  Tensor input, bias;  // the forward's, bias as (3 * state,)
  Tensor gates, output, cells, h_n, c_n;
  Tensor grad_output;  // may be undefined (zero) and of any strides
  Tensor d_h, d_c;
};
using RecurrenceForward = void (*)(Recurrence& r);
using RecurrenceBackward = void (*)(Recurrence& r);

// The input projection of every step in one product, into gates (the backends call it first,
// each in the dtype it runs the recurrence in).
inline void project_input(const Recurrence& r) {
  const SequenceSizes& s = r.sizes;
  Tensor projection = r.gates.view({s.time * s.batch, 3 * s.state});
  at::addmm_out(projection, r.bias, r.input.reshape({s.time * s.batch, s.features}),
                r.weights.narrow(1, s.state, s.features).t());
}

// Returns output (time, batch, state), h_n, c_n (batch, state) and, for the backward, gates and
// cells (time, batch, 3 * state and state), or two empty tensors when for_backward is false.
template <RecurrenceForward recurrence>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> sequence_forward(const Tensor& input, const Tensor& weights,
                                                                    const Tensor& bias, const Tensor& h0,
                                                                    const Tensor& c0,
                                                                    const std::optional<Tensor>& lengths,
                                                                    std::optional<bool> for_backward) {
  constexpr const char* op = "lltm_sequence";
  const Tensor given_lengths = lengths.value_or(Tensor());
  check_same_kind(op, {{"input", &input}, {"weights", &weights}, {"bias", &bias}, {"h0", &h0}, {"c0", &c0}});
  const SequenceSizes s = check_sequence(op, input, weights, &bias, h0, c0, given_lengths);
  const auto opts = input.options();
  Recurrence r{s, weights, h0.contiguous(), c0.contiguous(), checked_lengths(op, given_lengths, s.time)};
  r.input = input;
  r.bias = bias.reshape({3 * s.state});
  r.gates = at::empty({s.time, s.batch, 3 * s.state}, opts);
  r.output = at::empty({s.time, s.batch, s.state}, opts);
  const bool keep = for_backward.value_or(true);
  if (keep) r.cells = at::empty({s.time, s.batch, s.state}, opts);
  r.h_n = at::empty({s.batch, s.state}, opts);
  r.c_n = at::empty({s.batch, s.state}, opts);
  recurrence(r);
  if (keep) return {r.output, r.h_n, r.c_n, r.gates, r.cells};
  return {r.output, r.h_n, r.c_n, at::empty({0}, opts), at::empty({0}, opts)};
}

// The gradients of h_n and c_n, as copies that the recurrence may overwrite, and zeros for those
// not given (both from one allocation, one launch fewer for the common loss on the output alone).
inline std::pair<Tensor, Tensor> state_gradients(const std::optional<Tensor>& grad_h_n,
                                                 const std::optional<Tensor>& grad_c_n, const Tensor& like) {
  auto given = [](const std::optional<Tensor>& g) { return g.has_value() && g->defined(); };
  if (!given(grad_h_n) && !given(grad_c_n)) {
    const Tensor zeros = at::zeros({2, like.size(0), like.size(1)}, like.options());
    return {zeros[0], zeros[1]};
  }
  auto copy_or_zeros = [&](const std::optional<Tensor>& g) {
    return given(g) ? g->to(like.options(), /*non_blocking=*/false, /*copy=*/true).contiguous() : at::zeros_like(like);
  };
  return {copy_or_zeros(grad_h_n), copy_or_zeros(grad_c_n)};
}

// d_weights from the gate gradients of every step (time * batch, 3 * state): against the input
// for W_x, against h before each step for W_h.
inline Tensor sequence_weights_gradient(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                        const Tensor& h0, const Tensor& output) {
  Tensor d_weights = at::empty({3 * s.state, s.state + s.features}, d_gates.options());
  Tensor d_w_h = d_weights.narrow(1, 0, s.state), d_w_input = d_weights.narrow(1, s.state, s.features);
  at::mm_out(d_w_input, d_gates.t(), input.reshape({s.time * s.batch, s.features}));
  // h before step t is h0 for t = 0 and output[t - 1] after: wherever a step ran, the step before
  // it ran too, and where it did not the gate gradients are zero.
  if (s.time == 0) {
    d_w_h.zero_();
  } else {
    at::mm_out(d_w_h, d_gates.narrow(0, 0, s.batch).t(), h0);
  }
  if (s.time > 1) {
    d_w_h.addmm_(d_gates.narrow(0, s.batch, (s.time - 1) * s.batch).t(),
                 output.narrow(0, 0, s.time - 1).reshape({(s.time - 1) * s.batch, s.state}));
  }
  return d_weights;
}

// Returns the gradients of input, weights, bias (as (3 * state_size,)), h0 and c0; output_mask
// says which of the first three to compute (the others are undefined). Overwrites `gates` with
// its gradients: the autograd node hands over its saved pre-activations when it will not need
// them again, which spares the backward a (time, batch, 3 * state) buffer.
template <RecurrenceBackward recurrence>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> sequence_backward(
    const std::optional<Tensor>& grad_output, const std::optional<Tensor>& grad_h_n,
    const std::optional<Tensor>& grad_c_n, const Tensor& input, const Tensor& weights, const Tensor& h0,
    const Tensor& c0, const std::optional<Tensor>& lengths, const Tensor& output, const Tensor& gates,
    const Tensor& cells, std::array<bool, 3> output_mask) {
  constexpr const char* op = "lltm_sequence_backward";
  const Tensor given_lengths = lengths.value_or(Tensor());
  check_same_kind(op, {{"input", &input}, {"weights", &weights}, {"h0", &h0}, {"c0", &c0}, {"output", &output},
                       {"gates", &gates}, {"cells", &cells}});
  const SequenceSizes s = check_sequence(op, input, weights, nullptr, h0, c0, given_lengths);
  check_shape(op, output, "output", "(time, batch, state_size)", {s.time, s.batch, s.state});
  check_shape(op, cells, "cells", "(time, batch, state_size)", {s.time, s.batch, s.state});
  check_shape(op, gates, "gates", "(time, batch, 3 * state_size)", {s.time, s.batch, 3 * s.state});
  TORCH_CHECK(gates.is_contiguous() && cells.is_contiguous() && output.is_contiguous(),
              join({op, ": output, gates and cells must be contiguous, as the forward returns them"}));
  Recurrence r{s, weights, h0.contiguous(), c0.contiguous(), checked_lengths(op, given_lengths, s.time)};
  r.gates = gates;
  r.output = output;
  r.cells = cells;
  if (grad_output.has_value() && grad_output->defined()) {
    check_same_kind(op, {{"input", &input}, {"grad_output", &*grad_output}});
    check_shape(op, *grad_output, "grad_output", "(time, batch, state_size)", {s.time, s.batch, s.state});
    r.grad_output = *grad_output;
  }
  std::tie(r.d_h, r.d_c) = state_gradients(grad_h_n, grad_c_n, r.h0);
  check_shape(op, r.d_h, "grad_h_n", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, r.d_c, "grad_c_n", "(batch, state_size)", {s.batch, s.state});
  recurrence(r);

  // With the gate gradients of every step: the input and weight gradients in a few products.
  const auto [want_input, want_weights, want_bias] = output_mask;
  const Tensor d_gates = gates.view({s.time * s.batch, 3 * s.state});
  const Tensor d_input =
      want_input ? at::mm(d_gates, weights.narrow(1, s.state, s.features)).view({s.time, s.batch, s.features})
                 : Tensor();
  const Tensor d_weights = want_weights ? sequence_weights_gradient(s, d_gates, input, r.h0, output) : Tensor();
  // d_bias as a product with ones rather than at::sum over the rows: on CUDA the sum stages its
  // partial sums in a buffer of about two thirds of d_gates' size.
  const Tensor d_bias = want_bias ? at::mv(d_gates.t(), at::ones({s.time * s.batch}, d_gates.options())) : Tensor();
  return {d_input, d_weights, d_bias, r.d_h, r.d_c};
}

}  // namespace lltm
