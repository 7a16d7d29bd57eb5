// The CPU backend's fused elementwise passes over a step's rows, shared by the cell and the
// sequence operators. Tensors contiguous, on the CPU, of one dtype; batch may be 0.
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

}  // namespace lltm::cpu
