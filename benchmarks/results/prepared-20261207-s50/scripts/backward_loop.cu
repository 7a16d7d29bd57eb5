// Session 49 (prepared): whether a streamed backward's product loop can run at the streamed
// forward's rate. The forward's step takes h (64 rows of a group, k = state 1 024) against a
// block's 96 rows of W_h (3 gates x 32 columns): 16 chunks of 64 k, two m64n96k16 wgmma's a chunk
// a warpgroup. A backward step takes the gate gradients (64 rows, k = 3 x state = 3 072) against
// the same block's W_h slice read the other way (32 columns of state, n = 32, all 3 072 k): 48
// chunks, two m64n32k16 wgmma's a chunk a warpgroup, the same multiply-adds and W bytes (192 KB),
// three times the copies from L2 (384 KB a block a step). Both loops as session 47's
// wgmma_chunks.cu variant 6 (SS: A from the stage, 128-byte swizzled, each thread's copies fenced
// for the async proxy, two chunks ahead in four stages, a block barrier a chunk, a commit a chunk
// and a wait for all but the last group), on every multiprocessor, the rows read from a
// 256-row operand in L2:
//   0 forward: n96, k 1 024 (wgmma_chunks.cu's variant 6: 6.6k cycles a step on an H100)
//   1 backward: n32, k 3 072
//   2 = 1 with random data
//   3 (session 50) k split over a cluster of 4: a block's W_h slice 768 k x 128 columns, each
//     warpgroup 64 of the columns over all k (m64n64k16, 12 chunks a step, 96 KB of the operand a
//     block a step); 4 = 3 with each warpgroup all 128 columns over half the k tiles (m64n128k16)
// Cycles a step (the slowest block of the best of 3) and a wgmma. Predicted: 1 at 6-9k cycles a
// step if the loop's cost follows its wgmma's multiply-adds and shared-memory bytes (A 2 KB and B
// 1 KB a wgmma, 192 a step: ~4.5k cycles of shared-memory reads at 128 B a cycle, and 3x the
// forward's copies, ~3k), ~15-20k if it follows its chunks (48 barriers and commit groups a step
// against 16).
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o backward_loop backward_loop.cu && ./backward_loop
#include <cstdint>
#include <cstdio>

constexpr int ROWS = 64, CHUNK = 64, STAGES = 4;
constexpr int HROWS = 256;  // the operand's rows: four blocks' tiles, as at batch 256

__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// W's tile, n rows of k, 128-byte swizzled: blocks of 64 k, a row's 16-byte groups permuted by
// the row, 8-row groups 1 024 bytes apart.
template <int N>
__device__ __forceinline__ int swizzled(int row, int k) { return (k / 64 * N + row) * 64 + ((k / 8 % 8) ^ (row % 8)) * 8 + k % 8; }

__device__ __forceinline__ int staged(int r, int k) { return r * CHUNK + ((k / 8) ^ (r % 8)) * 8 + k % 8; }

__device__ __forceinline__ uint64_t swizzled_descriptor(const uint16_t* at) {
  return (smem(at) & 0x3FFFF) >> 4 | uint64_t{1} << 16 | uint64_t{1024 >> 4} << 32 | uint64_t{1} << 62;
}

#define REGS16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
#define SUMS16(d)                                                                                              \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),  \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define REGS48                                                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47}, "
#define SUMS48(d)                                                                                                  \
  SUMS16(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),           \
      "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),      \
      "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]),      \
      "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]),      \
      "+f"(d[47])

// d += A B^T, A 64 x 16 and B N x 16 from shared memory (both K-major, 128-byte swizzled).
__device__ __forceinline__ void wgmma_ss(float (&d)[48], uint64_t a, uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 " REGS48 "%48, %49, p, 1, 1, 0, 0;\n}\n"
               : SUMS48(d)
               : "l"(a), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_ss(float (&d)[16], uint64_t a, uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 " REGS16 "%16, %17, p, 1, 1, 0, 0;\n}\n"
               : SUMS16(d)
               : "l"(a), "l"(b), "r"(1));
}


#define REGS32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define SUMS32(d) SUMS16(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
  "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
__device__ __forceinline__ void wgmma_ss(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " REGS32 "%32, %33, p, 1, 1, 0, 0;\n}\n"
               : SUMS32(d)
               : "l"(a), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "l"(a), "l"(b), "r"(1));
}

template <int W, int S>
__device__ __forceinline__ void wgmma_wait(float (&d)[S]) {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(W) : "memory");
#pragma unroll
  for (int i = 0; i < S; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void copy16(void* to, const void* from) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem(to)), "l"(from) : "memory");
}

__device__ __forceinline__ uint16_t bf16_bits(unsigned i, bool random) {
  if (!random) return (i * 37) & 0x3f7f;
  unsigned x = i * 2654435761u;
  x ^= x >> 15; x *= 2246822519u; x ^= x >> 13;
  const float f = (x & 0xffff) / 32768.0f - 1.0f;  // [-1, 1)
  return static_cast<uint16_t>(__float_as_uint(f) >> 16);
}

__global__ void fill(uint16_t* h, int n, bool random) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) h[i] = bf16_bits(i + 7919, random);
}

// N: W's rows (the product's n), K: the step's k.
template <int N, int K, bool kRandom, bool kNSplit = false, int LD = K>
__global__ void __launch_bounds__(256, 1) loop(const uint16_t* rows_all, float* sink, long long* cycles, int steps) {
  constexpr int CHUNKS = K / CHUNK;
  extern __shared__ __align__(1024) uint16_t shared[];
  uint16_t* w = shared;
  uint16_t* stages = shared + N * K;
  const int thread = threadIdx.x, kq = thread / 128;
  for (int i = thread; i < N * K; i += 256) w[swizzled<N>(i / K, i % K)] = bf16_bits(i, kRandom);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  // the group's rows; with LD > K the block's k slice (of LD / K) of them, as a split of k over a cluster
  const uint16_t* rows = rows_all + (blockIdx.x % (HROWS / ROWS)) * ROWS * LD + (blockIdx.x / (HROWS / ROWS)) % (LD / K) * K;
  const auto issue = [&](int chunk) {
    if (chunk < CHUNKS) {
      uint16_t* stage = stages + chunk % STAGES * ROWS * CHUNK;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int i = thread + 256 * u, r = i / 8, seg = i % 8;
        copy16(stage + staged(r, seg * 8), rows + r * LD + chunk * CHUNK + seg * 8);
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  float acc = 0;
  long long t0 = clock64();
  for (int t = 0; t < steps; ++t) {
    issue(0);
    issue(1);
    constexpr int NW = kNSplit ? N / 2 : N;  // a warpgroup's n
    float d[NW / 2] = {};
    for (int chunk = 0; chunk < CHUNKS; ++chunk) {
      asm volatile("cp.async.wait_group 1;" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncthreads();
      issue(chunk + 2);
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      const uint16_t* stage = stages + chunk % STAGES * ROWS * CHUNK;
      if constexpr (kNSplit) {  // the warpgroup's half of W's rows over all of the chunk's k tiles
#pragma unroll
        for (int kl = 0; kl < 4; ++kl)
          wgmma_ss(d, swizzled_descriptor(stage + 16 * kl), swizzled_descriptor(w + swizzled<N>(NW * kq, chunk * CHUNK + 16 * kl)));
      } else {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int kl = 2 * kq + s;  // the warpgroup's k tiles of the chunk
          wgmma_ss(d, swizzled_descriptor(stage + 16 * kl), swizzled_descriptor(w + swizzled<N>(0, chunk * CHUNK + 16 * kl)));
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      wgmma_wait<1>(d);
    }
    wgmma_wait<0>(d);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < NW / 2; ++i) acc += d[i];
  }
  long long t1 = clock64();
  sink[blockIdx.x * 256 + thread] = acc;
  if (thread % 128 == 0) atomicMax(reinterpret_cast<unsigned long long*>(cycles + blockIdx.x), static_cast<unsigned long long>(t1 - t0));
}

template <int N, int K, bool kRandom, bool kNSplit = false, int LD = K>
void run(int v, const char* name, const uint16_t* rows, int sms) {
  const int steps = 64, shared = (N * K + STAGES * ROWS * CHUNK) * 2;
  float* sink; long long* cycles;
  cudaMalloc(&sink, sms * 256 * 4); cudaMalloc(&cycles, sms * 8);
  cudaFuncSetAttribute(loop<N, K, kRandom, kNSplit, LD>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  long long best = 1LL << 62;
  for (int trial = 0; trial < 3; ++trial) {
    cudaMemset(cycles, 0, sms * 8);
    loop<N, K, kRandom, kNSplit, LD><<<sms, 256, shared>>>(rows, sink, cycles, steps);
    long long host[1024];
    cudaMemcpy(host, cycles, sms * 8, cudaMemcpyDeviceToHost);
    long long worst = 0;
    for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
    best = worst < best ? worst : best;
  }
  const double wgmmas = (kNSplit ? 4.0 : 2.0) * K / 16;  // a step, both warpgroups
  printf("%d %-34s %7.0f cycles a step %6.1f a wgmma  [%s]\n", v, name, static_cast<double>(best) / steps,
         static_cast<double>(best) / (steps * wgmmas), cudaGetErrorString(cudaGetLastError()));
  cudaFree(sink); cudaFree(cycles);
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint16_t *pattern, *random;
  const int n = HROWS * 3072;
  cudaMalloc(&pattern, n * 2); cudaMalloc(&random, n * 2);
  fill<<<64, 256>>>(pattern, n, false); fill<<<64, 256>>>(random, n, true);
  run<96, 1024, false>(0, "forward: n96, k 1024", pattern, sms);
  run<32, 3072, false>(1, "backward: n32, k 3072", pattern, sms);
  run<32, 3072, true>(2, "backward, random data", random, sms);
  run<128, 768, true, true, 3072>(3, "bwd k/4 (cluster of 4): n128=2x64, k 768", random, sms);
  run<128, 768, true, false, 3072>(4, "bwd k/4: n128, k halves", random, sms);
  return 0;
}
