// Launchers of the CUDA kernels: plain pointers and sizes in, no ATen, so that the kernel file
// compiles without torch's headers. Host code (lltm_cuda.cpp) does the ATen work around them.
// Each launcher returns the first launch error (cudaSuccess when every kernel launched).
#pragma once

#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>

namespace lltm::cuda {

// The type the math and the bias sums run in: double for double, float for the rest.
template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;

// The current device's multiprocessor count, which sizes the grids and the bias workspace: read
// once per operator call and passed to each, so that the workspace and the grid always agree.
int multiprocessors();

// gates: (batch, 3*state), the gate pre-activations; the rest (batch, state).
template <typename scalar_t>
cudaError_t launch_forward(const scalar_t* gates, const scalar_t* old_cell, scalar_t* new_h,
                           scalar_t* new_cell, int64_t batch, int64_t state, int multiprocessors,
                           cudaStream_t stream);

// The bias gradient's partial sums need a workspace of (rows, 3*state) opmath_t values: this
// many rows at most; none (nullptr) when it is 1 or less.
int64_t bias_partial_rows(int64_t batch, int multiprocessors);

// Also sums d_gates over the batch into d_bias (3*state): per block in the same pass, then the
// blocks' partial sums in `partials` by a second, small kernel. batch > 0.
template <typename scalar_t>
cudaError_t launch_backward(const scalar_t* grad_h, const scalar_t* grad_cell,
                            const scalar_t* gates, const scalar_t* old_cell, scalar_t* d_gates,
                            scalar_t* d_old_cell, scalar_t* d_bias, opmath_t<scalar_t>* partials,
                            int64_t batch, int64_t state, int multiprocessors, cudaStream_t stream);

}  // namespace lltm::cuda
