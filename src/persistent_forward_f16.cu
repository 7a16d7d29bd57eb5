// The persistent forward kernels for c10::Half storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_typed<c10::Half>(const ForwardParams&, const Tiling&,
                                                                      cudaStream_t);
