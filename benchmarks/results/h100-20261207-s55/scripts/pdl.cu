// Session 55: what programmatic dependent launch (PDL) would take off the step path's backward
// step at 256 x 1024 bf16, outside the package. A step is cuBLAS's d_gates W_h in 4 parts (float
// sums) and then an elementwise kernel of the step kernel's traffic (the 4 parts, the saved gates
// and cell of step t from a T-long buffer, the output's gradient, d_c; it writes d_c, the gates in
// place and d_gates, the next product's operand). 64 steps are one CUDA graph, replayed.
//   plain:   the kernel launched as today
//   pdl:     launched with programmatic stream serialization; its loads that do not depend on the
//            product come before griddepcontrol.wait, the parts' sums after it
//   pdl+trig: pdl, and the kernel lets its dependents launch at once (griddepcontrol.launch_
//            dependents), which matters only where cuBLAS launches its kernel as a dependent
// and the product alone and the kernel alone (64 of each in a graph) for the gaps. Every variant
// runs once from the same state and its final d_c is compared bit for bit with plain's.
// nvcc -O3 -arch=sm_90a -o pdl pdl.cu -lcublas
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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

struct Bf4 {
  __nv_bfloat162 a, b;
};

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }

enum Mode { kPlain = 0, kPdl = 1, kTrigger = 2 };

template <int MODE>
__global__ void __launch_bounds__(256) step(Buffers p, int t) {
  if (MODE == kTrigger) asm volatile("griddepcontrol.launch_dependents;");
  const int j = (blockIdx.x * 256 + threadIdx.x) * 4, b = blockIdx.y;
  if (j >= S) return;
  const long i = long(b) * S + j, row = 3L * b * S + j;
  __nv_bfloat16* gates = p.gates + long(t) * B * 3 * S;
  Bf4 z[3];
  for (int g = 0; g < 3; ++g) z[g] = *reinterpret_cast<const Bf4*>(gates + row + g * S);
  const Bf4 c = *reinterpret_cast<const Bf4*>(p.cells + long(t) * B * S + i);
  const Bf4 go = *reinterpret_cast<const Bf4*>(p.grad + long(t) * B * S + i);
  float4 dc = *reinterpret_cast<const float4*>(p.d_c + i);
  if (MODE != kPlain) asm volatile("griddepcontrol.wait;" ::: "memory");
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
    const float in = sigmoid(zi[k]), out = sigmoid(zo[k]), cand = zc[k] > 0 ? zc[k] : __expf(zc[k]) - 1;
    const float grad_h = g[k] + h[k], tc = tanhf(cc[k]);
    const float grad_c = carried[k] + grad_h * out * (1 - tc * tc);
    d[0][k] = grad_c * cand * in * (1 - in);
    d[1][k] = grad_h * tc * out * (1 - out);
    d[2][k] = grad_c * in * (zc[k] > 0 ? 1.f : cand + 1);
    carried[k] = grad_c * 0.5f;
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

void kernel(int mode, const Buffers& p, int t, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(S / 4 / 256, B);
  config.blockDim = dim3(256);
  config.stream = stream;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = mode == kPlain ? 0 : 1;
  if (mode == kPlain) CHECK(cudaLaunchKernelEx(&config, step<kPlain>, p, t));
  if (mode == kPdl) CHECK(cudaLaunchKernelEx(&config, step<kPdl>, p, t));
  if (mode == kTrigger) CHECK(cudaLaunchKernelEx(&config, step<kTrigger>, p, t));
}

// what: 0-2 a whole step in that mode, 3 the product alone, 4 the kernel alone
cudaGraphExec_t record(int what, cublasHandle_t blas, const Buffers& p, cudaStream_t stream) {
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int t = T - 1; t >= 0; --t) {
    if (what != 4) product(blas, p);
    if (what != 3) kernel(what == 4 ? kPlain : what, p, t, stream);
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

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, B %d, S %d, T %d, %d parts\n", prop.name, B, S, T, PARTS);
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
  };
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetStream(blas, stream));
  const char* names[] = {"plain", "pdl", "pdl+trig", "product alone", "kernel alone"};
  std::vector<cudaGraphExec_t> graphs;
  for (int what = 0; what < 5; ++what) graphs.push_back(record(what, blas, p, stream));

  std::vector<float> reference(B * S), result(B * S);
  for (int what = 0; what < 3; ++what) {
    reset();
    CHECK(cudaGraphLaunch(graphs[what], stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(result.data(), p.d_c, sizeof(float) * B * S, cudaMemcpyDeviceToHost));
    if (what == 0) reference = result;
    double total = 0;
    for (float v : result) total += v;
    std::printf("%-14s final d_c sum %.6e, %s plain's\n", names[what], total,
                std::memcmp(result.data(), reference.data(), sizeof(float) * B * S) == 0 ? "bitwise equal to"
                                                                                         : "DIFFERS from");
  }
  // also stream launches (no graph): plain and pdl
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  constexpr int kRounds = 7, kReplays = 20;
  std::vector<std::vector<float>> times(7);
  for (int round = 0; round < kRounds; ++round) {
    for (int what = 0; what < 7; ++what) {
      reset();
      for (int w = 0; w < 2; ++w) {  // warm
        if (what < 5) CHECK(cudaGraphLaunch(graphs[what], stream));
      }
      CHECK(cudaEventRecord(a, stream));
      for (int r = 0; r < kReplays; ++r) {
        if (what < 5) {
          CHECK(cudaGraphLaunch(graphs[what], stream));
        } else {
          for (int t = T - 1; t >= 0; --t) {
            product(blas, p);
            kernel(what == 5 ? kPlain : kPdl, p, t, stream);
          }
        }
      }
      CHECK(cudaEventRecord(b, stream));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      times[what].push_back(1000.f * ms / (kReplays * T));
    }
  }
  const char* more[] = {"plain, stream", "pdl, stream"};
  std::printf("\nus a step, median (least-most) of %d rounds of %d replays of %d steps\n", kRounds, kReplays, T);
  for (int what = 0; what < 7; ++what) {
    auto& v = times[what];
    std::sort(v.begin(), v.end());
    std::printf("%-14s %6.2f (%.2f-%.2f)\n", what < 5 ? names[what] : more[what - 5], v[kRounds / 2], v.front(),
                v.back());
  }
  return 0;
}
