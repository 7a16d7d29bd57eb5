// The persistent forward kernels for half storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<lltm::half_t>(const ForwardParams&, const Tiling&,
                                                                       cudaStream_t);
