// The persistent backward kernels for half storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<lltm::half_t>(const BackwardParams&, const Tiling&,
                                                                       cudaStream_t);
