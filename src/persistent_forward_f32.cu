// The persistent forward kernels for float storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_forward_typed<float>(const SequenceParams&, const Tiling&,
                                                                      cudaStream_t);
