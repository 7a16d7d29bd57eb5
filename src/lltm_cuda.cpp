// CUDA backend registration: the ATen side of the kernels in lltm_cuda_kernels.cu.
#include "lltm.h"
#include "lltm_cuda.h"

#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>  // C10_CUDA_CHECK
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <torch/library.h>

namespace lltm {
namespace {

// ATen's half types and CUDA's have the same layout; the kernels take CUDA's.
template <typename T>
struct CudaType {
  using type = T;
};
template <>
struct CudaType<c10::Half> {
  using type = __half;
};
template <>
struct CudaType<c10::BFloat16> {
  using type = __nv_bfloat16;
};

template <typename scalar_t>
auto* ptr(const Tensor& t) {
  return reinterpret_cast<typename CudaType<scalar_t>::type*>(t.data_ptr<scalar_t>());
}

void cuda_forward(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h,
                  const Tensor& new_cell) {
  // Otherwise the kernel would launch on the current device, not the inputs' one.
  const c10::cuda::CUDAGuard guard(gates.device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_forward_cuda", [&] {
    C10_CUDA_CHECK(cuda::launch_forward(ptr<scalar_t>(gates), ptr<scalar_t>(old_cell), ptr<scalar_t>(new_h),
                                        ptr<scalar_t>(new_cell), old_cell.size(0), old_cell.size(1),
                                        cuda::multiprocessors(), stream));
  });
}

void cuda_backward(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates,
                   const Tensor& old_cell, const Tensor& d_gates, const Tensor& d_old_cell,
                   const Tensor& d_bias) {
  const int64_t batch = grad_h.size(0), state = grad_h.size(1);
  if (batch == 0) {
    d_bias.zero_();  // a sum over no rows
    return;
  }
  const c10::cuda::CUDAGuard guard(gates.device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // Partial sums of the bias gradient, in the math type (float for the half types).
  const int multiprocessors = cuda::multiprocessors();
  const int64_t partial_rows = cuda::bias_partial_rows(batch, multiprocessors);
  const auto math_dtype = gates.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const Tensor partials =
      partial_rows > 1 ? at::empty({partial_rows, 3 * state}, gates.options().dtype(math_dtype)) : Tensor();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_backward_cuda", [&] {
    using math_t = cuda::opmath_t<typename CudaType<scalar_t>::type>;
    C10_CUDA_CHECK(cuda::launch_backward(
        ptr<scalar_t>(grad_h), ptr<scalar_t>(grad_cell), ptr<scalar_t>(gates), ptr<scalar_t>(old_cell),
        ptr<scalar_t>(d_gates), ptr<scalar_t>(d_old_cell), ptr<scalar_t>(d_bias),
        partials.defined() ? partials.data_ptr<math_t>() : nullptr, batch, state, multiprocessors, stream));
  });
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, CUDA, m) {
  m.impl("forward", TORCH_FN(lltm::forward<lltm::cuda_forward>));
  m.impl("backward", TORCH_FN(lltm::backward<lltm::cuda_backward>));
}
