// The CPU backend's fused elementwise passes over a step's rows, shared by the cell and the
// sequence operators, and the dtype their products run in. Tensors contiguous, on the CPU, of one
// dtype; batch may be 0.
#pragma once

#include <ATen/core/Tensor.h>

namespace lltm::cpu {

// gates (batch, 3 * state) pre-activations and old_cell (batch, state) -> new_h, new_cell.
void forward(const at::Tensor& gates, const at::Tensor& old_cell, const at::Tensor& new_h,
             const at::Tensor& new_cell);

// -> d_gates (batch, 3 * state), d_old_cell and, when defined, d_bias (3 * state), d_gates summed
// over the batch.
void backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& gates,
              const at::Tensor& old_cell, const at::Tensor& d_gates, const at::Tensor& d_old_cell,
              const at::Tensor& d_bias);

// The same on raw rows (rows x state elements) on the calling thread, for a caller that runs its
// own threads (the sequence's recurrence); float and double, the types the recurrence runs in.
void forward_rows(const float* gates, const float* old_cell, float* new_h, float* new_cell, int64_t rows,
                  int64_t state);
void forward_rows(const double* gates, const double* old_cell, double* new_h, double* new_cell, int64_t rows,
                  int64_t state);
void backward_rows(const float* grad_h, const float* grad_cell, const float* gates, const float* old_cell,
                   float* d_gates, float* d_old_cell, int64_t rows, int64_t state);
void backward_rows(const double* grad_h, const double* grad_cell, const double* gates, const double* old_cell,
                   double* d_gates, double* d_old_cell, int64_t rows, int64_t state);

// Whether the products of `type` run in float here: the half types where the CPU lacks their dot
// products (cpu_bf16.h's native_half_products).
bool products_in_float(at::ScalarType type);

// t in `type`; undefined stays undefined.
at::Tensor in_type(const at::Tensor& t, at::ScalarType type);

}  // namespace lltm::cpu
