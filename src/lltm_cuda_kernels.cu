// CUDA kernels of the LLTM cell: one fused elementwise pass each way, grid-stride over
// batch * state_size elements. Math in float for half/bfloat16 storage, in double for double.
#include "lltm_cuda.h"
#include "lltm_math.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

namespace lltm::cuda {
namespace {

// Storage <-> math type. torch builds with __CUDA_NO_HALF_CONVERSIONS__, hence explicit conversions.
template <typename scalar_t>
struct Math {
  using type = scalar_t;
  __device__ static type load(scalar_t v) { return v; }
  __device__ static scalar_t store(type v) { return v; }
};
template <>
struct Math<__half> {
  using type = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Math<__nv_bfloat16> {
  using type = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

constexpr int kThreads = 256;

template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
forward_kernel(scalar_t* __restrict__ gates, const scalar_t* __restrict__ old_cell,
               scalar_t* __restrict__ new_h, scalar_t* __restrict__ new_cell,
               scalar_t* __restrict__ tanh_cell, index_t n, index_t state) {
  using M = Math<scalar_t>;
  const index_t stride = static_cast<index_t>(blockDim.x) * gridDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const index_t b = i / state;
    scalar_t* g = gates + (i + 2 * b * state);  // row b of gates starts at 3 * b * state
    const auto o = forward_point(M::load(g[0]), M::load(g[state]), M::load(g[2 * state]),
                                 M::load(old_cell[i]));
    g[0] = M::store(o.input_gate);
    g[state] = M::store(o.output_gate);
    g[2 * state] = M::store(o.candidate);
    tanh_cell[i] = M::store(o.tanh_cell);
    new_cell[i] = M::store(o.new_cell);
    new_h[i] = M::store(o.new_h);
  }
}

template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
backward_kernel(const scalar_t* __restrict__ grad_h, const scalar_t* __restrict__ grad_cell,
                const scalar_t* __restrict__ gates, const scalar_t* __restrict__ tanh_cell,
                scalar_t* __restrict__ d_gates, scalar_t* __restrict__ d_old_cell, index_t n,
                index_t state) {
  using M = Math<scalar_t>;
  const index_t stride = static_cast<index_t>(blockDim.x) * gridDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const index_t g = i + 2 * (i / state) * state;
    const auto o = backward_point(M::load(grad_h[i]), M::load(grad_cell[i]), M::load(gates[g]),
                                  M::load(gates[g + state]), M::load(gates[g + 2 * state]),
                                  M::load(tanh_cell[i]));
    d_gates[g] = M::store(o.d_input_gate);
    d_gates[g + state] = M::store(o.d_output_gate);
    d_gates[g + 2 * state] = M::store(o.d_candidate);
    d_old_cell[i] = M::store(o.d_old_cell);
  }
}

// Enough blocks to cover every element once, as long as the grid allows; beyond that the
// grid-stride loop covers the rest. 32-bit indices where every offset (up to 3n) fits.
template <typename Launch>
void launch(int64_t batch, int64_t state, Launch&& run) {
  const int64_t n = batch * state;
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, INT_MAX);
  if (3 * n <= INT_MAX) {
    run(static_cast<int>(blocks), static_cast<int32_t>(n), static_cast<int32_t>(state));
  } else {
    run(static_cast<int>(blocks), n, state);
  }
}

}  // namespace

template <typename scalar_t>
void launch_forward(scalar_t* gates, const scalar_t* old_cell, scalar_t* new_h, scalar_t* new_cell,
                    scalar_t* tanh_cell, int64_t batch, int64_t state, cudaStream_t stream) {
  launch(batch, state, [&](int blocks, auto n, auto s) {
    forward_kernel<<<blocks, kThreads, 0, stream>>>(gates, old_cell, new_h, new_cell, tanh_cell, n, s);
  });
}

template <typename scalar_t>
void launch_backward(const scalar_t* grad_h, const scalar_t* grad_cell, const scalar_t* gates,
                     const scalar_t* tanh_cell, scalar_t* d_gates, scalar_t* d_old_cell,
                     int64_t batch, int64_t state, cudaStream_t stream) {
  launch(batch, state, [&](int blocks, auto n, auto s) {
    backward_kernel<<<blocks, kThreads, 0, stream>>>(grad_h, grad_cell, gates, tanh_cell, d_gates,
                                                     d_old_cell, n, s);
  });
}

#define LLTM_INSTANTIATE(T)                                                                       \
  template void launch_forward<T>(T*, const T*, T*, T*, T*, int64_t, int64_t, cudaStream_t);      \
  template void launch_backward<T>(const T*, const T*, const T*, const T*, T*, T*, int64_t,       \
                                   int64_t, cudaStream_t);
LLTM_INSTANTIATE(float)
LLTM_INSTANTIATE(double)
LLTM_INSTANTIATE(__half)
LLTM_INSTANTIATE(__nv_bfloat16)

}  // namespace lltm::cuda
