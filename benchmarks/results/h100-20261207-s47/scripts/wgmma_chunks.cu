// Session 47: why the streamed kernel's wgmma product (wgmma-rs2.patch, -rs2s.patch: ~12-14k
// cycles a step, ~190 a wgmma) runs at a quarter of wgmma's own rate (wgmma_rate.cu: ~49 cycles a
// m64n96k16 at rs2's pattern, either layout). The kernel's product loop, rebuilt a piece at a time
// around the same wgmma's: 256 threads (two warpgroups, each two of a 64-k chunk's four k tiles),
// W's 96 x 1 024 tile 128-byte swizzled in shared memory, 16 chunks a step, A fragments in two
// register sets by the chunk's parity, a commit a chunk and a wait for all but the last group.
// Each variant adds one piece to the one before:
//   0 A constant in registers (wgmma_rate.cu's pattern)
//   1 + each chunk's A fragments by ldmatrix from a stage in shared memory
//   2 + a block barrier a chunk (and one a step)
//   3 + the chunk's copies from global memory (h's 64 rows, L2-resident), four stages, cp.async
//       with wait_group 2 before the barrier: rs2's loop
//   4 + random values in W and h (the others: a narrow pattern)
//   5 = 4 with a wait for every group (no chunk in flight)
//   6 = 3 with A read from the stage by wgmma itself (SS: the stage's layout is W's, 128-byte
//       swizzled rows of 64 k), each thread's copies fenced for the async proxy before the barrier,
//       two chunks ahead (the chunk before's wgmma's may still read the stage of a third)
//   7 = 6 with random W and h
// Cycles a step (64 wgmma's a multiprocessor) and a wgmma, the slowest block of the best of 3.
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o wgmma_chunks wgmma_chunks.cu && ./wgmma_chunks
#include <cstdint>
#include <cstdio>
#include <cstdlib>

constexpr int M = 96, K = 1024, ROWS = 64, CHUNK = 64, CHUNKS = K / CHUNK, STAGES = 4;
constexpr int HROWS = 256;  // h's rows: four blocks' tiles, as at batch 256

__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ int swizzled(int row, int k) { return (k / 64 * M + row) * 64 + ((k / 8 % 8) ^ (row % 8)) * 8 + k % 8; }

// A stage's element (r, k): rows of 128 bytes, their 16-byte groups permuted by r % 8 (ldmatrix's
// 8 rows of a phase in distinct banks).
__device__ __forceinline__ int staged(int r, int k) { return r * CHUNK + ((k / 8) ^ (r % 8)) * 8 + k % 8; }

// A 128-byte swizzled K-major operand's descriptor (8-row groups 1 024 bytes apart) from `at`.
__device__ __forceinline__ uint64_t swizzled_descriptor(const uint16_t* at) {
  return (smem(at) & 0x3FFFF) >> 4 | uint64_t{1} << 16 | uint64_t{1024 >> 4} << 32 | uint64_t{1} << 62;
}

__device__ __forceinline__ uint64_t descriptor(const uint16_t* w, int kt) { return swizzled_descriptor(w + swizzled(0, 16 * kt)); }

// The 64 x 96 sums' 48 registers a thread, in the asm's text and as its operands.
#define SUM_REGISTERS                                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47}, "
#define SUMS(d)                                                                                                    \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),      \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),       \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),      \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),      \
      "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),      \
      "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])

__device__ __forceinline__ void wgmma(float (&d)[48], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
      SUM_REGISTERS
      "{%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
      : SUMS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

__device__ __forceinline__ void wgmma_ss(float (&d)[48], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 "
      SUM_REGISTERS
      "%48, %49, p, 1, 1, 0, 0;\n}\n"
      : SUMS(d)
      : "l"(a), "l"(b), "r"(1));
}

// A stage's k tile kl as wgmma's A operand: a stage's rows are 128 bytes (64 k), their 16-byte
// groups permuted by the row as in W's tile, so W's descriptor fields serve.
__device__ __forceinline__ uint64_t stage_descriptor(const uint16_t* stage, int kl) { return swizzled_descriptor(stage + 16 * kl); }

template <int N>
__device__ __forceinline__ void wgmma_wait(float (&d)[48]) {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#pragma unroll
  for (int i = 0; i < 48; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void ldmatrix4(uint32_t (&a)[4], const uint16_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(smem(p))
               : "memory");
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

__global__ void fill(uint16_t* h, bool random) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < HROWS * K; i += gridDim.x * blockDim.x) h[i] = bf16_bits(i + 7919, random);
}

template <int V>
__global__ void __launch_bounds__(256, 1) chunks(const uint16_t* h, float* sink, long long* cycles, int steps, int nchunks) {
  constexpr bool kSS = V >= 6, kLoad = V >= 1 && !kSS, kBarrier = V >= 2, kCopy = V >= 3, kRandom = V == 4 || V == 5 || V == 7;
  constexpr int kInFlight = V == 5 ? 0 : 1;
  extern __shared__ __align__(1024) uint16_t shared[];
  uint16_t* w = shared;
  uint16_t* stages = shared + M * K;
  const int thread = threadIdx.x, lane = thread % 32, warp = thread / 32, mt = warp & 3, kq = warp >> 2;
  for (int i = thread; i < M * K; i += 256) w[swizzled(i / K, i % K)] = bf16_bits(i, kRandom);
  for (int i = thread; i < STAGES * ROWS * CHUNK; i += 256) stages[i] = bf16_bits(i + 1, false);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const uint16_t* rows = h + (blockIdx.x % (HROWS / ROWS)) * ROWS * K;
  const auto issue = [&](int chunk) {
    if (chunk < nchunks) {
      uint16_t* stage = stages + chunk % STAGES * ROWS * CHUNK;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int i = thread + 256 * u, r = i / 8, seg = i % 8;
        copy16(stage + staged(r, seg * 8), rows + r * K + chunk * CHUNK + seg * 8);
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  uint32_t a[2][2][4];
#pragma unroll
  for (int o = 0; o < 2; ++o)
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[o][s][q] = 0x3f803f80u + thread + q;
  float acc = 0;
  long long t0 = clock64();
  for (int t = 0; t < steps; ++t) {
    // three chunks ahead in four stages; two with SS, whose last chunk's wgmma's may still read
    // the stage the third would fill
    if constexpr (kCopy) { issue(0); issue(1); if constexpr (!kSS) issue(2); }
    float d[48] = {};
    for (int pair = 0; pair < nchunks; pair += 2) {  // a runtime count, as the kernel's
#pragma unroll
      for (int odd = 0; odd < 2; ++odd) {
        const int chunk = pair + odd;
        if constexpr (kCopy && !kSS) asm volatile("cp.async.wait_group 2;" ::: "memory");
        if constexpr (kSS) asm volatile("cp.async.wait_group 1;" ::: "memory");
        if constexpr (kSS) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        if constexpr (kBarrier) __syncthreads();
        if constexpr (kCopy) issue(chunk + (kSS ? 2 : 3));
        if constexpr (kLoad) {
          const uint16_t* stage = stages + chunk % STAGES * ROWS * CHUNK;
#pragma unroll
          for (int s = 0; s < 2; ++s) ldmatrix4(a[odd][s], stage + staged(16 * mt + (lane & 15), 16 * (2 * kq + s) + (lane >> 4) * 8));
        }
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if constexpr (kSS) {
            // the warpgroup's 64 rows are the stage's (both warpgroups' products are over all 64)
            wgmma_ss(d, stage_descriptor(stages + chunk % STAGES * ROWS * CHUNK, 2 * kq + s), descriptor(w, chunk * 4 + 2 * kq + s));
          } else {
            wgmma(d, a[odd][s], descriptor(w, chunk * 4 + 2 * kq + s));
          }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        wgmma_wait<kInFlight>(d);
      }
    }
    wgmma_wait<0>(d);
    if constexpr (kBarrier) __syncthreads();
#pragma unroll
    for (int i = 0; i < 48; ++i) acc += d[i];
  }
  long long t1 = clock64();
  sink[blockIdx.x * 256 + thread] = acc;
  if (thread % 128 == 0) atomicMax(reinterpret_cast<unsigned long long*>(cycles + blockIdx.x), static_cast<unsigned long long>(t1 - t0));
}

template <int V>
void run(const char* name, const uint16_t* h, int sms) {
  const int steps = 64, shared = (M * K + STAGES * ROWS * CHUNK) * 2;
  float* sink; long long* cycles;
  cudaMalloc(&sink, sms * 256 * 4); cudaMalloc(&cycles, sms * 8);
  cudaFuncSetAttribute(chunks<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  long long best = 1LL << 62;
  for (int trial = 0; trial < 3; ++trial) {
    cudaMemset(cycles, 0, sms * 8);
    chunks<V><<<sms, 256, shared>>>(h, sink, cycles, steps, CHUNKS);
    long long host[1024];
    cudaMemcpy(host, cycles, sms * 8, cudaMemcpyDeviceToHost);
    long long worst = 0;
    for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
    best = worst < best ? worst : best;
  }
  printf("%d %-44s %7.0f cycles a step %6.1f a wgmma  [%s]\n", V, name, static_cast<double>(best) / steps,
         static_cast<double>(best) / (steps * K / 16), cudaGetErrorString(cudaGetLastError()));
  cudaFree(sink); cudaFree(cycles);
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint16_t *pattern, *random;
  cudaMalloc(&pattern, HROWS * K * 2); cudaMalloc(&random, HROWS * K * 2);
  fill<<<64, 256>>>(pattern, false); fill<<<64, 256>>>(random, true);
  run<0>("A constant", pattern, sms);
  run<1>("+ A by ldmatrix from a stage", pattern, sms);
  run<2>("+ a block barrier a chunk", pattern, sms);
  run<3>("+ the chunk's copies (the kernel's loop)", pattern, sms);
  run<4>("+ random W and h", random, sms);
  run<5>("4, no chunk in flight", random, sms);
  run<6>("3, A from the stage (SS), a proxy fence a chunk", pattern, sms);
  run<7>("6, random W and h", random, sms);
  return 0;
}
