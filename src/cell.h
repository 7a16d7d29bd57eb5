// Host side of the cell operators, shared by the CPU and CUDA backends: argument checks and the
// matrix products (through ATen: BLAS on the CPU, cuBLAS on CUDA). Each backend supplies its
// fused elementwise passes and instantiates `cell_forward` / `cell_backward` with them, as its
// step_forward and step_backward (kernels.h).
#pragma once

#include "aten.h"
#include "checks.h"

#include <array>
#include <tuple>
#include <utility>

namespace lltm {

// Fused passes. Every tensor is contiguous and on one device; batch may be 0.
// gates (batch, 3*state) holds the gate pre-activations; the backward recomputes the activations.
// The backward also writes d_bias (3*state), d_gates summed over the batch, when it is defined.
using FusedForward = void (*)(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h,
                              const Tensor& new_cell);
using FusedBackward = void (*)(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates,
                               const Tensor& old_cell, const Tensor& d_gates, const Tensor& d_old_cell,
                               const Tensor& d_bias);

struct StepSizes {
  int64_t batch, features, state;
};

// Every argument of the cell's forward operator, in the order of checks.py's check_step, which the
// fake kernel runs: the two give the same words.
inline StepSizes check_step(const Tensor& input, const Tensor& weights, const Tensor& bias, const Tensor& old_h,
                            const Tensor& old_cell) {
  constexpr const char* op = "lltm";
  const std::initializer_list<Named> named{
      {"input", &input}, {"weights", &weights}, {"bias", &bias}, {"old_h", &old_h}, {"old_cell", &old_cell}};
  check_defined(op, named);
  check_same_kind(op, named);
  check_rank(op, input, "input", 2, "(batch, input_features)");
  check_rank(op, old_h, "old_h", 2, "(batch, state_size)");
  check_non_empty(op, old_h, "old_h", 1, "state");
  check_non_empty(op, input, "input", 1, "feature");
  const CellSizes cell = check_parameters(op, weights, &bias, input.size(1), old_h.size(1),
                                          old_cell.dim() == 2 ? old_cell.size(1) : 0);
  check_input_features(op, input, "(batch, input_features)", weights, cell.features);
  const StepSizes s{input.size(0), cell.features, cell.state};
  check_shape(op, old_h, "old_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, old_cell, "old_cell", "(batch, state_size)", {s.batch, s.state});
  return s;
}

// [old_h, input] (batch, state + features), which the step's products read as one matrix (one
// product rather than one per block of weights' columns, the second of which would re-read and
// re-write the first's result). Each backend joins the two its way: CUDA through at::cat (one
// kernel), the CPU by rows (cell_cpu.cpp), whose build then needs no at::cat (aten_cuda.cpp).
using Join = Tensor (*)(const Tensor& old_h, const Tensor& input);

inline Tensor cat_columns(const Tensor& old_h, const Tensor& input) { return aten::cat(old_h, input, 1); }

// The forward's product, gates = bias + joined weights^T (joined: [old_h, input]). ATen's here; a
// backend may supply its own (the CPU's, in float for half types where ATen's are slow).
using GatesProduct = Tensor (*)(const Tensor& bias, const Tensor& joined, const Tensor& weights);

inline Tensor aten_gates(const Tensor& bias, const Tensor& joined, const Tensor& weights) {
  return bias.addmm(joined, weights.t());
}

// Returns new_h, new_cell and, for the backward, the gate pre-activations.
template <FusedForward fused, Join join, GatesProduct product = aten_gates>
std::tuple<Tensor, Tensor, Tensor> cell_forward(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                const Tensor& old_h, const Tensor& old_cell) {
  const StepSizes s = check_step(input, weights, bias, old_h, old_cell);
  const Tensor gates = product(bias.reshape({3 * s.state}), join(old_h, input), weights);
  Tensor new_h = input.new_empty({s.batch, s.state});
  Tensor new_cell = input.new_empty({s.batch, s.state});
  fused(gates, old_cell.contiguous(), new_h, new_cell);
  return {new_h, new_cell, gates};
}

// d_weights = d_gates^T [old_h, input]: one product over a copy of [old_h, input] (the forward's
// copy is not kept, since a sequence would keep one per step), or, for a large copy on CUDA, two
// products into d_weights' two blocks of columns, where the copy costs the device more than the
// second product.
template <Join join>
Tensor weights_gradient(const Tensor& d_gates, const Tensor& old_h, const Tensor& input) {
  const int64_t batch = input.size(0), features = input.size(1), state = old_h.size(1);
  const int64_t copy_bytes = batch * (state + features) * d_gates.element_size();
  if (d_gates.is_cuda() && copy_bytes > (int64_t{8} << 20)) {
    Tensor d_weights = d_gates.new_empty({3 * state, state + features});
    Tensor d_weights_h = d_weights.narrow(1, 0, state);
    Tensor d_weights_input = d_weights.narrow(1, state, features);
    aten::mm_out(d_weights_h, d_gates.t(), old_h);
    aten::mm_out(d_weights_input, d_gates.t(), input);
    return d_weights;
  }
  return d_gates.t().mm(join(old_h, input));
}

// The backward's products from d_gates: d_weights where want_weights, d_[old_h, input] = d_gates
// weights where want_old_h_input (each undefined otherwise). ATen's here; a backend may supply
// its own (the CPU's, on raw pointers).
using StepProducts = std::pair<Tensor, Tensor> (*)(const Tensor& d_gates, const Tensor& old_h, const Tensor& input,
                                                   const Tensor& weights, bool want_weights, bool want_old_h_input);

template <Join join>
std::pair<Tensor, Tensor> aten_step_products(const Tensor& d_gates, const Tensor& old_h, const Tensor& input,
                                             const Tensor& weights, bool want_weights, bool want_old_h_input) {
  return {want_weights ? weights_gradient<join>(d_gates, old_h, input) : Tensor(),
          want_old_h_input ? d_gates.mm(weights) : Tensor()};
}

// Returns the gradients of [old_h, input] (batch, state_size + input_features), weights, bias (as
// (3 * state_size,)) and old_cell; output_mask says which of the first three to compute (the
// others are undefined).
template <FusedBackward fused, StepProducts products>
std::tuple<Tensor, Tensor, Tensor, Tensor> cell_backward(const Tensor& grad_h, const Tensor& grad_cell,
                                                         const Tensor& input, const Tensor& weights,
                                                         const Tensor& old_h, const Tensor& gates,
                                                         const Tensor& old_cell, std::array<bool, 3> output_mask) {
  constexpr const char* op = "lltm_backward";
  // What the forward saved first, then the incoming gradients (the fake kernel's order: checks.py)
  const std::initializer_list<Named> named{{"input", &input}, {"weights", &weights}, {"old_h", &old_h},
                                           {"gates", &gates}, {"old_cell", &old_cell}, {"grad_h", &grad_h},
                                           {"grad_cell", &grad_cell}};
  check_defined(op, named);
  check_same_kind(op, named);
  check_rank(op, input, "input", 2, "(batch, input_features)");
  check_rank(op, old_h, "old_h", 2, "(batch, state_size)");
  check_non_empty(op, old_h, "old_h", 1, "state");
  const StepSizes s{input.size(0), input.size(1), old_h.size(1)};
  check_shape(op, old_h, "old_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, old_cell, "old_cell", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, gates, "gates", "(batch, 3 * state_size)", {s.batch, 3 * s.state});
  check_shape(op, weights, "weights", "(3 * state_size, state_size + input_features)",
              {3 * s.state, s.state + s.features});
  check_shape(op, grad_h, "grad_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(op, grad_cell, "grad_cell", "(batch, state_size)", {s.batch, s.state});
  const auto [want_old_h_input, want_weights, want_bias] = output_mask;

  Tensor d_gates = gates.new_empty({s.batch, 3 * s.state});
  Tensor d_old_cell = gates.new_empty({s.batch, s.state});
  Tensor d_bias = want_bias ? gates.new_empty({3 * s.state}) : Tensor();
  fused(grad_h.contiguous(), grad_cell.contiguous(), gates.contiguous(), old_cell.contiguous(), d_gates,
        d_old_cell, d_bias);
  const auto [d_weights, d_old_h_input] = products(d_gates, old_h, input, weights, want_weights, want_old_h_input);
  return {d_old_h_input, d_weights, d_bias, d_old_cell};
}

}  // namespace lltm
