// Prepared in session 56 (not run): the backward's step at 256 x 1024 bf16 as one kernel, against
// session 55's replica of the step path (pdl.cu's plain variant: cuBLAS's d_gates W_h in 4 parts,
// then the elementwise step kernel). The fused kernel computes d_h = d_gates W_h (B x S) in tiles
// of 128 rows x BN columns, split over k into CL parts that form one thread-block cluster; each
// block's part goes to its shared memory, and after the cluster's barrier each block sums its
// share of the tile's rows from all CL blocks' shared memory and runs the cell's backward there,
// writing d_c and the gate gradients in place into gates[t], which the next step's product reads
// (no d_gates buffer, no parts through L2, no second kernel). Products on mma.sync (m16n8k16,
// bf16, float sums), operands through a 3-stage cp.async ring of 64-wide k blocks, XOR-swizzled.
//   fused<128, 8>: 8 x 2 tiles x 8 parts = 128 blocks in 16 clusters of 8 (k 384 a block)
//   fused<64, 4>:  16 x 2 tiles x 4 parts = 128 blocks in 32 clusters of 4 (k 768 a block)
// Each variant runs 64 steps in a CUDA graph from the same state as the replica, and its final d_c
// and step 0's gate gradients are compared with the replica's (float sums in another order, so
// not bit for bit: the relative error of each, which bf16's rounding of the gradients puts near
// 1e-3). Prints the clusters the device holds at once for each variant (fewer than the grid's
// make two waves) and how many multiprocessors ran a launch's 128 blocks, the most on one (an
// H100 holds 15 clusters of 8 and 30 of 4 at one block a multiprocessor, so at least 8 blocks
// share one with another and set the step's time), then us a step: median (least-most) of 7
// rounds of 20 replays.
// Predicted (session 56's count): the replica 9.2 us a step; fused<128, 8> ~6-7 us (its operands
// ~24 MB a step from L2, as cuBLAS's, ~5.5 us at cuBLAS's ~4.5 TB/s, plus the sums through
// shared memory and the cells, ~1 us); fused<64, 4> slower (its operands ~36 MB); errors < 1e-2.
// nvcc -O3 -arch=sm_90a -o fused fused.cu -lcublas
#include <algorithm>
#include <cmath>
#include <cooperative_groups.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

#define CHECK(x)                                                                     \
  do {                                                                               \
    const cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                          \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)
#define CHECK_BLAS(x)                                              \
  do {                                                             \
    const cublasStatus_t s = (x);                                  \
    if (s != CUBLAS_STATUS_SUCCESS) {                              \
      std::printf("%s:%d %s: status %d\n", __FILE__, __LINE__, #x, \
                  static_cast<int>(s));                            \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

constexpr int B = 256, S = 1024, T = 64, PARTS = 4, K = 3 * S;

struct Buffers {
  __nv_bfloat16 *w, *d_gates, *gates, *cells, *grad;
  float *sums, *d_c;
};

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }

// One element of the cell's backward (pdl.cu's): returns the three gate gradients, updates carried.
__device__ __forceinline__ void cell_backward(float zi, float zo, float zc, float c, float grad, float dh,
                                              float& carried, float d[3]) {
  const float in = sigmoid(zi), out = sigmoid(zo), cand = zc > 0 ? zc : __expf(zc) - 1;
  const float grad_h = grad + dh, tc = tanhf(c);
  const float grad_c = carried + grad_h * out * (1 - tc * tc);
  d[0] = grad_c * cand * in * (1 - in);
  d[1] = grad_h * tc * out * (1 - out);
  d[2] = grad_c * in * (zc > 0 ? 1.f : cand + 1);
  carried = grad_c * 0.5f;
}

// ---- the replica's step (pdl.cu's plain variant) ----
struct Bf4 {
  __nv_bfloat162 a, b;
};

__global__ void __launch_bounds__(256) step(Buffers p, int t) {
  const int j = (blockIdx.x * 256 + threadIdx.x) * 4, b = blockIdx.y;
  if (j >= S) return;
  const long i = long(b) * S + j, row = 3L * b * S + j;
  __nv_bfloat16* gates = p.gates + long(t) * B * 3 * S;
  Bf4 z[3];
  for (int g = 0; g < 3; ++g) z[g] = *reinterpret_cast<const Bf4*>(gates + row + g * S);
  const Bf4 c = *reinterpret_cast<const Bf4*>(p.cells + long(t) * B * S + i);
  const Bf4 go = *reinterpret_cast<const Bf4*>(p.grad + long(t) * B * S + i);
  float4 dc = *reinterpret_cast<const float4*>(p.d_c + i);
  float4 dh = *reinterpret_cast<const float4*>(p.sums + i);
  for (int part = 1; part < PARTS; ++part) {
    const float4 more = *reinterpret_cast<const float4*>(p.sums + long(part) * B * S + i);
    dh.x += more.x, dh.y += more.y, dh.z += more.z, dh.w += more.w;
  }
  const auto lanes = [](const Bf4& v, float out[4]) {
    const float2 lo = __bfloat1622float2(v.a), hi = __bfloat1622float2(v.b);
    out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
  };
  float zi[4], zo[4], zc[4], cc[4], g[4], d[3][4];
  lanes(z[0], zi), lanes(z[1], zo), lanes(z[2], zc), lanes(c, cc), lanes(go, g);
  float h[4] = {dh.x, dh.y, dh.z, dh.w}, carried[4] = {dc.x, dc.y, dc.z, dc.w};
  for (int k = 0; k < 4; ++k) {
    float e[3];
    cell_backward(zi[k], zo[k], zc[k], cc[k], g[k], h[k], carried[k], e);
    d[0][k] = e[0], d[1][k] = e[1], d[2][k] = e[2];
  }
  *reinterpret_cast<float4*>(p.d_c + i) = make_float4(carried[0], carried[1], carried[2], carried[3]);
  for (int q = 0; q < 3; ++q) {
    Bf4 v;
    v.a = __floats2bfloat162_rn(d[q][0], d[q][1]);
    v.b = __floats2bfloat162_rn(d[q][2], d[q][3]);
    *reinterpret_cast<Bf4*>(gates + row + q * S) = v;
    *reinterpret_cast<Bf4*>(p.d_gates + row + q * S) = v;
  }
}

void product(cublasHandle_t blas, const Buffers& p) {
  const float one = 1.f, zero = 0.f;
  // column-major: sums_p^T (S x B) = W_h[K_p, :]^T (S x K/4) d_gates[:, K_p]^T (K/4 x B)
  CHECK_BLAS(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, S, B, K / PARTS, &one, p.w, CUDA_R_16BF,
                                        S, long(K / PARTS) * S, p.d_gates, CUDA_R_16BF, K, K / PARTS, &zero, p.sums,
                                        CUDA_R_32F, S, long(B) * S, PARTS, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ---- the fused step ----
__device__ int block_sms[128];  // the multiprocessor of each block of the last launch

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void copy16(void* to, const void* from) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_address(to)), "l"(from) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void load_a(uint32_t r[4], const void* at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(at)));
}
__device__ __forceinline__ void load_b(uint32_t r[4], const void* at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(at)));
}
__device__ __forceinline__ void mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int BN, int CL>
struct Fused {
  static constexpr int BM = 128, BK = 64, STAGES = 3, THREADS = 256;
  static constexpr int KC = K / CL, KB = KC / BK;  // a block's k and its k blocks
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE = A_BYTES + B_BYTES;
  static constexpr int PITCH = BN + 8;            // floats a row of the block's part: 8 banks a row apart
  static constexpr int WN = BN / 4, NT = WN / 8;  // a warp's columns and their n8 tiles
  static constexpr int SMEM = std::max(STAGES * STAGE, BM * PITCH * 4);
  static constexpr int ROW_THREADS = BN / 8;  // in the cells: 8 columns a thread
  static_assert(KC % BK == 0 && KB >= STAGES - 1 && NT % 2 == 0 && (BM / CL) * ROW_THREADS == THREADS, "");
};

// d_gates: the product's operand (B x 3S, step t + 1's gate gradients); the kernel writes step t's
// into gates[t] in place.
template <int BN, int CL>
__global__ void __cluster_dims__(1, 1, CL) __launch_bounds__(256, 2)
    fused_step(Buffers p, const __nv_bfloat16* __restrict__ d_gates, int t) {
  using F = Fused<BN, CL>;
  extern __shared__ __align__(128) unsigned char smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int n0 = blockIdx.x * BN, m0 = blockIdx.y * F::BM, k0 = blockIdx.z * F::KC;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp / 4, wn = warp % 4;
  __nv_bfloat16* gates = p.gates + long(t) * B * 3 * S;

  // this thread's elements of the cells (rows of the tile split over the cluster's blocks), asked
  // of L2 now so that they come from there after the product
  const int lrow = rank * (F::BM / CL) + tid / F::ROW_THREADS, col = (tid % F::ROW_THREADS) * 8;
  const int b = m0 + lrow, j = n0 + col;
  const long i = long(b) * S + j, row = 3L * b * S + j;
  {
    const auto prefetch = [](const void* at) { asm volatile("prefetch.global.L2 [%0];" ::"l"(at)); };
    for (int g = 0; g < 3; ++g) prefetch(gates + row + g * S);
    prefetch(p.cells + long(t) * B * S + i);
    prefetch(p.grad + long(t) * B * S + i);
    prefetch(p.d_c + i);
  }

  const auto load_stage = [&](int kb, int stage) {
    unsigned char* a_s = smem + stage * F::STAGE;
    unsigned char* b_s = a_s + F::A_BYTES;
    const int kk = k0 + kb * F::BK;
    for (int c = tid; c < F::BM * 8; c += F::THREADS) {  // A: 128 rows of 8 chunks of 16 bytes
      const int r = c / 8, ch = c % 8;
      copy16(a_s + r * 128 + ((ch ^ (r & 7)) * 16), d_gates + long(m0 + r) * K + kk + ch * 8);
    }
    constexpr int CH = BN / 8;  // B: 64 rows of k, BN / 8 chunks each
    for (int c = tid; c < F::BK * CH; c += F::THREADS) {
      const int r = c / CH, ch = c % CH, at = (ch & ~7) | ((ch ^ r) & 7);
      copy16(b_s + r * BN * 2 + at * 16, p.w + long(kk + r) * S + n0 + ch * 8);
    }
  };

  float acc[4][F::NT][4] = {};
  for (int s = 0; s < F::STAGES - 1; ++s) {
    load_stage(s, s);
    commit();
  }
  for (int kb = 0; kb < F::KB; ++kb) {
    wait_copies<F::STAGES - 2>();
    __syncthreads();
    if (kb + F::STAGES - 1 < F::KB) load_stage(kb + F::STAGES - 1, (kb + F::STAGES - 1) % F::STAGES);
    commit();
    const unsigned char* a_s = smem + (kb % F::STAGES) * F::STAGE;
    const unsigned char* b_s = a_s + F::A_BYTES;
    const int mi = lane / 8, r8 = lane % 8;
#pragma unroll
    for (int ks = 0; ks < F::BK / 16; ++ks) {
      uint32_t a[4][4], bf[F::NT][2];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int r = wm * 64 + mt * 16 + r8 + (mi % 2) * 8, ch = ks * 2 + mi / 2;
        load_a(a[mt], a_s + r * 128 + ((ch ^ (r & 7)) * 16));
      }
#pragma unroll
      for (int np = 0; np < F::NT / 2; ++np) {
        const int r = ks * 16 + r8 + (mi % 2) * 8, ch = (wn * F::WN + np * 16) / 8 + mi / 2;
        const int at = (ch & ~7) | ((ch ^ r) & 7);
        uint32_t x[4];
        load_b(x, b_s + r * BN * 2 + at * 16);
        bf[2 * np][0] = x[0], bf[2 * np][1] = x[1], bf[2 * np + 1][0] = x[2], bf[2 * np + 1][1] = x[3];
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
        for (int nt = 0; nt < F::NT; ++nt) mma(acc[mt][nt], a[mt], bf[nt]);
      }
    }
  }
  wait_copies<0>();
  __syncthreads();  // the ring's last reads before its memory holds the part

  float* part = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
    for (int nt = 0; nt < F::NT; ++nt) {
      const int r = wm * 64 + mt * 16 + lane / 4, c = wn * F::WN + nt * 8 + 2 * (lane % 4);
      *reinterpret_cast<float2*>(part + r * F::PITCH + c) = make_float2(acc[mt][nt][0], acc[mt][nt][1]);
      *reinterpret_cast<float2*>(part + (r + 8) * F::PITCH + c) = make_float2(acc[mt][nt][2], acc[mt][nt][3]);
    }
  }
  cluster.sync();  // every block's part written

  // each thread's 8 columns as two float4's, the odd quads of lanes taking their second first, so
  // that a quarter warp's reads fall in 32 different banks
  float dh[8] = {};
  const bool swapped = (tid >> 2) & 1;
#pragma unroll
  for (int q = 0; q < CL; ++q) {
    const float* other = cluster.map_shared_rank(part, q) + lrow * F::PITCH + col;
    const float4 x = *reinterpret_cast<const float4*>(other + (swapped ? 4 : 0));
    const float4 y = *reinterpret_cast<const float4*>(other + (swapped ? 0 : 4));
    const float lo[4] = {swapped ? y.x : x.x, swapped ? y.y : x.y, swapped ? y.z : x.z, swapped ? y.w : x.w};
    const float hi[4] = {swapped ? x.x : y.x, swapped ? x.y : y.y, swapped ? x.z : y.z, swapped ? x.w : y.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) dh[k] += lo[k], dh[k + 4] += hi[k];
  }
  // this block is done with the others' parts; it waits for them to be done with its own only
  // before it leaves, after the cells
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");

  const auto floats = [](const uint4& v, float out[8]) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(h[k]);
      out[2 * k] = f.x, out[2 * k + 1] = f.y;
    }
  };
  float z[3][8], c[8], g[8], carried[8], d[3][8];
  for (int q = 0; q < 3; ++q) floats(*reinterpret_cast<const uint4*>(gates + row + q * S), z[q]);
  floats(*reinterpret_cast<const uint4*>(p.cells + long(t) * B * S + i), c);
  floats(*reinterpret_cast<const uint4*>(p.grad + long(t) * B * S + i), g);
  const float4 c0 = *reinterpret_cast<const float4*>(p.d_c + i), c1 = *reinterpret_cast<const float4*>(p.d_c + i + 4);
  carried[0] = c0.x, carried[1] = c0.y, carried[2] = c0.z, carried[3] = c0.w;
  carried[4] = c1.x, carried[5] = c1.y, carried[6] = c1.z, carried[7] = c1.w;
  for (int k = 0; k < 8; ++k) {
    float e[3];
    cell_backward(z[0][k], z[1][k], z[2][k], c[k], g[k], dh[k], carried[k], e);
    d[0][k] = e[0], d[1][k] = e[1], d[2][k] = e[2];
  }
  *reinterpret_cast<float4*>(p.d_c + i) = make_float4(carried[0], carried[1], carried[2], carried[3]);
  *reinterpret_cast<float4*>(p.d_c + i + 4) = make_float4(carried[4], carried[5], carried[6], carried[7]);
  for (int q = 0; q < 3; ++q) {
    uint4 v;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
    for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(d[q][2 * k], d[q][2 * k + 1]);
    *reinterpret_cast<uint4*>(gates + row + q * S) = v;
  }
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    block_sms[(blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x] = static_cast<int>(sm);
  }
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

template <int BN, int CL>
void fused(const Buffers& p, int t, cudaStream_t stream) {
  // step T - 1 takes the initial gradients in p.d_gates; every other step the one after's, in gates
  const __nv_bfloat16* operand = t == T - 1 ? p.d_gates : p.gates + long(t + 1) * B * 3 * S;
  fused_step<BN, CL><<<dim3(S / BN, B / Fused<BN, CL>::BM, CL), Fused<BN, CL>::THREADS, Fused<BN, CL>::SMEM,
                       stream>>>(p, operand, t);
  CHECK(cudaGetLastError());
}

template <int BN, int CL>
int resident_clusters() {
  using F = Fused<BN, CL>;
  CHECK(cudaFuncSetAttribute(fused_step<BN, CL>, cudaFuncAttributeMaxDynamicSharedMemorySize, F::SMEM));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(S / BN, B / F::BM, CL);
  config.blockDim = dim3(F::THREADS);
  config.dynamicSmemBytes = F::SMEM;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = 1, attribute.val.clusterDim.y = 1, attribute.val.clusterDim.z = CL;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, fused_step<BN, CL>, &config));
  return clusters;
}

// what: 0 the replica, 1 fused<128, 8>, 2 fused<64, 4>
cudaGraphExec_t record(int what, cublasHandle_t blas, const Buffers& p, cudaStream_t stream) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int t = T - 1; t >= 0; --t) {
    if (what == 0) {
      product(blas, p);
      step<<<dim3(S / 4 / 256, B), 256, 0, stream>>>(p, t);
    } else if (what == 1) {
      fused<128, 8>(p, t, stream);
    } else {
      fused<64, 4>(p, t, stream);
    }
  }
  CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return exec;
}

template <typename X>
void fill(X* device, size_t n, float scale, unsigned seed) {
  std::vector<X> host(n);
  srand(seed);
  for (auto& v : host) v = X(scale * (2.f * rand() / RAND_MAX - 1.f));
  CHECK(cudaMemcpy(device, host.data(), n * sizeof(X), cudaMemcpyHostToDevice));
}

// ||a - b|| / ||b||
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t k = 0; k < a.size(); ++k) num += (a[k] - b[k]) * (a[k] - b[k]), den += b[k] * b[k];
  return std::sqrt(num / den);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, B %d, S %d, T %d\n", prop.name, B, S, T);
  std::printf("clusters held at once: fused<128, 8> %d (its grid 16), fused<64, 4> %d (its grid 32)\n",
              resident_clusters<128, 8>(), resident_clusters<64, 4>());
  Buffers p, start;
  const size_t n_gates = size_t(T) * B * 3 * S, n_state = size_t(T) * B * S;
  CHECK(cudaMalloc(&p.w, sizeof(__nv_bfloat16) * K * S));
  for (Buffers* x : {&p, &start}) {
    CHECK(cudaMalloc(&x->d_gates, sizeof(__nv_bfloat16) * B * K));
    CHECK(cudaMalloc(&x->gates, sizeof(__nv_bfloat16) * n_gates));
    CHECK(cudaMalloc(&x->d_c, sizeof(float) * B * S));
  }
  CHECK(cudaMalloc(&p.cells, sizeof(__nv_bfloat16) * n_state));
  CHECK(cudaMalloc(&p.grad, sizeof(__nv_bfloat16) * n_state));
  CHECK(cudaMalloc(&p.sums, sizeof(float) * PARTS * B * S));
  fill(p.w, size_t(K) * S, 1.f / 64, 1);
  fill(start.d_gates, size_t(B) * K, 1.f, 2);
  fill(start.gates, n_gates, 2.f, 3);
  fill(p.cells, n_state, 1.f, 4);
  fill(p.grad, n_state, 1.f, 5);
  fill(start.d_c, size_t(B) * S, 1.f, 6);
  const auto reset = [&] {
    CHECK(cudaMemcpy(p.d_gates, start.d_gates, sizeof(__nv_bfloat16) * B * K, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(p.gates, start.gates, sizeof(__nv_bfloat16) * n_gates, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(p.d_c, start.d_c, sizeof(float) * B * S, cudaMemcpyDeviceToDevice));
    CHECK(cudaDeviceSynchronize());  // device-to-device copies return before they finish
  };
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetStream(blas, stream));
  const char* names[] = {"replica", "fused<128,8>", "fused<64,4>"};
  constexpr int kVariants = 3;
  std::vector<cudaGraphExec_t> graphs;
  for (int what = 0; what < kVariants; ++what) graphs.push_back(record(what, blas, p, stream));

  // the final d_c and step 0's gate gradients (gates[0]) of each variant, against the replica's
  std::vector<double> ref_c, ref_g;
  for (int what = 0; what < kVariants; ++what) {
    reset();
    CHECK(cudaGraphLaunch(graphs[what], stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> d_c(size_t(B) * S);
    std::vector<__nv_bfloat16> g0(size_t(B) * K);
    CHECK(cudaMemcpy(d_c.data(), p.d_c, sizeof(float) * d_c.size(), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(g0.data(), p.gates, sizeof(__nv_bfloat16) * g0.size(), cudaMemcpyDeviceToHost));
    std::vector<double> c(d_c.begin(), d_c.end()), g(g0.size());
    for (size_t k = 0; k < g0.size(); ++k) g[k] = __bfloat162float(g0[k]);
    if (what == 0) {
      ref_c = c, ref_g = g;
      double norm = 0;
      for (double v : g) norm += v * v;
      std::printf("%-13s final d_c, step 0's gate gradients: rms %.4e\n", names[what], std::sqrt(norm / g.size()));
    } else {
      std::printf("%-13s relative error against the replica: d_c %.3e, step 0's gate gradients %.3e\n", names[what],
                  relative_error(c, ref_c), relative_error(g, ref_g));
      int sms[128];
      CHECK(cudaMemcpyFromSymbol(sms, block_sms, sizeof(sms)));
      std::vector<int> blocks(prop.multiProcessorCount, 0);
      for (int sm : sms) ++blocks[sm];
      std::printf("%-13s its last launch: %d multiprocessors ran its 128 blocks, at most %d on one\n", "",
                  int(std::count_if(blocks.begin(), blocks.end(), [](int n) { return n > 0; })),
                  *std::max_element(blocks.begin(), blocks.end()));
    }
  }
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  constexpr int kRounds = 7, kReplays = 20;
  std::vector<std::vector<float>> times(kVariants);
  for (int round = 0; round < kRounds; ++round) {
    for (int what = 0; what < kVariants; ++what) {
      reset();
      for (int w = 0; w < 2; ++w) CHECK(cudaGraphLaunch(graphs[what], stream));
      CHECK(cudaEventRecord(a, stream));
      for (int r = 0; r < kReplays; ++r) CHECK(cudaGraphLaunch(graphs[what], stream));
      CHECK(cudaEventRecord(b, stream));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      times[what].push_back(1000.f * ms / (kReplays * T));
    }
  }
  std::printf("\nus a step, median (least-most) of %d rounds of %d replays of %d steps\n", kRounds, kReplays, T);
  for (int what = 0; what < kVariants; ++what) {
    auto& v = times[what];
    std::sort(v.begin(), v.end());
    std::printf("%-13s %6.2f (%.2f-%.2f)\n", names[what], v[kRounds / 2], v.front(), v.back());
  }
  return 0;
}
