// The persistent forward kernel on tensor cores for half storage whose groups of 8 rows run as
// thread-block clusters and whose warps hold their fragments of W_h in registers (Tiling::held).
#include "tensor_core_forward.cuh"

namespace lltm::cuda {
template cudaError_t launch_tensor_core_held<half_t>(const ForwardParams&, const Tiling&, cudaStream_t);
}  // namespace lltm::cuda
