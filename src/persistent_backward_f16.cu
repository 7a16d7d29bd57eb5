// The persistent backward kernels for c10::Half storage.
#include "persistent_backward.cuh"

template cudaError_t lltm::cuda::launch_persistent_backward_typed<c10::Half>(const SequenceParams&, const Tiling&,
                                                                      cudaStream_t);
