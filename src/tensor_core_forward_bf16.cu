// The persistent forward kernels on tensor cores for c10::BFloat16 storage.
#include "tensor_core_forward.cuh"

template cudaError_t lltm::cuda::launch_tensor_core_typed<c10::BFloat16>(const ForwardParams&, const Tiling&,
                                                                    cudaStream_t);
