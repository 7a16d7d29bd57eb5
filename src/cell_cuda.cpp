// The cell's CUDA backend: the ATen side of the kernels in cell_cuda.cu.
#include "cell.h"
#include "cell_cuda.h"
#include "cuda_device.h"
#include "kernels.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace lltm {
namespace {

cuda::CellParams cell_params(const Tensor& gates, const Tensor& old_cell) {
  cuda::CellParams p{};
  p.batch = old_cell.size(0);
  p.state = old_cell.size(1);
  p.multiprocessors = cuda::device_attribute(cudaDevAttrMultiProcessorCount);
  p.gates = gates.const_data_ptr();
  p.old_cell = old_cell.const_data_ptr();
  return p;
}

void cuda_forward(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h, const Tensor& new_cell) {
  // Otherwise the kernel would launch on the current device, not the inputs' one.
  const c10::cuda::CUDAGuard guard(gates.device());
  cuda::CellParams p = cell_params(gates, old_cell);
  p.new_h = new_h.data_ptr();
  p.new_cell = new_cell.data_ptr();
  C10_CUDA_CHECK(cuda::launch_cell_forward(p, kernel_dtype(gates.scalar_type()), c10::cuda::getCurrentCUDAStream()));
}

void cuda_backward(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates, const Tensor& old_cell,
                   const Tensor& d_gates, const Tensor& d_old_cell, const Tensor& d_bias) {
  if (grad_h.size(0) == 0) {
    if (d_bias.defined()) d_bias.zero_();  // a sum over no rows
    return;
  }
  const c10::cuda::CUDAGuard guard(gates.device());
  cuda::CellParams p = cell_params(gates, old_cell);
  p.grad_h = grad_h.const_data_ptr();
  p.grad_cell = grad_cell.const_data_ptr();
  p.d_gates = d_gates.data_ptr();
  p.d_old_cell = d_old_cell.data_ptr();
  p.d_bias = d_bias.defined() ? d_bias.data_ptr() : nullptr;
  // Partial sums of the bias gradient, in the math type (float for the half types).
  const int64_t partial_rows = d_bias.defined() ? cuda::bias_partial_rows(p.batch, p.multiprocessors) : 0;
  const Tensor partials =
      partial_rows > 1
          ? gates.new_empty({partial_rows, 3 * p.state}, gates.options().dtype(at::toOpMathType(gates.scalar_type())))
          : Tensor();
  p.bias_partials = partials.defined() ? partials.data_ptr() : nullptr;
  C10_CUDA_CHECK(cuda::launch_cell_backward(p, kernel_dtype(gates.scalar_type()), c10::cuda::getCurrentCUDAStream()));
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> cuda::step_forward(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                      const Tensor& old_h, const Tensor& old_cell) {
  return cell_forward<cuda_forward, cat_columns>(input, weights, bias, old_h, old_cell);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> cuda::step_backward(const Tensor& grad_h, const Tensor& grad_cell,
                                                               const Tensor& input, const Tensor& weights,
                                                               const Tensor& old_h, const Tensor& gates,
                                                               const Tensor& old_cell,
                                                               std::array<bool, 3> output_mask) {
  return cell_backward<cuda_backward, aten_step_products<cat_columns>>(grad_h, grad_cell, input, weights, old_h,
                                                                     gates, old_cell, output_mask);
}

}  // namespace lltm
