// The LLTM cell's elementwise math, written once for the CPU and the CUDA backends.
//
// This header includes no torch header so that the CUDA kernel file compiles without ATen.
// `T` is the type the math runs in: float for float/half/bfloat16 storage, double for double.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define LLTM_HD __host__ __device__ __forceinline__
#else
#define LLTM_HD inline
#endif

namespace lltm {

// The transcendental functions, correctly rounded or nearly: the C++ library's on the host,
// CUDA's on the device. The CPU backend swaps in a vectorisable policy for float (lltm_ops.cpp).
struct StdMath {
  template <typename T>
  LLTM_HD static T exp(T x) { return std::exp(x); }
  template <typename T>
  LLTM_HD static T expm1(T x) { return std::expm1(x); }
  template <typename T>
  LLTM_HD static T tanh(T x) { return std::tanh(x); }
};

template <typename Math, typename T>
LLTM_HD T sigmoid(T z) {
  return T(1) / (T(1) + Math::exp(-z));
}

// elu with alpha = 1; expm1 keeps full precision for small negative z. Computed for every z and
// then selected, which lets a compiler vectorise the loop around it (no branch).
template <typename Math, typename T>
LLTM_HD T elu(T z) {
  const T negative = Math::expm1(z);
  return z > T(0) ? z : negative;
}

// d/dz elu(z), from its output: elu(z) > 0 exactly when z > 0, and exp(z) = elu(z) + 1 otherwise.
template <typename T>
LLTM_HD T d_elu_from_output(T e) {
  return e > T(0) ? T(1) : e + T(1);
}

// Forward of one (batch, state) element.
// In: the three gate pre-activations and old_cell. Out: the activated gates (kept for the backward,
// which then needs no transcendental function), tanh(new_cell), new_cell and new_h.
template <typename T>
struct ForwardOut {
  T input_gate, output_gate, candidate, tanh_cell, new_cell, new_h;
};

template <typename T, typename Math = StdMath>
LLTM_HD ForwardOut<T> forward_point(T z_input, T z_output, T z_candidate, T old_cell) {
  ForwardOut<T> o;
  o.input_gate = sigmoid<Math>(z_input);
  o.output_gate = sigmoid<Math>(z_output);
  o.candidate = elu<Math>(z_candidate);
  o.new_cell = old_cell + o.candidate * o.input_gate;
  o.tanh_cell = Math::tanh(o.new_cell);
  o.new_h = o.tanh_cell * o.output_gate;
  return o;
}

// Backward of one element, from the incoming gradients and what forward_point kept.
template <typename T>
struct BackwardOut {
  T d_input_gate, d_output_gate, d_candidate, d_old_cell;  // d_* of the gate pre-activations
};

template <typename T>
LLTM_HD BackwardOut<T> backward_point(T grad_h, T grad_cell, T input_gate, T output_gate,
                                      T candidate, T tanh_cell) {
  BackwardOut<T> o;
  const T d_cell = grad_cell + grad_h * output_gate * (T(1) - tanh_cell * tanh_cell);
  o.d_old_cell = d_cell;
  o.d_input_gate = d_cell * candidate * input_gate * (T(1) - input_gate);
  o.d_output_gate = grad_h * tanh_cell * output_gate * (T(1) - output_gate);
  o.d_candidate = d_cell * input_gate * d_elu_from_output(candidate);
  return o;
}

}  // namespace lltm
