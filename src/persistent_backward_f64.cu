// The persistent backward kernels for double storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<double>(const BackwardParams&, const Tiling&,
                                                                      cudaStream_t);
