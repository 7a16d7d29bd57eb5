// The persistent forward kernels for double storage.
#include "persistent_forward.cuh"

template cudaError_t lltm::cuda::launch_persistent_forward_typed<double>(const SequenceParams&, const Tiling&,
                                                                      cudaStream_t);
