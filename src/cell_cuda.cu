// CUDA kernels of the LLTM cell: one fused elementwise pass each way. Math in float for
// half/bfloat16 storage, in double for double.
//
// Layout of a pass: a thread owns VEC adjacent state columns (one 16-byte access per tensor when
// the sizes and pointers allow, else VEC = 1) and walks a block's share of the batch rows; the
// threads of a warp cover adjacent columns of one row. The forward pass writes only new_h and
// new_cell; the backward pass recomputes the gate activations and new_cell from the gate
// pre-activations and old_cell, and sums d_gates over its rows for the bias gradient, so d_gates
// is not read again for that.
#include "cell_cuda.h"
#include "cuda_utils.cuh"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace lltm::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMinRowsPerBlock = 32;  // fewer partial bias sums for a small batch
// Blocks wanted per multiprocessor: enough bytes in flight to use the memory bandwidth. The
// backward's blocks fit two to a multiprocessor (their registers: benchmarks/NOTES.md, "Numbers
// behind the sources' comments"), and each row of blocks costs a row of partial bias sums.
constexpr int kForwardBlocksPerMultiprocessor = 4;
constexpr int kBackwardBlocksPerMultiprocessor = 2;

// This thread's block's rows: [first, end) by step (its first column: thread_column).
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
  using T = opmath_t<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  const int64_t column = thread_column<VEC>();
  if (column >= state) return;
  const Rows rows = block_rows(batch, rows_per_block);
  for (int64_t row = rows.first; row < rows.end; row += rows.step) {
    const int64_t i = row * state + column;
    const scalar_t* g = gates + (i + 2 * row * state);  // row b of gates starts at 3 * b * state
    const P z_input = read_pack<VEC>(g), z_output = read_pack<VEC>(g + state),
            z_candidate = read_pack<VEC>(g + 2 * state), cell = read_pack<VEC>(old_cell + i);
    P cell_out, h_out;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const auto o = forward_point<T, MathFor<scalar_t>>(
          T(z_input.v[k]), T(z_output.v[k]), T(z_candidate.v[k]), T(cell.v[k]));
      cell_out.v[k] = scalar_t(o.new_cell);
      h_out.v[k] = scalar_t(o.new_h);
    }
    write_pack(new_cell + i, cell_out);
    write_pack(new_h + i, h_out);
  }
}

// With one block row (gridDim.y == 1) the bias sums go straight to d_bias, else to row blockIdx.y
// of `partials`; with no d_bias (nullptr) they are not summed.
template <typename scalar_t, int VEC>
__global__ void __launch_bounds__(kThreads)
backward_kernel(const scalar_t* __restrict__ grad_h, const scalar_t* __restrict__ grad_cell,
                const scalar_t* __restrict__ gates, const scalar_t* __restrict__ old_cell,
                scalar_t* __restrict__ d_gates, scalar_t* __restrict__ d_old_cell,
                scalar_t* __restrict__ d_bias, opmath_t<scalar_t>* __restrict__ partials,
                int64_t batch, int64_t state, int64_t rows_per_block) {
  using T = opmath_t<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  opmath_t<scalar_t> sums[3 * VEC] = {};  // d_gates summed over rows: input, output, candidate
  const int64_t column = thread_column<VEC>();
  if (column < state) {
    const Rows rows = block_rows(batch, rows_per_block);
    for (int64_t row = rows.first; row < rows.end; row += rows.step) {
      const int64_t i = row * state + column, g = i + 2 * row * state;
      const P gh = read_pack<VEC>(grad_h + i), gc = read_pack<VEC>(grad_cell + i),
              z_input = read_pack<VEC>(gates + g), z_output = read_pack<VEC>(gates + g + state),
              z_candidate = read_pack<VEC>(gates + g + 2 * state), cell = read_pack<VEC>(old_cell + i);
      P d_input, d_output, d_candidate, d_cell;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const auto o = backward_point<T, MathFor<scalar_t>>(
            T(gh.v[k]), T(gc.v[k]), T(z_input.v[k]), T(z_output.v[k]),
            T(z_candidate.v[k]), T(cell.v[k]));
        d_input.v[k] = scalar_t(o.d_input_gate);
        d_output.v[k] = scalar_t(o.d_output_gate);
        d_candidate.v[k] = scalar_t(o.d_candidate);
        d_cell.v[k] = scalar_t(o.d_old_cell);
        sums[k] += o.d_input_gate;
        sums[VEC + k] += o.d_output_gate;
        sums[2 * VEC + k] += o.d_candidate;
      }
      write_pack(d_gates + g, d_input);
      write_pack(d_gates + g + state, d_output);
      write_pack(d_gates + g + 2 * state, d_candidate);
      write_pack(d_old_cell + i, d_cell);
    }
  }
  if (d_bias == nullptr) return;  // the same for every thread, so none is left waiting in the sum
  sum_over_block_rows(sums);
  if (threadIdx.y != 0 || column >= state) return;
#pragma unroll
  for (int gate = 0; gate < 3; ++gate) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const int64_t out = gate * state + column + k;
      const auto sum = sums[gate * VEC + k];
      if (gridDim.y == 1) {
        d_bias[out] = scalar_t(sum);
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
  if (threadIdx.y == 0 && column < columns) d_bias[column] = scalar_t(sum[0]);
}

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

int64_t bias_partial_rows(int64_t batch, int multiprocessors) {
  return std::min(ceil_div(batch, kMinRowsPerBlock), int64_t{kBackwardBlocksPerMultiprocessor} * multiprocessors);
}

cudaError_t launch_cell_forward(const CellParams& p, DType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    const auto* gates = static_cast<const scalar_t*>(p.gates);
    const auto* old_cell = static_cast<const scalar_t*>(p.old_cell);
    auto* new_h = static_cast<scalar_t*>(p.new_h);
    auto* new_cell = static_cast<scalar_t*>(p.new_cell);
    with_access_width<scalar_t>(p.state, {gates, old_cell, new_h, new_cell}, [&](auto vec) {
      const Geometry geo = geometry(p.batch, p.state, vec, kForwardBlocksPerMultiprocessor, p.multiprocessors);
      forward_kernel<scalar_t, decltype(vec)::value><<<geo.grid, geo.block, 0, stream>>>(
          gates, old_cell, new_h, new_cell, p.batch, p.state, geo.rows_per_block);
    });
  });
  if (!ran) return cudaErrorNotSupported;
  return cudaGetLastError();
}

cudaError_t launch_cell_backward(const CellParams& p, DType dtype, cudaStream_t stream) {
  cudaError_t error = cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    auto* d_bias = static_cast<scalar_t*>(p.d_bias);
    auto* partials = static_cast<opmath_t<scalar_t>*>(p.bias_partials);
    const auto* grad_h = static_cast<const scalar_t*>(p.grad_h);
    const auto* grad_cell = static_cast<const scalar_t*>(p.grad_cell);
    const auto* gates = static_cast<const scalar_t*>(p.gates);
    const auto* old_cell = static_cast<const scalar_t*>(p.old_cell);
    auto* d_gates = static_cast<scalar_t*>(p.d_gates);
    auto* d_old_cell = static_cast<scalar_t*>(p.d_old_cell);
    unsigned row_blocks = 0;
    with_access_width<scalar_t>(p.state, {grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell}, [&](auto vec) {
      const Geometry geo = geometry(p.batch, p.state, vec, kBackwardBlocksPerMultiprocessor, p.multiprocessors);
      row_blocks = geo.grid.y;
      backward_kernel<scalar_t, decltype(vec)::value><<<geo.grid, geo.block, 0, stream>>>(
          grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell, d_bias, partials, p.batch, p.state,
          geo.rows_per_block);
    });
    error = cudaGetLastError();
    if (error != cudaSuccess || d_bias == nullptr || row_blocks == 1) return;
    const dim3 block(kBiasSumColumns, kThreads / kBiasSumColumns);
    bias_sum_kernel<scalar_t><<<static_cast<unsigned>(ceil_div(3 * p.state, kBiasSumColumns)), block, 0, stream>>>(
        partials, d_bias, row_blocks, 3 * p.state);
    error = cudaGetLastError();
  });
  if (!ran) return cudaErrorNotSupported;
  return error;
}

}  // namespace lltm::cuda
