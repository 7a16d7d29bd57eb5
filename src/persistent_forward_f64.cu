// The persistent forward kernels for double storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<double>(const ForwardParams&, const Tiling&,
                                                                      cudaStream_t);
