// Argument checks and their messages, shared by every operator's host code. Each message starts
// with the operator's name and names the argument, what was expected and what was given:
//   "lltm: old_h must have shape (batch, state_size) = (16, 128), got (16, 64)".
// lltm_jit/checks.py gives the fake kernels the same rules and messages.
#pragma once

#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>

#include "dtypes.h"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lltm {

using at::Tensor;

// Joins message parts that are already strings. TORCH_CHECK's own formatting of numbers (through
// a std::ostringstream) works too, given the loader's link flags (see LD_FLAGS in loader.py).
inline std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const auto part : parts) out += part;
  return out;
}

inline std::string shape_str(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

inline void check_rank(const char* op, const Tensor& t, const char* name, int64_t rank, const char* dims) {
  TORCH_CHECK(t.dim() == rank, join({op, ": ", name, " must have ", std::to_string(rank), " dimensions ", dims,
                                     ", got ", std::to_string(t.dim()), " with shape ", shape_str(t.sizes())}));
}

inline void check_shape(const char* op, const Tensor& t, const char* name, const char* dims,
                        std::vector<int64_t> expected) {
  TORCH_CHECK(t.sizes() == at::IntArrayRef(expected), join({op, ": ", name, " must have shape ", dims, " = ",
                                                            shape_str(expected), ", got ", shape_str(t.sizes())}));
}

inline void check_non_empty(const char* op, const Tensor& t, const char* name, int64_t dim, const char* what) {
  TORCH_CHECK(t.size(dim) > 0, join({op, ": ", name, " must have a non-empty ", what, " dimension, got shape ",
                                     shape_str(t.sizes())}));
}

using Named = std::pair<const char*, const Tensor*>;

// Tensors an operator needs: an undefined one is C++'s None (and what torch.ops passes for a None
// given to the raw operators), the message of the Python entry points' TypeError.
inline void check_defined(const char* op, std::initializer_list<Named> named) {
  for (const auto& [name, t] : named) {
    TORCH_CHECK_TYPE(t->defined(), join({op, ": ", name, " must be a Tensor, got an undefined one"}));
  }
}

// Every defined tensor on `first`'s device and of its dtype, one of the supported ones (an
// undefined one is an optional argument not given).
inline void check_same_kind(const char* op, std::initializer_list<Named> named) {
  const auto& [first_name, first] = *named.begin();
  const auto dtype = first->scalar_type();
  TORCH_CHECK(is_supported(dtype), join({op, ": ", first_name,
                                         " must be a floating-point tensor (float64, float32, float16 or bfloat16), got ",
                                         c10::toString(dtype)}));
  for (const auto& [name, t] : named) {
    if (!t->defined()) continue;
    TORCH_CHECK(t->device() == first->device(), join({op, ": all tensors must be on one device: ", first_name, " is on ",
                                                      first->device().str(), " but ", name, " is on ", t->device().str()}));
    TORCH_CHECK(t->scalar_type() == dtype, join({op, ": all tensors must have one dtype: ", first_name, " is ",
                                                 c10::toString(dtype), " but ", name, " is ",
                                                 c10::toString(t->scalar_type())}));
  }
}

// The cell's parameters: weights (3 * state_size, state_size + input_features) multiplying
// [h, input], bias (3 * state_size,) or (1, 3 * state_size). The sizes come from weights, so that
// an input or a state of the wrong width is the one blamed; the weights are blamed where they
// cannot give them (rows that do not divide by three, no column left for the input) and where
// the caller's state tensors and the bias all agree on another state size (transposed weights,
// say; shapes alone cannot tell those from a state and a bias all wrong alike).
struct CellSizes {
  int64_t features, state;
};

// features: the input's width, which the weights' message expects. bias: nullptr where the caller
// has none to check. given_state: the state size of the caller's first state tensor, the size
// expected where weights' rows do not divide by three (0: the caller has none, and rows / 3 is
// expected); other_state: its second's (0: none), which must agree for the weights to be outvoted.
inline CellSizes check_parameters(const char* op, const Tensor& weights, const Tensor* bias, int64_t features,
                                  int64_t given_state, int64_t other_state = 0) {
  check_rank(op, weights, "weights", 2, "(3 * state_size, state_size + input_features)");
  check_non_empty(op, weights, "weights", 0, "first");
  const int64_t rows = weights.size(0);
  const bool outvoted = given_state > 0 && rows != 3 * given_state && bias && bias->numel() == 3 * given_state &&
                        (other_state == 0 || other_state == given_state);
  const int64_t state = rows % 3 == 0 && !outvoted ? rows / 3 : given_state > 0 ? given_state : rows / 3;
  if (rows != 3 * state || weights.size(1) <= state) {
    check_shape(op, weights, "weights", "(3 * state_size, state_size + input_features)",
                {3 * state, state + features});
  }
  TORCH_CHECK(!bias || (bias->numel() == 3 * state && (bias->dim() == 1 || (bias->dim() == 2 && bias->size(0) == 1))),
              join({op, ": bias must have shape (3 * state_size,) or (1, 3 * state_size) = ",
                    shape_str({3 * state}), ", got ", shape_str(bias->sizes())}));
  return {weights.size(1) - state, state};
}

// Where only weights' rows are read (the state size): 2-D, with a positive multiple of 3 rows.
inline void check_weight_rows(const char* op, const Tensor& weights) {
  check_rank(op, weights, "weights", 2, "(3 * state_size, state_size + input_features)");
  TORCH_CHECK(weights.size(0) > 0 && weights.size(0) % 3 == 0,
              join({op, ": weights must have 3 * state_size rows, a positive multiple of 3, got shape ",
                    shape_str(weights.sizes())}));
}

// input's last dimension against the features that weights take; dims names input's dimensions.
inline void check_input_features(const char* op, const Tensor& input, const char* dims, const Tensor& weights,
                                 int64_t features) {
  std::vector<int64_t> expected(input.sizes().begin(), input.sizes().end());
  expected.back() = features;
  TORCH_CHECK(input.size(-1) == features, join({op, ": input must have shape ", dims, " = ", shape_str(expected),
                                                " to match weights ", shape_str(weights.sizes()), ", got ",
                                                shape_str(input.sizes())}));
}

}  // namespace lltm
