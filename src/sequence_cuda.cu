// CUDA kernels of the sequence operator.
//
// Persistent kernels: a block runs every step of R batch rows, one thread per state column, with
// the recurrent weights W_h (3 * state x state, in the math type) in shared memory for the whole
// sequence, the cell state in registers (in float for half and bfloat16 storage, so that it is
// not rounded between steps) and h in shared memory. Batch rows do not interact, so blocks need
// no barrier between them; each step costs one pass over W_h in shared memory.
//
// Step kernels: for states whose W_h does not fit, the host runs one cuBLAS product per step and
// these fused elementwise passes around it.
#include "cuda_utils.cuh"
#include "sequence_cuda.h"

#include <algorithm>
#include <cstdint>

namespace lltm::cuda {
namespace {

constexpr int kMaxRows = 8;  // batch rows per persistent block, at most
constexpr int kStepThreads = 256;

__device__ __forceinline__ bool runs(const int64_t* lengths, int64_t b, int64_t t) {
  return lengths == nullptr || t < lengths[b];
}

// Shared memory of a persistent block: W_h as Pack<T, 4> groups along the reduction's dimension
// (so that consecutive threads read consecutive 16-byte words), then R rows of state-sized
// vectors (h in the forward; the three gates' gradients in the backward).
template <typename T>
size_t persistent_shared_bytes(int64_t state, int rows, int vectors_per_row) {
  const int64_t padded = round_up(state, 4);
  return sizeof(T) * (3 * state * padded + int64_t{rows} * vectors_per_row * padded);
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(1024) persistent_forward_kernel(SequenceParams p) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int64_t S = p.state, B = p.batch, padded = round_up(S, 4), groups = padded / 4;
  V* w = reinterpret_cast<V*>(shared);                    // w[(g * groups + q) * S + j].v[i] = W_h[g*S + j][4q + i]
  T* h = reinterpret_cast<T*>(w + 3 * groups * S);        // h[r * padded + k]
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  for (int64_t i = threadIdx.x; i < 3 * S * padded; i += blockDim.x) {
    const int64_t row = i / padded, k = i % padded, g = row / S, j = row % S;
    w[(g * groups + k / 4) * S + j].v[k % 4] = k < S ? T(weights[row * p.weights_ld + k]) : T(0);
  }
  const int64_t j = threadIdx.x, b0 = int64_t{blockIdx.x} * R;
  T c[R];
  int64_t length[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    const bool valid = b < B && j < S;
    c[r] = valid ? T(static_cast<const scalar_t*>(p.c0)[b * S + j]) : T(0);
    if (j < padded) h[r * padded + j] = valid ? T(static_cast<const scalar_t*>(p.h0)[b * S + j]) : T(0);
    length[r] = b >= B ? 0 : p.lengths ? p.lengths[b] : p.time;
  }
  __syncthreads();
  auto* gates = static_cast<scalar_t*>(p.gates);
  auto* output = static_cast<scalar_t*>(p.output);
  auto* cells = static_cast<scalar_t*>(p.cells);
  for (int64_t t = 0; t < p.time; ++t) {
    T z[3][R];
    if (j < S) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t b = b0 + r;
#pragma unroll
        for (int g = 0; g < 3; ++g) z[g][r] = b < B ? T(gates[(t * B + b) * 3 * S + g * S + j]) : T(0);
      }
      for (int64_t q = 0; q < groups; ++q) {
        const V wi = w[q * S + j], wo = w[(groups + q) * S + j], wc = w[(2 * groups + q) * S + j];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const V hv = reinterpret_cast<const V*>(h + r * padded)[q];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            z[0][r] += wi.v[i] * hv.v[i];
            z[1][r] += wo.v[i] * hv.v[i];
            z[2][r] += wc.v[i] * hv.v[i];
          }
        }
      }
    }
    __syncthreads();  // every thread has read h before any thread writes the new one
    if (j < S) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t b = b0 + r;
        if (b >= B) continue;
        const int64_t row = t * B + b;
#pragma unroll
        for (int g = 0; g < 3; ++g) gates[row * 3 * S + g * S + j] = scalar_t(z[g][r]);
        if (t < length[r]) {
          const auto o = forward_point<T, MathFor<scalar_t>>(z[0][r], z[1][r], z[2][r], c[r]);
          c[r] = o.new_cell;
          h[r * padded + j] = o.new_h;
          output[row * S + j] = scalar_t(o.new_h);
        } else {
          output[row * S + j] = scalar_t(0);
        }
        cells[row * S + j] = scalar_t(c[r]);
      }
    }
    __syncthreads();
  }
  if (j >= S) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    if (b >= B) continue;
    static_cast<scalar_t*>(p.h_n)[b * S + j] = scalar_t(h[r * padded + j]);
    static_cast<scalar_t*>(p.c_n)[b * S + j] = scalar_t(c[r]);
  }
}

template <typename scalar_t>
__device__ __forceinline__ scalar_t grad_output_at(const SequenceParams& p, int64_t t, int64_t b, int64_t j) {
  if (p.grad_output == nullptr) return scalar_t(0);
  const auto* g = static_cast<const scalar_t*>(p.grad_output);
  return g[t * p.grad_output_strides[0] + b * p.grad_output_strides[1] + j * p.grad_output_strides[2]];
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(1024) persistent_backward_kernel(SequenceParams p) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int64_t S = p.state, B = p.batch, padded = round_up(S, 4), groups = padded / 4;
  V* w = reinterpret_cast<V*>(shared);              // w[(g * groups + q) * S + k].v[i] = W_h[g*S + 4q + i][k]
  T* dg = reinterpret_cast<T*>(w + 3 * groups * S);  // dg[(r * 3 + g) * padded + j]
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  for (int64_t i = threadIdx.x; i < 3 * padded * S; i += blockDim.x) {
    const int64_t row = i / S, k = i % S, g = row / padded, j = row % padded;
    w[(g * groups + j / 4) * S + k].v[j % 4] = j < S ? T(weights[(g * S + j) * p.weights_ld + k]) : T(0);
  }
  const int64_t j = threadIdx.x, b0 = int64_t{blockIdx.x} * R;
  T dh[R], dc[R];
  int64_t length[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    const bool valid = b < B && j < S;
    dh[r] = valid ? T(static_cast<const scalar_t*>(p.d_h)[b * S + j]) : T(0);
    dc[r] = valid ? T(static_cast<const scalar_t*>(p.d_c)[b * S + j]) : T(0);
    length[r] = b >= B ? 0 : p.lengths ? p.lengths[b] : p.time;
    if (j < padded) {
#pragma unroll
      for (int g = 0; g < 3; ++g) dg[(r * 3 + g) * padded + j] = T(0);
    }
  }
  auto* gates = static_cast<scalar_t*>(p.gates);
  const auto* cells = static_cast<const scalar_t*>(p.cells);
  const auto* c0 = static_cast<const scalar_t*>(p.c0);
  for (int64_t t = p.time - 1; t >= 0; --t) {
    if (j < S) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t b = b0 + r;
        if (b >= B) continue;
        scalar_t* z = gates + (t * B + b) * 3 * S + j;
        if (t < length[r]) {
          const T c_prev = t > 0 ? T(cells[((t - 1) * B + b) * S + j]) : T(c0[b * S + j]);
          const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j)) + dh[r];
          const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, dc[r], T(z[0]), T(z[S]), T(z[2 * S]), c_prev);
          dc[r] = o.d_old_cell;
          const T d[3] = {o.d_input_gate, o.d_output_gate, o.d_candidate};
#pragma unroll
          for (int g = 0; g < 3; ++g) {
            z[g * S] = scalar_t(d[g]);
            dg[(r * 3 + g) * padded + j] = d[g];
          }
        } else {
#pragma unroll
          for (int g = 0; g < 3; ++g) {
            z[g * S] = scalar_t(0);
            dg[(r * 3 + g) * padded + j] = T(0);
          }
        }
      }
    }
    __syncthreads();  // the step's gate gradients are in shared memory
    if (j < S) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (t >= length[r]) continue;  // past the end h passes through unchanged
        T sum = 0;
#pragma unroll
        for (int g = 0; g < 3; ++g) {
          const V* d = reinterpret_cast<const V*>(dg + (r * 3 + g) * padded);
          for (int64_t q = 0; q < groups; ++q) {
            const V wv = w[(g * groups + q) * S + j], dv = d[q];
#pragma unroll
            for (int i = 0; i < 4; ++i) sum += wv.v[i] * dv.v[i];
          }
        }
        dh[r] = sum;
      }
    }
    __syncthreads();  // every thread has read the gate gradients before the next step writes them
  }
  if (j >= S) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    if (b >= B) continue;
    static_cast<scalar_t*>(p.d_h)[b * S + j] = scalar_t(dh[r]);
    static_cast<scalar_t*>(p.d_c)[b * S + j] = scalar_t(dc[r]);
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
step_forward_kernel(SequenceParams p, int64_t t, const scalar_t* __restrict__ h_prev, scalar_t* __restrict__ h_next) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  const auto* gates = static_cast<const scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);
  auto* output = static_cast<scalar_t*>(p.output) + t * n;
  auto* cells = static_cast<scalar_t*>(p.cells) + t * n;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    const scalar_t* z = gates + b * 3 * S + j;
    if (runs(p.lengths, b, t)) {
      const auto o = forward_point<T, MathFor<scalar_t>>(T(z[0]), T(z[S]), T(z[2 * S]), T(c_prev[i]));
      output[i] = scalar_t(o.new_h);
      cells[i] = scalar_t(o.new_cell);
      h_next[i] = scalar_t(o.new_h);
    } else {
      output[i] = scalar_t(0);
      cells[i] = c_prev[i];
      h_next[i] = h_prev[i];
    }
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads) step_backward_kernel(SequenceParams p, int64_t t) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);
  auto* d_h = static_cast<scalar_t*>(p.d_h);
  auto* d_c = static_cast<scalar_t*>(p.d_c);
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    scalar_t* z = gates + b * 3 * S + j;
    if (runs(p.lengths, b, t)) {
      const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j)) + T(d_h[i]);
      const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, T(d_c[i]), T(z[0]), T(z[S]), T(z[2 * S]), T(c_prev[i]));
      z[0] = scalar_t(o.d_input_gate);
      z[S] = scalar_t(o.d_output_gate);
      z[2 * S] = scalar_t(o.d_candidate);
      d_c[i] = scalar_t(o.d_old_cell);
      d_h[i] = scalar_t(0);  // the host adds d_gates[t] W_h
    } else {
      z[0] = z[S] = z[2 * S] = scalar_t(0);  // d_h and d_c pass through the skipped step
    }
  }
}

unsigned step_blocks(const SequenceParams& p) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(ceil_div(p.batch * p.state, kStepThreads), int64_t{8} * p.multiprocessors)));
}

// The fewest rows per block that still give each multiprocessor at most one block; more rows
// share each pass over W_h, fewer make more blocks.
int rows_per_block(const SequenceParams& p) {
  int rows = 1;
  while (rows < kMaxRows && ceil_div(p.batch, rows) > p.multiprocessors) rows *= 2;
  return rows;
}

template <typename scalar_t, int R, bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, cudaStream_t stream) {
  const size_t bytes = persistent_shared_bytes<opmath_t<scalar_t>>(p.state, R, kForward ? 1 : 3);
  auto kernel = kForward ? persistent_forward_kernel<scalar_t, R> : persistent_backward_kernel<scalar_t, R>;
  if (const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(bytes));
      error != cudaSuccess) {
    return error;
  }
  const unsigned threads = static_cast<unsigned>(round_up(p.state, 32));
  kernel<<<static_cast<unsigned>(ceil_div(p.batch, R)), threads, bytes, stream>>>(p);
  return cudaGetLastError();
}

template <bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  cudaError_t error = cudaSuccess;
  dispatch(dtype, kForward ? "lltm_sequence_forward_cuda" : "lltm_sequence_backward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    switch (rows_per_block(p)) {
      case 1: error = launch_persistent<scalar_t, 1, kForward>(p, stream); break;
      case 2: error = launch_persistent<scalar_t, 2, kForward>(p, stream); break;
      case 4: error = launch_persistent<scalar_t, 4, kForward>(p, stream); break;
      default: error = launch_persistent<scalar_t, kMaxRows, kForward>(p, stream); break;
    }
  });
  return error;
}

}  // namespace

bool persistent_fits(const SequenceParams& p, at::ScalarType dtype) {
  const size_t math_size = at::toOpMathType(dtype) == at::kDouble ? sizeof(double) : sizeof(float);
  const int64_t padded = round_up(p.state, 4);
  const size_t bytes = math_size * (3 * p.state * padded + int64_t{kMaxRows} * 3 * padded);
  return p.state <= 1024 && bytes <= p.shared_memory_per_block;
}

cudaError_t launch_persistent_forward(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  return launch_persistent<true>(p, dtype, stream);
}

cudaError_t launch_persistent_backward(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  return launch_persistent<false>(p, dtype, stream);
}

cudaError_t launch_step_forward(const SequenceParams& p, int64_t t, const void* h_prev, void* h_next,
                                at::ScalarType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  dispatch(dtype, "lltm_sequence_step_forward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    step_forward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(
        p, t, static_cast<const scalar_t*>(h_prev), static_cast<scalar_t*>(h_next));
  });
  return cudaGetLastError();
}

cudaError_t launch_step_backward(const SequenceParams& p, int64_t t, at::ScalarType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  dispatch(dtype, "lltm_sequence_step_backward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    step_backward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(p, t);
  });
  return cudaGetLastError();
}

}  // namespace lltm::cuda
