// The persistent forward kernels on tensor cores for c10::Half storage.
#include "tensor_core_forward.cuh"

template cudaError_t lltm::cuda::launch_tensor_core_typed<c10::Half>(const ForwardParams&, const Tiling&, cudaStream_t);
