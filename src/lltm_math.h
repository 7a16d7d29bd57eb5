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

// The transcendental functions and the reciprocal, correctly rounded or nearly: the C++ library's
// on the host, CUDA's on the device. Other policies derive from this one and replace some: the
// CPU backend's vectorisable float functions (cell_cpu.cpp), the CUDA backend's hardware
// approximations for half and bfloat16 storage (cuda_utils.cuh).
struct StdMath {
  template <typename T>
  LLTM_HD static T exp(T x) { return std::exp(x); }
  template <typename T>
  LLTM_HD static T expm1(T x) { return std::expm1(x); }
  template <typename T>
  LLTM_HD static T tanh(T x) { return std::tanh(x); }
  template <typename T>
  LLTM_HD static T reciprocal(T x) { return T(1) / x; }
};

template <typename Math, typename T>
LLTM_HD T sigmoid(T z) {
  return Math::reciprocal(T(1) + Math::exp(-z));
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

// The three gates' activations from their pre-activations (the gate product's output).
template <typename T>
struct Gates {
  T input, output, candidate;
};

template <typename T, typename Math>
LLTM_HD Gates<T> activate(T z_input, T z_output, T z_candidate) {
  return {sigmoid<Math>(z_input), sigmoid<Math>(z_output), elu<Math>(z_candidate)};
}

// The cell update: new_cell from old_cell and the activated gates.
template <typename T>
LLTM_HD T new_cell_from(T old_cell, Gates<T> g) {
  return old_cell + g.candidate * g.input;
}

// Forward of one (batch, state) element, from the gate pre-activations and old_cell.
template <typename T>
struct ForwardOut {
  T new_cell, new_h;
};

template <typename T, typename Math = StdMath>
LLTM_HD ForwardOut<T> forward_point(T z_input, T z_output, T z_candidate, T old_cell) {
  const Gates<T> g = activate<T, Math>(z_input, z_output, z_candidate);
  const T new_cell = new_cell_from(old_cell, g);
  return {new_cell, Math::tanh(new_cell) * g.output};
}

// Backward of one element, from the incoming gradients, the gate activations and tanh(new_cell).
template <typename T>
struct BackwardOut {
  T d_input_gate, d_output_gate, d_candidate, d_old_cell;  // d_* of the gate pre-activations
};

template <typename T>
LLTM_HD BackwardOut<T> backward_from_activations(T grad_h, T grad_cell, Gates<T> g, T tanh_cell) {
  BackwardOut<T> o;
  const T d_cell = grad_cell + grad_h * g.output * (T(1) - tanh_cell * tanh_cell);
  o.d_old_cell = d_cell;
  o.d_input_gate = d_cell * g.candidate * g.input * (T(1) - g.input);
  o.d_output_gate = grad_h * tanh_cell * g.output * (T(1) - g.output);
  o.d_candidate = d_cell * g.input * d_elu_from_output(g.candidate);
  return o;
}

// The same from the gate pre-activations and old_cell, as the forward keeps them: the activations
// and new_cell are recomputed rather than kept, which spares the forward pass writing them (memory
// traffic, the limit of both passes, against arithmetic that is cheap beside it).
template <typename T, typename Math = StdMath>
LLTM_HD BackwardOut<T> backward_point(T grad_h, T grad_cell, T z_input, T z_output, T z_candidate,
                                      T old_cell) {
  const Gates<T> g = activate<T, Math>(z_input, z_output, z_candidate);
  return backward_from_activations(grad_h, grad_cell, g, Math::tanh(new_cell_from(old_cell, g)));
}

}  // namespace lltm
