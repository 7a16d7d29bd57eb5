// The persistent backward kernels for float storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<float>(const BackwardParams&, const Tiling&,
                                                                      cudaStream_t);
