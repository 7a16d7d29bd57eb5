// The persistent backward kernels for bfloat16 storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<lltm::bfloat16_t>(const BackwardParams&, const Tiling&,
                                                                           cudaStream_t);
