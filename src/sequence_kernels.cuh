// Device helpers of the sequence kernels, persistent and per step alike.
#pragma once

#include "cuda_utils.cuh"
#include "sequence_cuda.h"

#include <cstdint>

namespace lltm::cuda {

__device__ __forceinline__ bool runs(const int64_t* lengths, int64_t b, int64_t t) {
  return lengths == nullptr || t < lengths[b];
}

template <typename scalar_t>
__device__ __forceinline__ scalar_t grad_output_at(const BackwardParams& p, int64_t t, int64_t b, int64_t j) {
  if (p.grad_output == nullptr) return scalar_t(0);
  const auto* g = static_cast<const scalar_t*>(p.grad_output);
  return g[t * p.grad_output_strides[0] + b * p.grad_output_strides[1] + j * p.grad_output_strides[2]];
}

}  // namespace lltm::cuda
