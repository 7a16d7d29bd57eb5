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
#include <type_traits>

namespace lltm::cuda {
namespace {

constexpr int kMaxRows = 8;  // batch rows per persistent block, at most
constexpr int kStepThreads = 256;

__device__ __forceinline__ bool runs(const int64_t* lengths, int64_t b, int64_t t) {
  return lengths == nullptr || t < lengths[b];
}

// A persistent block: blockDim.x = `columns` threads, one per state column (rounded up to a
// warp), by blockDim.y = `slices` thread rows that split each step's reduction over W_h, for R
// batch rows. Slice 0 owns the columns: it keeps their state in registers, adds up the slices'
// partial sums and applies the cell.
//
// Shared memory: W_h in the math type, as Pack<T, 4> groups along the reduction's dimension (so
// that consecutive threads read consecutive 16-byte words); then R rows of state-sized vectors
// (h in the forward, the three gates' gradients in the backward); then the partial sums of
// slices 1 and up.
constexpr int kPersistentThreads = 512;
constexpr int kMaxSlices = 4;

struct PersistentShape {
  int rows, slices;
  size_t shared_bytes;
};

template <typename T>
size_t persistent_shared_bytes(int64_t state, int rows, int slices, bool forward) {
  const int64_t padded = round_up(state, 4), columns = round_up(state, 32);
  const int64_t vectors = forward ? 1 : 3, partial_sums = forward ? 3 : 1;
  return sizeof(T) * (3 * state * padded + rows * vectors * padded + (slices - 1) * rows * partial_sums * columns);
}

// The most rows that still give each multiprocessor at most one block (more rows share each pass
// over W_h, fewer make more blocks), then the most slices, within the shared memory a block may
// have; none (rows == 0) when W_h does not fit.
template <typename T>
PersistentShape persistent_shape(const SequenceParams& p, bool forward) {
  const int64_t columns = round_up(p.state, 32);
  if (columns > kPersistentThreads) return {0, 0, 0};
  int wanted_rows = 1;
  while (wanted_rows < kMaxRows && ceil_div(p.batch, wanted_rows) > p.multiprocessors) wanted_rows *= 2;
  const int most_slices = static_cast<int>(std::min<int64_t>(kMaxSlices, kPersistentThreads / columns));
  for (int rows = wanted_rows; rows >= 1; rows /= 2) {
    for (int slices = most_slices; slices >= 1; --slices) {
      const size_t bytes = persistent_shared_bytes<T>(p.state, rows, slices, forward);
      if (bytes <= p.shared_memory_per_block) return {rows, slices, bytes};
    }
  }
  return {0, 0, 0};
}

// This thread slice's share [begin, end) of `count` reduction groups.
struct Share {
  int64_t begin, end;
};

__device__ __forceinline__ Share slice_share(int64_t count) {
  const int64_t per = ceil_div(count, blockDim.y), begin = threadIdx.y * per;
  return {begin, begin + per < count ? begin + per : count};
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(kPersistentThreads) persistent_forward_kernel(SequenceParams p) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int64_t S = p.state, B = p.batch, padded = round_up(S, 4), groups = padded / 4, columns = blockDim.x;
  V* w = reinterpret_cast<V*>(shared);              // w[(g * groups + q) * S + j].v[i] = W_h[g*S + j][4q + i]
  T* h = reinterpret_cast<T*>(w + 3 * groups * S);  // h[r * padded + k]
  T* partial = h + R * padded;                       // [slices - 1][3][R][columns]
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  const int64_t thread = threadIdx.y * columns + threadIdx.x, threads = columns * blockDim.y;
  for (int64_t i = thread; i < 3 * S * padded; i += threads) {
    const int64_t row = i / padded, k = i % padded, g = row / S, j = row % S;
    w[(g * groups + k / 4) * S + j].v[k % 4] = k < S ? T(weights[row * p.weights_ld + k]) : T(0);
  }
  const int64_t j = threadIdx.x, b0 = int64_t{blockIdx.x} * R;
  const bool owner = threadIdx.y == 0 && j < S;
  auto* gates = static_cast<scalar_t*>(p.gates);
  auto* output = static_cast<scalar_t*>(p.output);
  auto* cells = static_cast<scalar_t*>(p.cells);
  // The owner's state, and the input projection of the step at hand, loaded a step ahead.
  T c[R], x[3][R];
  int64_t length[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    const bool valid = b < B && j < S;
    c[r] = valid ? T(static_cast<const scalar_t*>(p.c0)[b * S + j]) : T(0);
    if (threadIdx.y == 0 && j < padded) h[r * padded + j] = valid ? T(static_cast<const scalar_t*>(p.h0)[b * S + j]) : T(0);
    length[r] = b >= B ? 0 : p.lengths ? p.lengths[b] : p.time;
#pragma unroll
    for (int g = 0; g < 3; ++g) x[g][r] = owner && b < B && p.time > 0 ? T(gates[b * 3 * S + g * S + j]) : T(0);
  }
  __syncthreads();
  const Share share = slice_share(groups);
  for (int64_t t = 0; t < p.time; ++t) {
    T z[3][R], next[3][R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int64_t b = b0 + r;
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        z[g][r] = x[g][r];
        next[g][r] = owner && b < B && t + 1 < p.time ? T(gates[((t + 1) * B + b) * 3 * S + g * S + j]) : T(0);
      }
    }
    if (j < S) {
      for (int64_t q = share.begin; q < share.end; ++q) {
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
      if (threadIdx.y > 0) {
#pragma unroll
        for (int g = 0; g < 3; ++g) {
#pragma unroll
          for (int r = 0; r < R; ++r) partial[(((threadIdx.y - 1) * 3 + g) * R + r) * columns + j] = z[g][r];
        }
      }
    }
    __syncthreads();  // the partial sums are in; every thread has read h
    if (owner) {
      for (int s = 1; s < blockDim.y; ++s) {
#pragma unroll
        for (int g = 0; g < 3; ++g) {
#pragma unroll
          for (int r = 0; r < R; ++r) z[g][r] += partial[(((s - 1) * 3 + g) * R + r) * columns + j];
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t b = b0 + r;
        if (b >= B) continue;
        const int64_t row = t * B + b;
        if (cells != nullptr) {  // a backward follows: it reads the pre-activations
#pragma unroll
          for (int g = 0; g < 3; ++g) gates[row * 3 * S + g * S + j] = scalar_t(z[g][r]);
        }
        if (t < length[r]) {
          const auto o = forward_point<T, MathFor<scalar_t>>(z[0][r], z[1][r], z[2][r], c[r]);
          c[r] = o.new_cell;
          h[r * padded + j] = o.new_h;
          output[row * S + j] = scalar_t(o.new_h);
        } else {
          output[row * S + j] = scalar_t(0);
        }
        if (cells != nullptr) cells[row * S + j] = scalar_t(c[r]);
#pragma unroll
        for (int g = 0; g < 3; ++g) x[g][r] = next[g][r];
      }
    }
    __syncthreads();  // the new h is in
  }
  if (!owner) return;
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

// What step t's backward reads from memory for one element, loaded a step ahead.
template <typename T>
struct StepInputs {
  T z[3], c_prev, grad_h;
};

template <typename scalar_t, typename T = opmath_t<scalar_t>>
__device__ __forceinline__ StepInputs<T> step_inputs(const SequenceParams& p, int64_t t, int64_t b, int64_t j) {
  const int64_t S = p.state, B = p.batch;
  const auto* z = static_cast<const scalar_t*>(p.gates) + (t * B + b) * 3 * S + j;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + ((t - 1) * B + b) * S + j
                             : static_cast<const scalar_t*>(p.c0) + b * S + j;
  return {{T(z[0]), T(z[S]), T(z[2 * S])}, T(*c_prev), T(grad_output_at<scalar_t>(p, t, b, j))};
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(kPersistentThreads) persistent_backward_kernel(SequenceParams p) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int64_t S = p.state, B = p.batch, padded = round_up(S, 4), groups = padded / 4, columns = blockDim.x;
  V* w = reinterpret_cast<V*>(shared);              // w[(g * groups + q) * S + k].v[i] = W_h[g*S + 4q + i][k]
  T* dg = reinterpret_cast<T*>(w + 3 * groups * S);  // dg[(r * 3 + g) * padded + j]
  T* partial = dg + R * 3 * padded;                  // [slices - 1][R][columns]
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  const int64_t thread = threadIdx.y * columns + threadIdx.x, threads = columns * blockDim.y;
  for (int64_t i = thread; i < 3 * padded * S; i += threads) {
    const int64_t row = i / S, k = i % S, g = row / padded, j = row % padded;
    w[(g * groups + j / 4) * S + k].v[j % 4] = j < S ? T(weights[(g * S + j) * p.weights_ld + k]) : T(0);
  }
  for (int64_t i = thread; i < R * 3 * padded; i += threads) dg[i] = T(0);  // the padding stays zero
  const int64_t j = threadIdx.x, b0 = int64_t{blockIdx.x} * R;
  const bool owner = threadIdx.y == 0 && j < S;
  T dh[R], dc[R];
  int64_t length[R];
  StepInputs<T> in[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    const bool valid = owner && b < B;
    dh[r] = valid ? T(static_cast<const scalar_t*>(p.d_h)[b * S + j]) : T(0);
    dc[r] = valid ? T(static_cast<const scalar_t*>(p.d_c)[b * S + j]) : T(0);
    length[r] = b >= B ? 0 : p.lengths ? p.lengths[b] : p.time;
    if (valid && p.time > 0) in[r] = step_inputs<scalar_t>(p, p.time - 1, b, j);
  }
  auto* gates = static_cast<scalar_t*>(p.gates);
  const Share share = slice_share(3 * groups);
  __syncthreads();
  for (int64_t t = p.time - 1; t >= 0; --t) {
    if (owner) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t b = b0 + r;
        if (b >= B) continue;
        scalar_t* z = gates + (t * B + b) * 3 * S + j;
        T d[3] = {T(0), T(0), T(0)};
        if (t < length[r]) {
          const auto o = backward_point<T, MathFor<scalar_t>>(in[r].grad_h + dh[r], dc[r], in[r].z[0], in[r].z[1],
                                                              in[r].z[2], in[r].c_prev);
          dc[r] = o.d_old_cell;
          d[0] = o.d_input_gate;
          d[1] = o.d_output_gate;
          d[2] = o.d_candidate;
        }
#pragma unroll
        for (int g = 0; g < 3; ++g) {
          z[g * S] = scalar_t(d[g]);
          dg[(r * 3 + g) * padded + j] = d[g];
        }
        if (t > 0) in[r] = step_inputs<scalar_t>(p, t - 1, b, j);
      }
    }
    __syncthreads();  // the step's gate gradients are in shared memory
    T sum[R];
#pragma unroll
    for (int r = 0; r < R; ++r) sum[r] = T(0);
    if (j < S) {
      for (int64_t pair = share.begin; pair < share.end; ++pair) {
        const V wv = w[pair * S + j];  // pair = g * groups + q
        const int64_t g = pair / groups, q = pair % groups;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const V dv = reinterpret_cast<const V*>(dg + (r * 3 + g) * padded)[q];
#pragma unroll
          for (int i = 0; i < 4; ++i) sum[r] += wv.v[i] * dv.v[i];
        }
      }
      if (threadIdx.y > 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) partial[((threadIdx.y - 1) * R + r) * columns + j] = sum[r];
      }
    }
    __syncthreads();  // the partial sums are in; every thread has read the gate gradients
    if (owner) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        for (int s = 1; s < blockDim.y; ++s) sum[r] += partial[((s - 1) * R + r) * columns + j];
        if (t < length[r]) dh[r] = sum[r];  // past the end h passes through unchanged
      }
    }
  }
  if (!owner) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t b = b0 + r;
    if (b >= B) continue;
    static_cast<scalar_t*>(p.d_h)[b * S + j] = scalar_t(dh[r]);
    static_cast<scalar_t*>(p.d_c)[b * S + j] = scalar_t(dc[r]);
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads) step_forward_kernel(SequenceParams p, int64_t t, StepState state) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  const auto* pre = static_cast<const T*>(state.pre);
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* __restrict__ h_prev = static_cast<const scalar_t*>(state.h_prev);
  const auto* __restrict__ c_prev = static_cast<const T*>(state.c_prev);
  auto* __restrict__ h_next = static_cast<scalar_t*>(state.h_next);
  auto* __restrict__ c_next = static_cast<T*>(state.c_next);
  auto* output = static_cast<scalar_t*>(p.output) + t * n;
  auto* cells = p.cells ? static_cast<scalar_t*>(p.cells) + t * n : nullptr;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    const T* z = pre + b * 3 * S + j;
    if (runs(p.lengths, b, t)) {
      const auto o = forward_point<T, MathFor<scalar_t>>(z[0], z[S], z[2 * S], c_prev[i]);
      output[i] = scalar_t(o.new_h);
      c_next[i] = o.new_cell;
      h_next[i] = scalar_t(o.new_h);
    } else {
      output[i] = scalar_t(0);
      c_next[i] = c_prev[i];
      h_next[i] = h_prev[i];
    }
    if (cells) {
      cells[i] = scalar_t(c_next[i]);
      // Where pre is not gates[t] itself, the backward's pre-activations, rounded once.
      if constexpr (!std::is_same_v<T, scalar_t>) {
        for (int g = 0; g < 3; ++g) gates[b * 3 * S + g * S + j] = scalar_t(z[g * S]);
      }
    }
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
    step_backward_kernel(SequenceParams p, int64_t t, void* d_h_, void* d_c_) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);
  auto* d_h = static_cast<T*>(d_h_);
  auto* d_c = static_cast<T*>(d_c_);
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    scalar_t* z = gates + b * 3 * S + j;
    if (runs(p.lengths, b, t)) {
      const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j)) + d_h[i];
      const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, d_c[i], T(z[0]), T(z[S]), T(z[2 * S]), T(c_prev[i]));
      z[0] = scalar_t(o.d_input_gate);
      z[S] = scalar_t(o.d_output_gate);
      z[2 * S] = scalar_t(o.d_candidate);
      d_c[i] = o.d_old_cell;
      d_h[i] = T(0);  // the host adds d_gates[t] W_h
    } else {
      z[0] = z[S] = z[2 * S] = scalar_t(0);  // d_h and d_c pass through the skipped step
    }
  }
}

unsigned step_blocks(const SequenceParams& p) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(ceil_div(p.batch * p.state, kStepThreads), int64_t{8} * p.multiprocessors)));
}

template <typename scalar_t, int R, bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, const PersistentShape& shape, cudaStream_t stream) {
  auto kernel = kForward ? persistent_forward_kernel<scalar_t, R> : persistent_backward_kernel<scalar_t, R>;
  if (const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(shape.shared_bytes));
      error != cudaSuccess) {
    return error;
  }
  const dim3 block(static_cast<unsigned>(round_up(p.state, 32)), static_cast<unsigned>(shape.slices));
  kernel<<<static_cast<unsigned>(ceil_div(p.batch, R)), block, shape.shared_bytes, stream>>>(p);
  return cudaGetLastError();
}

template <bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  cudaError_t error = cudaSuccess;
  dispatch(dtype, kForward ? "lltm_sequence_forward_cuda" : "lltm_sequence_backward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    const PersistentShape shape = persistent_shape<opmath_t<scalar_t>>(p, kForward);
    switch (shape.rows) {
      case 1: error = launch_persistent<scalar_t, 1, kForward>(p, shape, stream); break;
      case 2: error = launch_persistent<scalar_t, 2, kForward>(p, shape, stream); break;
      case 4: error = launch_persistent<scalar_t, 4, kForward>(p, shape, stream); break;
      case kMaxRows: error = launch_persistent<scalar_t, kMaxRows, kForward>(p, shape, stream); break;
      default: error = cudaErrorInvalidConfiguration;  // persistent_fits said no
    }
  });
  return error;
}

}  // namespace

bool persistent_fits(const SequenceParams& p, at::ScalarType dtype) {
  bool fits = false;
  dispatch(dtype, "lltm_sequence_cuda", [&](auto tag) {
    using T = opmath_t<decltype(tag)>;
    fits = persistent_shape<T>(p, true).rows > 0 && persistent_shape<T>(p, false).rows > 0;
  });
  return fits;
}

cudaError_t launch_persistent_forward(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  return launch_persistent<true>(p, dtype, stream);
}

cudaError_t launch_persistent_backward(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  return launch_persistent<false>(p, dtype, stream);
}

cudaError_t launch_step_forward(const SequenceParams& p, int64_t t, const StepState& state, at::ScalarType dtype,
                                cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  dispatch(dtype, "lltm_sequence_step_forward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    step_forward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(p, t, state);
  });
  return cudaGetLastError();
}

cudaError_t launch_step_backward(const SequenceParams& p, int64_t t, void* d_h, void* d_c, at::ScalarType dtype,
                                 cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  dispatch(dtype, "lltm_sequence_step_backward_cuda", [&](auto tag) {
    using scalar_t = decltype(tag);
    step_backward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(p, t, d_h, d_c);
  });
  return cudaGetLastError();
}

}  // namespace lltm::cuda
