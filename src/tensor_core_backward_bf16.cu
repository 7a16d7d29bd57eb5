// The persistent backward kernels on tensor cores for c10::BFloat16 storage.
#include "tensor_core_backward.cuh"

template cudaError_t lltm::cuda::launch_tensor_core_typed<c10::BFloat16>(const BackwardParams&, const Tiling&,
                                                                    cudaStream_t);
