// The persistent forward kernels on tensor cores for half storage of 32 rows a group and four
// cells of the state a thread, their groups in clusters or not, in a file of their own so that
// they compile beside the others.
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<half_t, 32, kTensorMaxItems, false>(
    const ForwardParams&, const Tiling&, cudaStream_t);
template cudaError_t launch_tensor_core_kernel<half_t, 32, kTensorMaxItems, true>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
