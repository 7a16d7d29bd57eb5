// The persistent forward kernels on tensor cores for bfloat16 storage whose groups run as
// thread-block clusters, of two cells of the state a thread (those of four:
// tensor_core_forward_bf16_wide.cu).
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 8, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 16, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 32, kItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
