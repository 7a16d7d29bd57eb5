// The persistent backward kernel on tensor cores for c10::Half storage of 32 rows a group and four
// cells of the state a thread, in a file of its own so that it compiles beside the others.
#include "tensor_core_backward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<c10::Half, 32, kTensorMaxItems>(
    const BackwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
