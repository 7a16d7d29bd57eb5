// The streamed forward on tensor cores for bfloat16 storage (tensor_core_streamed.cuh).
#include "tensor_core_streamed.cuh"

namespace lltm::cuda {
template cudaError_t launch_streamed_forward<bfloat16_t>(const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
