// CUDA kernels of the LLTM cell: one fused elementwise pass each way. Math in float for
// half/bfloat16 storage, in double for double.
//
// Layout of a pass: a thread owns VEC adjacent state columns (one 16-byte access per tensor when
// the sizes and pointers allow, else VEC = 1) and walks a block's share of the batch rows; the
// threads of a warp cover adjacent columns of one row. The forward pass writes only new_h and
// new_cell; the backward pass recomputes the gate activations and new_cell from the gate
// pre-activations and old_cell, and sums d_gates over its rows for the bias gradient, so d_gates
// is not read again for that.
#include "lltm_cuda.h"
#include "lltm_math.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace lltm::cuda {
namespace {

// For half and bfloat16 storage: the hardware's approximations (ex2.approx, rcp.approx and
// tanh.approx, relative errors of about 2^-22, 2^-23 and 2^-11) in place of CUDA's accurate float
// functions, whose dozens of instructions each made the fused passes instruction-bound rather
// than memory-bound. Their errors stay at or below the storage's rounding (2^-9 for bfloat16,
// 2^-11 for half). exp(x) - 1 loses relative precision near 0 but not absolute precision, which
// is what the candidate's uses (old_cell + candidate * input_gate, candidate + 1) need.
struct FastMath : StdMath {
  __device__ static float exp(float x) { return __expf(x); }
  __device__ static float expm1(float x) { return __expf(x) - 1.0f; }
  __device__ static float reciprocal(float x) { return __fdividef(1.0f, x); }
  __device__ static float tanh(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return tanhf(x);
#endif
  }
};

// Storage <-> math type, and the functions the math uses. torch builds with
// __CUDA_NO_HALF_CONVERSIONS__, hence explicit conversions.
template <typename scalar_t>
struct Math {
  using Functions = StdMath;
  __device__ static opmath_t<scalar_t> load(scalar_t v) { return v; }
  __device__ static scalar_t store(opmath_t<scalar_t> v) { return v; }
};
template <>
struct Math<__half> {
  using Functions = FastMath;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Math<__nv_bfloat16> {
  using Functions = FastMath;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

constexpr int kThreads = 256;
constexpr int64_t kMinRowsPerBlock = 32;  // fewer partial bias sums for a small batch
// Blocks wanted per multiprocessor: enough bytes in flight to use the memory bandwidth. The
// backward's blocks (about 100 registers a thread in bfloat16) fit two to a multiprocessor, and
// each row of blocks costs a row of partial bias sums.
constexpr int kForwardBlocksPerMultiprocessor = 4;
constexpr int kBackwardBlocksPerMultiprocessor = 2;

// VEC elements read or written with one access.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <int VEC, typename T>
__device__ __forceinline__ Pack<T, VEC> load(const T* p) {
  return *reinterpret_cast<const Pack<T, VEC>*>(p);
}

template <int VEC, typename T>
__device__ __forceinline__ void store(T* p, const Pack<T, VEC>& pack) {
  *reinterpret_cast<Pack<T, VEC>*>(p) = pack;
}

// This thread's first state column, and its block's rows: [first, end) by step.
template <int VEC>
__device__ __forceinline__ int64_t thread_column() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
}

struct Rows {
  int64_t first, end, step;
};

__device__ __forceinline__ Rows block_rows(int64_t batch, int64_t rows_per_block) {
  const int64_t begin = blockIdx.y * rows_per_block;
  const int64_t end = begin + rows_per_block;
  return {begin + threadIdx.y, end < batch ? end : batch, blockDim.y};
}

// Sums v over the threads of a block column (same threadIdx.x); the result lands in threadIdx.y == 0.
// blockDim.y is a power of two. Every thread of the block must call it.
template <typename T, int N>
__device__ void sum_over_block_rows(T (&v)[N]) {
  __shared__ T halves[N * kThreads / 2];
  const unsigned x = threadIdx.x, y = threadIdx.y, width = blockDim.x;
  for (unsigned half = blockDim.y / 2; half > 0; half /= 2) {
    if (y >= half && y < 2 * half) {
#pragma unroll
      for (int n = 0; n < N; ++n) halves[(n * half + y - half) * width + x] = v[n];
    }
    __syncthreads();
    if (y < half) {
#pragma unroll
      for (int n = 0; n < N; ++n) v[n] += halves[(n * half + y) * width + x];
    }
    __syncthreads();
  }
}

template <typename scalar_t, int VEC>
__global__ void __launch_bounds__(kThreads)
forward_kernel(const scalar_t* __restrict__ gates, const scalar_t* __restrict__ old_cell,
               scalar_t* __restrict__ new_h, scalar_t* __restrict__ new_cell, int64_t batch,
               int64_t state, int64_t rows_per_block) {
  using M = Math<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  const int64_t column = thread_column<VEC>();
  if (column >= state) return;
  const Rows rows = block_rows(batch, rows_per_block);
  for (int64_t row = rows.first; row < rows.end; row += rows.step) {
    const int64_t i = row * state + column;
    const scalar_t* g = gates + (i + 2 * row * state);  // row b of gates starts at 3 * b * state
    const P z_input = load<VEC>(g), z_output = load<VEC>(g + state),
            z_candidate = load<VEC>(g + 2 * state), cell = load<VEC>(old_cell + i);
    P cell_out, h_out;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const auto o = forward_point<opmath_t<scalar_t>, typename M::Functions>(
          M::load(z_input.v[k]), M::load(z_output.v[k]), M::load(z_candidate.v[k]), M::load(cell.v[k]));
      cell_out.v[k] = M::store(o.new_cell);
      h_out.v[k] = M::store(o.new_h);
    }
    store(new_cell + i, cell_out);
    store(new_h + i, h_out);
  }
}

// With one block row (gridDim.y == 1) the bias sums go straight to d_bias, else to row blockIdx.y
// of `partials`.
template <typename scalar_t, int VEC>
__global__ void __launch_bounds__(kThreads)
backward_kernel(const scalar_t* __restrict__ grad_h, const scalar_t* __restrict__ grad_cell,
                const scalar_t* __restrict__ gates, const scalar_t* __restrict__ old_cell,
                scalar_t* __restrict__ d_gates, scalar_t* __restrict__ d_old_cell,
                scalar_t* __restrict__ d_bias, opmath_t<scalar_t>* __restrict__ partials,
                int64_t batch, int64_t state, int64_t rows_per_block) {
  using M = Math<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  opmath_t<scalar_t> sums[3 * VEC] = {};  // d_gates summed over rows: input, output, candidate
  const int64_t column = thread_column<VEC>();
  if (column < state) {
    const Rows rows = block_rows(batch, rows_per_block);
    for (int64_t row = rows.first; row < rows.end; row += rows.step) {
      const int64_t i = row * state + column, g = i + 2 * row * state;
      const P gh = load<VEC>(grad_h + i), gc = load<VEC>(grad_cell + i),
              z_input = load<VEC>(gates + g), z_output = load<VEC>(gates + g + state),
              z_candidate = load<VEC>(gates + g + 2 * state), cell = load<VEC>(old_cell + i);
      P d_input, d_output, d_candidate, d_cell;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const auto o = backward_point<opmath_t<scalar_t>, typename M::Functions>(
            M::load(gh.v[k]), M::load(gc.v[k]), M::load(z_input.v[k]), M::load(z_output.v[k]),
            M::load(z_candidate.v[k]), M::load(cell.v[k]));
        d_input.v[k] = M::store(o.d_input_gate);
        d_output.v[k] = M::store(o.d_output_gate);
        d_candidate.v[k] = M::store(o.d_candidate);
        d_cell.v[k] = M::store(o.d_old_cell);
        sums[k] += o.d_input_gate;
        sums[VEC + k] += o.d_output_gate;
        sums[2 * VEC + k] += o.d_candidate;
      }
      store(d_gates + g, d_input);
      store(d_gates + g + state, d_output);
      store(d_gates + g + 2 * state, d_candidate);
      store(d_old_cell + i, d_cell);
    }
  }
  sum_over_block_rows(sums);
  if (threadIdx.y != 0 || column >= state) return;
#pragma unroll
  for (int gate = 0; gate < 3; ++gate) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int64_t out = gate * state + column + k;
      const auto sum = sums[gate * VEC + k];
      if (gridDim.y == 1) {
        d_bias[out] = M::store(sum);
      } else {
        partials[blockIdx.y * 3 * state + out] = sum;
      }
    }
  }
}

// d_bias[c] = sum over r of partials[r][c]. Blocks of (kBiasSumColumns, kThreads / kBiasSumColumns
// row strides): a few loads per thread, 32-byte segments per row.
constexpr int kBiasSumColumns = 8;
template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
bias_sum_kernel(const opmath_t<scalar_t>* __restrict__ partials, scalar_t* __restrict__ d_bias,
                int64_t rows, int64_t columns) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  opmath_t<scalar_t> sum[1] = {};
  if (column < columns) {
    for (int64_t row = threadIdx.y; row < rows; row += blockDim.y) sum[0] += partials[row * columns + column];
  }
  sum_over_block_rows(sum);
  if (threadIdx.y == 0 && column < columns) d_bias[column] = Math<scalar_t>::store(sum[0]);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks of (tx, ty) threads, tx a power of two up to a warp across the column groups; a grid of
// column blocks by row blocks, with row blocks enough to give every multiprocessor
// `blocks_per_multiprocessor` blocks but at least kMinRowsPerBlock rows each (so that the rows of
// partial bias sums stay few: at most bias_partial_rows).
struct Geometry {
  dim3 grid, block;
  int64_t rows_per_block;
};

Geometry geometry(int64_t batch, int64_t state, int vec, int blocks_per_multiprocessor,
                  int multiprocessors) {
  const int64_t groups = state / vec;
  unsigned tx = 1;
  while (tx < 32 && 2 * tx <= groups) tx *= 2;
  const unsigned ty = kThreads / tx;
  const int64_t column_blocks = ceil_div(groups, tx);
  const int64_t wanted_row_blocks =
      std::max<int64_t>(1, ceil_div(int64_t{blocks_per_multiprocessor} * multiprocessors, column_blocks));
  const int64_t rows = ceil_div(std::max(kMinRowsPerBlock, ceil_div(batch, wanted_row_blocks)), ty) * ty;
  return {dim3(static_cast<unsigned>(column_blocks), static_cast<unsigned>(ceil_div(batch, rows))),
          dim3(tx, ty), rows};
}

// Calls run(std::integral_constant<int, VEC>{}): VEC = kVec<T>, 16-byte accesses, when every
// row of every tensor starts 16-byte aligned, else VEC = 1, one element at a time.
template <typename T>
constexpr int kVec = 16 / sizeof(T);

template <typename T, typename Run>
void with_access_width(int64_t state, std::initializer_list<const void*> pointers, Run&& run) {
  bool aligned = state % kVec<T> == 0;
  for (const void* p : pointers) aligned = aligned && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  if (aligned) {
    run(std::integral_constant<int, kVec<T>>{});
  } else {
    run(std::integral_constant<int, 1>{});
  }
}

}  // namespace

int multiprocessors() {
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 1;  // the launch that follows reports the error
  }
  return std::max(count, 1);
}

int64_t bias_partial_rows(int64_t batch, int multiprocessors) {
  return std::min(ceil_div(batch, kMinRowsPerBlock),
                  int64_t{kBackwardBlocksPerMultiprocessor} * multiprocessors);
}

template <typename scalar_t>
cudaError_t launch_forward(const scalar_t* gates, const scalar_t* old_cell, scalar_t* new_h,
                           scalar_t* new_cell, int64_t batch, int64_t state, int multiprocessors,
                           cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  with_access_width<scalar_t>(state, {gates, old_cell, new_h, new_cell}, [&](auto vec) {
    const Geometry geo = geometry(batch, state, vec, kForwardBlocksPerMultiprocessor, multiprocessors);
    forward_kernel<scalar_t, decltype(vec)::value><<<geo.grid, geo.block, 0, stream>>>(
        gates, old_cell, new_h, new_cell, batch, state, geo.rows_per_block);
  });
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t launch_backward(const scalar_t* grad_h, const scalar_t* grad_cell,
                            const scalar_t* gates, const scalar_t* old_cell, scalar_t* d_gates,
                            scalar_t* d_old_cell, scalar_t* d_bias, opmath_t<scalar_t>* partials,
                            int64_t batch, int64_t state, int multiprocessors, cudaStream_t stream) {
  unsigned row_blocks = 0;
  with_access_width<scalar_t>(state, {grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell}, [&](auto vec) {
    const Geometry geo = geometry(batch, state, vec, kBackwardBlocksPerMultiprocessor, multiprocessors);
    row_blocks = geo.grid.y;
    backward_kernel<scalar_t, decltype(vec)::value><<<geo.grid, geo.block, 0, stream>>>(
        grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell, d_bias, partials, batch, state,
        geo.rows_per_block);
  });
  if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess || row_blocks == 1) {
    return error;
  }
  const dim3 block(kBiasSumColumns, kThreads / kBiasSumColumns);
  bias_sum_kernel<scalar_t><<<static_cast<unsigned>(ceil_div(3 * state, kBiasSumColumns)), block, 0, stream>>>(
      partials, d_bias, row_blocks, 3 * state);
  return cudaGetLastError();
}

#define LLTM_INSTANTIATE(T)                                                                        \
  template cudaError_t launch_forward<T>(const T*, const T*, T*, T*, int64_t, int64_t, int,       \
                                         cudaStream_t);                                           \
  template cudaError_t launch_backward<T>(const T*, const T*, const T*, const T*, T*, T*, T*,      \
                                          opmath_t<T>*, int64_t, int64_t, int, cudaStream_t);
LLTM_INSTANTIATE(float)
LLTM_INSTANTIATE(double)
LLTM_INSTANTIATE(__half)
LLTM_INSTANTIATE(__nv_bfloat16)

}  // namespace lltm::cuda
