// The persistent forward kernels on tensor cores for c10::Half storage, of two cells of the state a
// thread outside clusters (those of four: tensor_core_forward_f16_wide.cu; in clusters:
// tensor_core_forward_f16_cluster.cu).
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<c10::Half, 8, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<c10::Half, 16, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<c10::Half, 32, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
