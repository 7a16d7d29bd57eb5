// Attributes of the current CUDA device, for sizing grids and shared memory. Read from the CUDA
// runtime, a cheap query: ATen's cached copy (ATen/cuda/CUDAContextLight.h) includes the cuBLAS,
// cuSPARSE and cuSOLVER headers, which a minimal CUDA toolkit does not have.
#pragma once

#include <c10/cuda/CUDAException.h>  // C10_CUDA_CHECK
#include <cuda_runtime.h>

namespace lltm::cuda {

inline int device_attribute(cudaDeviceAttr attribute) {
  int device = 0, value = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

}  // namespace lltm::cuda
