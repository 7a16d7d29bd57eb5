// The persistent forward kernels for float storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<float>(const ForwardParams&, const Tiling&,
                                                                      cudaStream_t);
