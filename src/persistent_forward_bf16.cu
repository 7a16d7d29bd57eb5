// The persistent forward kernels for bfloat16 storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<lltm::bfloat16_t>(const ForwardParams&, const Tiling&,
                                                                           cudaStream_t);
