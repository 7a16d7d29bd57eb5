// The persistent forward kernels on tensor cores for c10::BFloat16 storage whose groups run as
// thread-block clusters, of two cells of the state a thread (those of four:
// tensor_core_forward_bf16_wide.cu).
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<c10::BFloat16, 8, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<c10::BFloat16, 16, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<c10::BFloat16, 32, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
