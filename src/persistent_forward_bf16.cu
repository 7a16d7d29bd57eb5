// The persistent forward kernels for c10::BFloat16 storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<c10::BFloat16>(const ForwardParams&, const Tiling&,
                                                                      cudaStream_t);
