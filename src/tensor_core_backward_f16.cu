// The persistent backward kernels on tensor cores for c10::Half storage.
#include "tensor_core_backward.cuh"

template cudaError_t lltm::cuda::launch_tensor_core_typed<c10::Half>(const BackwardParams&, const Tiling&, cudaStream_t);
