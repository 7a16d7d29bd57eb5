// Session 18: how many thread-block clusters of n blocks (512 threads, the most shared memory a
// block may have: one a multiprocessor) an H200 holds at once, as plan_clusters asks.
//   nvcc -arch=sm_90 -o /tmp/probe probe.cu && /tmp/probe
#include <cstdio>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(512) probe() {}

int main() {
  int smem = 0;
  cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int shared : {smem, smem / 2 - 1024}) {
    printf("shared %d bytes a block:", shared);
    for (int n = 2; n <= 16; ++n) {
      cudaLaunchAttribute a{};
      a.id = cudaLaunchAttributeClusterDimension;
      a.val.clusterDim.x = n;
      a.val.clusterDim.y = a.val.clusterDim.z = 1;
      cudaLaunchConfig_t c{};
      c.gridDim = dim3(n);
      c.blockDim = dim3(512);
      c.dynamicSmemBytes = shared;
      c.attrs = &a;
      c.numAttrs = 1;
      int count = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&count, probe, &c);
      printf(" %d:%d%s", n, count, e == cudaSuccess ? "" : "(error)");
    }
    printf("\n");
  }
}
