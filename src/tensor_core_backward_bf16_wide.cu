// The persistent backward kernels on tensor cores for bfloat16 storage of 32 rows a group and four
// cells of the state a thread, their groups in clusters or not, in a file of their own so that
// they compile beside the others.
#include "tensor_core_backward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 32, kTensorMaxItems, false>(
    const BackwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<bfloat16_t, 32, kTensorMaxItems, true>(
    const BackwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
