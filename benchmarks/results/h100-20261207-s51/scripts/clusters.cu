// Session 51: how many clusters of 1, 2, 4 and 8 blocks of the streamed kernels' shape (256
// threads, 224 KB of dynamic shared memory: W_h's 192 KB and the four 8 KB stages at state 1024)
// the GPU holds at once (cudaOccupancyMaxActiveClusters), against the 128 blocks of 256 x 1024.
// nvcc -O3 -arch=sm_90a -o clusters clusters.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void shaped(int* out) {
  extern __shared__ int shared[];
  if (threadIdx.x == 0) out[blockIdx.x] = shared[0];
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s: %d SMs, %zu bytes of shared memory a block at most\n", prop.name, prop.multiProcessorCount,
              prop.sharedMemPerBlockOptin);
  for (int kb : {224, 200, 160, 112}) {
    const int bytes = kb * 1024;
    cudaFuncSetAttribute(shaped, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    cudaFuncSetAttribute(shaped, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int size : {1, 2, 4, 8, 16}) {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(size * 8);
      config.blockDim = dim3(256);
      config.dynamicSmemBytes = bytes;
      cudaLaunchAttribute attribute;
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = size;
      attribute.val.clusterDim.y = 1;
      attribute.val.clusterDim.z = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      int clusters = -1;
      const cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, shaped, &config);
      std::printf("%3d KB, clusters of %2d: %3d at once (%3d blocks)%s%s\n", kb, size, clusters, clusters * size,
                  e == cudaSuccess ? "" : " error: ", e == cudaSuccess ? "" : cudaGetErrorString(e));
    }
  }
  return 0;
}
