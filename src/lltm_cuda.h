// Launchers of the CUDA kernels: plain pointers and sizes in, no ATen, so that the kernel file
// compiles without torch's headers. Host code (lltm_cuda.cpp) does the ATen work around them.
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

namespace lltm::cuda {

// gates: (batch, 3*state), pre-activations in, activated gates out; the rest (batch, state).
template <typename scalar_t>
void launch_forward(scalar_t* gates, const scalar_t* old_cell, scalar_t* new_h, scalar_t* new_cell,
                    scalar_t* tanh_cell, int64_t batch, int64_t state, cudaStream_t stream);

template <typename scalar_t>
void launch_backward(const scalar_t* grad_h, const scalar_t* grad_cell, const scalar_t* gates,
                     const scalar_t* tanh_cell, scalar_t* d_gates, scalar_t* d_old_cell,
                     int64_t batch, int64_t state, cudaStream_t stream);

}  // namespace lltm::cuda
