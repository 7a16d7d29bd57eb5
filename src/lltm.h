// Host side of the LLTM ops, shared by the CPU and CUDA backends: argument checks and the matrix
// products (through ATen, so BLAS on the CPU and cuBLAS on CUDA). Each backend supplies only its
// fused elementwise passes and instantiates `forward` / `backward` with them.
#pragma once

#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>

#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#ifndef LLTM_JIT_NAMESPACE
#error "LLTM_JIT_NAMESPACE must name the operator namespace (the loader passes -DLLTM_JIT_NAMESPACE=...)"
#endif

namespace lltm {

using at::Tensor;

// Fused passes. Every tensor is contiguous and on one device; batch may be 0.
// gates (batch, 3*state) holds the gate pre-activations; the backward recomputes the activations.
// The backward also writes d_bias (3*state), d_gates summed over the batch.
using FusedForward = void (*)(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h,
                              const Tensor& new_cell);
using FusedBackward = void (*)(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates,
                               const Tensor& old_cell, const Tensor& d_gates,
                               const Tensor& d_old_cell, const Tensor& d_bias);

// Error messages are built with std::to_string and concatenation, and handed to TORCH_CHECK as
// one string: given several arguments, c10::str formats them through a std::ostringstream
// instantiated in this library, and formatting a number that way crashed (SIGSEGV in
// basic_ostream::_M_insert<long>) under the GCC 13 / torch 2.11 image of our GPU machine.
inline std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const auto part : parts) out += part;
  return out;
}

inline std::string shape_str(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

inline void check_rank(const Tensor& t, const char* name, int64_t rank, const char* dims) {
  TORCH_CHECK(t.dim() == rank, cat({"lltm: ", name, " must have ", std::to_string(rank), " dimensions ",
                                    dims, ", got ", std::to_string(t.dim()), " with shape ",
                                    shape_str(t.sizes())}));
}

inline void check_shape(const Tensor& t, const char* name, const char* dims,
                        std::vector<int64_t> expected) {
  TORCH_CHECK(t.sizes() == at::IntArrayRef(expected),
              cat({"lltm: ", name, " must have shape ", dims, " = ", shape_str(expected), ", got ",
                   shape_str(t.sizes())}));
}

inline void check_non_empty_state(const Tensor& old_h) {
  TORCH_CHECK(old_h.size(1) > 0, cat({"lltm: old_h must have a non-empty state dimension, got shape ",
                                      shape_str(old_h.sizes())}));
}

// All tensors on `first`'s device and of its floating dtype.
inline void check_same_kind(const std::vector<std::pair<const char*, const Tensor*>>& named) {
  const auto& [first_name, first] = named.front();
  const auto dtype = first->scalar_type();
  TORCH_CHECK(dtype == at::kDouble || dtype == at::kFloat || dtype == at::kHalf ||
                  dtype == at::kBFloat16,
              cat({"lltm: ", first_name,
                   " must be a floating-point tensor (float64, float32, float16 or bfloat16), got ",
                   c10::toString(dtype)}));
  for (const auto& [name, t] : named) {
    TORCH_CHECK(t->device() == first->device(),
                cat({"lltm: all tensors must be on one device: ", first_name, " is on ",
                     first->device().str(), " but ", name, " is on ", t->device().str()}));
    TORCH_CHECK(t->scalar_type() == dtype,
                cat({"lltm: all tensors must have one dtype: ", first_name, " is ",
                     c10::toString(dtype), " but ", name, " is ", c10::toString(t->scalar_type())}));
  }
}

struct Sizes {
  int64_t batch, features, state;
};

inline Sizes check_forward_args(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                const Tensor& old_h, const Tensor& old_cell) {
  check_same_kind({{"input", &input}, {"weights", &weights}, {"bias", &bias}, {"old_h", &old_h},
                   {"old_cell", &old_cell}});
  check_rank(input, "input", 2, "(batch, input_features)");
  check_rank(old_h, "old_h", 2, "(batch, state_size)");
  check_rank(weights, "weights", 2, "(3 * state_size, state_size + input_features)");
  const Sizes s{input.size(0), input.size(1), old_h.size(1)};
  check_non_empty_state(old_h);
  TORCH_CHECK(s.features > 0, cat({"lltm: input must have a non-empty feature dimension, got shape ",
                                    shape_str(input.sizes())}));
  check_shape(old_h, "old_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(old_cell, "old_cell", "(batch, state_size)", {s.batch, s.state});
  check_shape(weights, "weights", "(3 * state_size, state_size + input_features)",
              {3 * s.state, s.state + s.features});
  TORCH_CHECK(bias.numel() == 3 * s.state && (bias.dim() == 1 || (bias.dim() == 2 && bias.size(0) == 1)),
              cat({"lltm: bias must have shape (3 * state_size,) or (1, 3 * state_size) = ",
                   shape_str({3 * s.state}), ", got ", shape_str(bias.sizes())}));
  return s;
}

// Returns new_h, new_cell and, for the backward, the gate pre-activations.
template <FusedForward fused>
std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& input, const Tensor& weights,
                                           const Tensor& bias, const Tensor& old_h,
                                           const Tensor& old_cell) {
  const Sizes s = check_forward_args(input, weights, bias, old_h, old_cell);
  // One product over the copy [old_h, input] rather than two products, one per block of weights'
  // columns: on the CPU at the tutorial's size the two cost 28 us against 22 us for one, and the
  // copy 2 us; on CUDA the second product would re-read and re-write the gates.
  const Tensor gates = at::addmm(bias.reshape({3 * s.state}), at::cat({old_h, input}, 1), weights.t());
  const auto opts = input.options();
  Tensor new_h = at::empty({s.batch, s.state}, opts);
  Tensor new_cell = at::empty({s.batch, s.state}, opts);
  fused(gates, old_cell.contiguous(), new_h, new_cell);
  return {new_h, new_cell, gates};
}

// Returns the gradients of [old_h, input] (batch, state_size + input_features), weights, bias (as
// (3 * state_size,)) and old_cell.
template <FusedBackward fused>
std::tuple<Tensor, Tensor, Tensor, Tensor> backward(const Tensor& grad_h, const Tensor& grad_cell,
                                                    const Tensor& input, const Tensor& weights,
                                                    const Tensor& old_h, const Tensor& gates,
                                                    const Tensor& old_cell) {
  check_same_kind({{"grad_h", &grad_h}, {"grad_cell", &grad_cell}, {"input", &input},
                   {"weights", &weights}, {"old_h", &old_h}, {"gates", &gates},
                   {"old_cell", &old_cell}});
  check_rank(input, "input", 2, "(batch, input_features)");
  check_rank(old_h, "old_h", 2, "(batch, state_size)");
  const Sizes s{input.size(0), input.size(1), old_h.size(1)};
  check_non_empty_state(old_h);
  check_shape(old_h, "old_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(grad_h, "grad_h", "(batch, state_size)", {s.batch, s.state});
  check_shape(grad_cell, "grad_cell", "(batch, state_size)", {s.batch, s.state});
  check_shape(old_cell, "old_cell", "(batch, state_size)", {s.batch, s.state});
  check_shape(gates, "gates", "(batch, 3 * state_size)", {s.batch, 3 * s.state});
  check_shape(weights, "weights", "(3 * state_size, state_size + input_features)",
              {3 * s.state, s.state + s.features});

  const auto opts = gates.options();
  Tensor d_gates = at::empty({s.batch, 3 * s.state}, opts);
  Tensor d_old_cell = at::empty({s.batch, s.state}, opts);
  Tensor d_bias = at::empty({3 * s.state}, opts);
  fused(grad_h.contiguous(), grad_cell.contiguous(), gates.contiguous(), old_cell.contiguous(),
        d_gates, d_old_cell, d_bias);
  // d_weights = d_gates^T [old_h, input]: one product over a copy of [old_h, input] (the forward's
  // copy is not kept: (state_size + input_features) values per row for every step of a sequence),
  // or, for a large copy on CUDA, two products into its two blocks of columns. Each product costs
  // the host ~20 us on an H200's host, which bounds a small step; at 4096x1024x1024 bf16 the
  // copy (16 MiB) costs the device more than the split (benchmarks/NOTES.md). On the CPU a split
  // costs more at any size (+8 us of 25 at the tutorial's size).
  const int64_t copy_bytes = s.batch * (s.state + s.features) * gates.element_size();
  Tensor d_weights;
  if (gates.is_cuda() && copy_bytes > (int64_t{8} << 20)) {
    d_weights = at::empty({3 * s.state, s.state + s.features}, opts);
    Tensor d_weights_h = d_weights.narrow(1, 0, s.state);
    Tensor d_weights_input = d_weights.narrow(1, s.state, s.features);
    at::mm_out(d_weights_h, d_gates.t(), old_h);
    at::mm_out(d_weights_input, d_gates.t(), input);
  } else {
    d_weights = at::mm(d_gates.t(), at::cat({old_h, input}, 1));
  }
  return {at::mm(d_gates, weights), d_weights, d_bias, d_old_cell};
}

}  // namespace lltm
