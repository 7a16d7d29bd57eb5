// Session 45: the rate of wgmma.m64n96k16 (bf16, float sums, A from registers) reading B (W's
// tile: 96 rows of 1 024 columns, as the streamed kernel holds it) from shared memory unswizzled
// (as core matrices, wgmma-rs2.patch) or 128-byte swizzled (wgmma-rs2s.patch); one block a
// multiprocessor, every multiprocessor busy, 1 or 2 warpgroups (each on its share of the k tiles),
// G wgmma's a commit group and a wait for all but WAIT groups after each commit. Cycles per wgmma
// per multiprocessor: the tensor cores' rate is ~48 (64 x 96 x 16 at 2 048 multiply-adds a cycle).
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o wgmma_rate wgmma_rate.cu && ./wgmma_rate
// (nvcc 13's -arch=sm_90a also embeds compute_90 PTX, which has no wgmma)
#include <cstdint>
#include <cstdio>

constexpr int M = 96, K = 1024, KT = K / 16;

__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Element (row, k) of W: as core matrices (8 rows of 16 bytes, k groups M x 16 bytes apart), or
// 128-byte swizzled (blocks of 64 columns, a row's 16-byte groups permuted by row % 8).
template <bool SWZ>
__device__ __forceinline__ int offset(int row, int k) {
  return SWZ ? (k / 64 * M + row) * 64 + ((k / 8 % 8) ^ (row % 8)) * 8 + k % 8 : (k / 8 * M + row) * 8 + k % 8;
}

template <bool SWZ>
__device__ __forceinline__ uint64_t descriptor(const uint16_t* w, int kt) {
  const uint64_t start = (smem(w + offset<SWZ>(0, 16 * kt)) & 0x3FFFF) >> 4;
  return SWZ ? start | uint64_t{1} << 16 | uint64_t{1024 >> 4} << 32 | uint64_t{1} << 62
             : start | uint64_t{(2 * 8 * M) >> 4} << 16 | uint64_t{128 >> 4} << 32;
}

__device__ __forceinline__ void wgmma(float (&d)[48], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
      "{%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <int N>
__device__ __forceinline__ void wait_groups() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

template <bool SWZ, int G, int WAIT>
__global__ void rate(float* sink, long long* cycles, int reps) {
  extern __shared__ __align__(1024) uint16_t w[];
  for (int i = threadIdx.x; i < M * K; i += blockDim.x) w[offset<SWZ>(i / K, i % K)] = (i * 37) & 0x3f7f;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int group = threadIdx.x / 128, groups = blockDim.x / 128, tiles = KT / groups;
  const uint32_t a[4] = {0x3f803f80u + threadIdx.x, 0x3f003f00u, 0x3e803e80u, 0x3f403f40u};
  float d[48] = {};
  long long t0 = clock64();
  for (int r = 0; r < reps; ++r) {
    for (int c = group * tiles; c < (group + 1) * tiles; c += G) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int g = 0; g < G; ++g) wgmma(d, a, descriptor<SWZ>(w, c + g));
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      wait_groups<WAIT>();
    }
  }
  wait_groups<0>();
#pragma unroll
  for (int i = 0; i < 48; ++i) asm volatile("" : "+f"(d[i])::"memory");
  long long t1 = clock64();
  float acc = 0;
  for (int i = 0; i < 48; ++i) acc += d[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x % 128 == 0) atomicMax(reinterpret_cast<unsigned long long*>(cycles + blockIdx.x), static_cast<unsigned long long>(t1 - t0));
}

template <bool SWZ, int G, int WAIT>
void run(int groups, int sms) {
  const int reps = 20, shared = M * K * 2;
  float* sink; long long* cycles;
  cudaMalloc(&sink, sms * 256 * 4); cudaMalloc(&cycles, sms * 8);
  cudaFuncSetAttribute(rate<SWZ, G, WAIT>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  long long best = 1LL << 62;
  for (int trial = 0; trial < 3; ++trial) {
    cudaMemset(cycles, 0, sms * 8);
    rate<SWZ, G, WAIT><<<sms, 128 * groups, shared>>>(sink, cycles, reps);
    long long host[256];
    cudaMemcpy(host, cycles, sms * 8, cudaMemcpyDeviceToHost);
    long long worst = 0;
    for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
    best = worst < best ? worst : best;
  }
  printf("%-10s G %d wait %d warpgroups %d: %6.1f cycles per wgmma per SM  [%s]\n", SWZ ? "swizzled" : "unswizzled", G,
         WAIT, groups, static_cast<double>(best) / (reps * KT), cudaGetErrorString(cudaGetLastError()));
  cudaFree(sink); cudaFree(cycles);
}

template <bool SWZ>
void all(int sms) {
  for (int groups : {1, 2}) {
    run<SWZ, 1, 0>(groups, sms);
    run<SWZ, 2, 0>(groups, sms);
    run<SWZ, 2, 1>(groups, sms);  // the streamed kernel's rs2 (wgmma-rs2.patch)
    run<SWZ, 4, 1>(groups, sms);
    run<SWZ, 8, 1>(groups, sms);
    run<SWZ, 8, 0>(groups, sms);
  }
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  all<false>(sms);
  all<true>(sms);
  return 0;
}
