// The persistent forward kernels on tensor cores for bfloat16 storage, of two cells of the
// state a thread outside clusters (those of four: tensor_core_forward_bf16_wide.cu; in clusters:
// tensor_core_forward_bf16_cluster.cu).
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 8, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 16, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 32, kItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
