// The persistent backward kernels for float storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_backward_typed<float>(const SequenceParams&, const Tiling&,
                                                                      cudaStream_t);
