// The cell's CUDA kernels, as the host code sees them: plain pointers and sizes in one struct, no
// ATen tensors, so that the kernel file compiles without most of torch's headers.
#pragma once

#include "kernel_dtype.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace lltm::cuda {

// One step's tensors, each contiguous, of the dtype the launch names; the forward uses the first
// block, the backward all but new_h and new_cell.
struct CellParams {
  int64_t batch, state;
  int multiprocessors;  // sizes the grids and the bias workspace, so that the two always agree
  const void* gates;    // (batch, 3 * state) pre-activations
  const void* old_cell;
  void* new_h;
  void* new_cell;
  const void* grad_h;
  const void* grad_cell;
  void* d_gates;
  void* d_old_cell;
  void* d_bias;         // (3 * state,); nullptr: not wanted
  void* bias_partials;  // (bias_partial_rows, 3 * state) in the math type; nullptr when that is <= 1
};

// The rows of partial bias sums the backward needs at most.
int64_t bias_partial_rows(int64_t batch, int multiprocessors);

// Each returns the first launch error (cudaSuccess when every kernel launched).
cudaError_t launch_cell_forward(const CellParams& p, DType dtype, cudaStream_t stream);
// Also sums d_gates over the batch into d_bias: per block in the same pass, then the blocks'
// partial sums by a second, small kernel. batch > 0.
cudaError_t launch_cell_backward(const CellParams& p, DType dtype, cudaStream_t stream);

}  // namespace lltm::cuda
