// The persistent backward kernels for c10::Half storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<c10::Half>(const BackwardParams&, const Tiling&,
                                                                      cudaStream_t);
