// The persistent forward kernel on tensor cores for c10::Half storage of 32 rows a group and four
// cells of the state a thread, in a file of its own so that it compiles beside the others.
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_kernel<c10::Half, 32, kTensorMaxItems>(
    const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
