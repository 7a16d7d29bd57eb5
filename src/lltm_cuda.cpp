// CUDA backend registration: the ATen side of the kernels in lltm_cuda_kernels.cu.
#include "lltm.h"
#include "lltm_cuda.h"

#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
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
                  const Tensor& new_cell, const Tensor& tanh_cell) {
  // Otherwise the kernel would launch on the current device, not the inputs' one.
  const c10::cuda::CUDAGuard guard(gates.device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_forward_cuda", [&] {
    cuda::launch_forward(ptr<scalar_t>(gates), ptr<scalar_t>(old_cell), ptr<scalar_t>(new_h),
                         ptr<scalar_t>(new_cell), ptr<scalar_t>(tanh_cell), old_cell.size(0),
                         old_cell.size(1), stream);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void cuda_backward(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates,
                   const Tensor& tanh_cell, const Tensor& d_gates, const Tensor& d_old_cell) {
  const c10::cuda::CUDAGuard guard(gates.device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_backward_cuda", [&] {
    cuda::launch_backward(ptr<scalar_t>(grad_h), ptr<scalar_t>(grad_cell), ptr<scalar_t>(gates),
                          ptr<scalar_t>(tanh_cell), ptr<scalar_t>(d_gates),
                          ptr<scalar_t>(d_old_cell), grad_h.size(0), grad_h.size(1), stream);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, CUDA, m) {
  m.impl("forward", TORCH_FN(lltm::forward<lltm::cuda_forward>));
  m.impl("backward", TORCH_FN(lltm::backward<lltm::cuda_backward>));
}
