// The persistent backward kernels on tensor cores for half storage whose groups run as
// thread-block clusters, of two cells of the state a thread (those of four:
// tensor_core_backward_f16_wide.cu).
#include "tensor_core_backward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<half_t, 8, kItems, true>(
    const BackwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<half_t, 16, kItems, true>(
    const BackwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<half_t, 32, kItems, true>(
    const BackwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
