// CUDA kernels of the sequence operator.
//
// Persistent kernels: one launch runs every step. The batch is split into groups of R rows and the
// state's columns into tiles; a block runs every step of one group's rows for one tile, keeping
// the rows of W_h that belong to its tile's columns (all three gates', in the math type) in shared
// memory for the whole sequence, and the cell state and the carried gradients in registers (in
// float for half and bfloat16 storage, so that they are not rounded between steps). Where one
// tile holds every column, a block needs nothing from the others. Otherwise the blocks of a group
// exchange a vector a step through global memory (L2) and wait for each other at a barrier, which
// needs them all resident at once (a cooperative launch): the forward gathers the new h of every
// column before the next product; the backward's product gives each tile's share of d_h for every
// column, and each column's owner adds up the tiles' shares.
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

constexpr int kStepThreads = 256;

__device__ __forceinline__ bool runs(const int64_t* lengths, int64_t b, int64_t t) {
  return lengths == nullptr || t < lengths[b];
}

// A persistent block has `columns` x `slices` threads: slices split each step's reduction over
// W_h, and every thread then updates at most kItems (row, column) cells of the state.
constexpr int kPersistentThreads = 512;
constexpr int kMaxRows = 8;
constexpr int kMaxSlices = 16;
constexpr int kItems = 2;

// Forward shared memory: the tile's rows of W_h as Pack<T, 4> packs along the reduction's
// dimension k (consecutive threads, consecutive columns, read consecutive 16-byte words); h of
// the group's rows; the slices' partial sums. Backward: the tile's rows of W_h packed along the
// tile's columns j, one thread per column k of d_h; the tile's gate gradients; the slices'
// partial sums. `width` columns per tile, a multiple of 4 (the last tile may hold fewer).
struct Tiling {
  int rows = 0;  // 0: the persistent kernels do not fit
  int slices = 0;
  int tiles = 0;
  int width = 0;
  size_t shared_bytes = 0;
};

// The workspace, in the math type: where tiles > 1, what the blocks of a group exchange (the
// forward's h, 2 x batch x state; the backward's shares of d_h, 2 x tiles x batch x state; two
// halves that alternate with the step's parity); where the backward sums d_bias over more than
// one group of rows, each group's sums (groups x 3 x state). Then counters that start at zero: an
// arrival counter per group (tiles > 1), then a ticket per tile (the d_bias sums).
template <typename T>
struct Workspace {
  T* exchange;
  T* bias_sums;
  int* arrivals;
  int* tickets;
};

struct WorkspaceSizes {
  int64_t exchange, bias_sums;  // elements of the math type
  int64_t arrivals, tickets;    // counters
};

LLTM_HD WorkspaceSizes workspace_sizes(const SequenceParams& p, const Tiling& t, bool forward) {
  if (t.rows == 0) return {};  // the tiling does not fit: no launch
  const int64_t groups = ceil_div(p.batch, t.rows);
  const bool split = t.tiles > 1, bias = !forward && p.d_bias != nullptr && groups > 1;
  return {split ? 2 * (forward ? 1 : t.tiles) * p.batch * p.state : 0, bias ? groups * 3 * p.state : 0,
          split ? groups : 0, bias ? t.tiles : 0};
}

template <typename T>
LLTM_HD Workspace<T> workspace(const SequenceParams& p, const Tiling& t, bool forward) {
  const WorkspaceSizes n = workspace_sizes(p, t, forward);
  T* exchange = static_cast<T*>(p.workspace);
  int* arrivals = reinterpret_cast<int*>(exchange + n.exchange + n.bias_sums);
  return {exchange, exchange + n.exchange, arrivals, arrivals + n.arrivals};
}

template <typename T>
size_t workspace_bytes(const SequenceParams& p, const Tiling& t, bool forward) {
  const WorkspaceSizes n = workspace_sizes(p, t, forward);
  return sizeof(T) * (n.exchange + n.bias_sums) + sizeof(int) * (n.arrivals + n.tickets);
}

int block_columns(const SequenceParams& p, const Tiling& t, bool forward) {
  return static_cast<int>(round_up(forward ? t.width : p.state, 32));
}

template <typename T>
size_t shared_bytes(const SequenceParams& p, const Tiling& t, bool forward) {
  const int64_t S = p.state, padded = round_up(S, 4), R = t.rows, W = t.width;
  return sizeof(T) * (forward ? 3 * W * padded + R * padded + t.slices * 3 * R * W
                              : 3 * W * S + R * 3 * W + t.slices * R * S);
}

// The fewest tiles whose rows of W_h fit in a block's shared memory (more tiles exchange more
// each step); then the fewest rows that give each multiprocessor at most one block (fewer rows
// make more blocks, and with tiles > 1 every block must be resident at once; with one tile,
// fewer rows where those do not fit); then the most slices that fit. None (rows == 0) where no
// tiling fits.
template <typename T>
Tiling persistent_tiling(const SequenceParams& p, bool forward) {
  if (round_up(p.state, 32) > kPersistentThreads) return {};
  for (int64_t nominal = 1; nominal <= p.multiprocessors && (nominal == 1 || p.cooperative); nominal *= 2) {
    Tiling t;
    t.width = static_cast<int>(round_up(ceil_div(p.state, nominal), 4));
    t.tiles = static_cast<int>(ceil_div(p.state, t.width));
    const int columns = block_columns(p, t, forward);
    auto blocks = [&](int rows) { return t.tiles * ceil_div(p.batch, rows); };
    int rows = 1;
    while (rows < kMaxRows && blocks(rows) > p.multiprocessors) rows *= 2;
    for (; rows >= 1 && (t.tiles == 1 || blocks(rows) <= p.multiprocessors); rows /= 2) {
      t.rows = rows;
      for (t.slices = std::min(kMaxSlices, kPersistentThreads / columns); t.slices >= 1; --t.slices) {
        t.shared_bytes = shared_bytes<T>(p, t, forward);
        if (t.shared_bytes <= p.shared_memory_per_block && rows * t.width <= kItems * columns * t.slices) return t;
      }
    }
  }
  return {};
}

// Where the blocks of a group are: block (group, tile) runs rows [b0, b0 + R) and owns columns
// [j0, j0 + width) of the state.
struct Place {
  int tile, group;
  int64_t b0;
  int j0;
};

template <int R>
__device__ __forceinline__ Place place(const Tiling& t) {
  const int tile = blockIdx.x % t.tiles, group = blockIdx.x / t.tiles;
  return {tile, group, int64_t{group} * R, tile * t.width};
}

// Arrives at the group's counter and waits until it reaches `target` (tiles arrivals a step):
// what every block of the group wrote to global memory before arriving is then visible to every
// thread of this one.
__device__ __forceinline__ void arrive_and_wait(int* arrivals, int target) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();
    atomicAdd(arrivals, 1);
    while (*static_cast<volatile int*>(arrivals) < target) {
    }
    __threadfence();
  }
  __syncthreads();
}

// This thread's index in its (2-D) block, and the block's number of threads.
__device__ __forceinline__ int thread_rank() { return threadIdx.y * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int block_threads() { return blockDim.x * blockDim.y; }

// Whether this block is the last of `count` to take a ticket: what the others wrote to global
// memory before taking theirs is then visible to every thread of this one. Needs no residency.
__device__ __forceinline__ bool last_to_arrive(int* tickets, int count) {
  __syncthreads();
  bool last = false;
  if (thread_rank() == 0) {
    __threadfence();
    last = atomicAdd(tickets, 1) == count - 1;
    __threadfence();
  }
  return __syncthreads_or(last);
}

// The cells of the state a thread updates: item m is (row r, column c) of the block's R x width,
// with the length of row b's sequence (0 where the item lies past the batch or the state).
struct Item {
  int r, c;
  int64_t b, j, length;
  bool valid;
};

template <int R>
__device__ __forceinline__ Item item_at(const SequenceParams& p, const Tiling& t, const Place& at, int m) {
  const int item = thread_rank() + m * block_threads();
  const int r = item / t.width, c = item % t.width;
  const int64_t b = at.b0 + r, j = at.j0 + c;
  const bool valid = item < R * t.width && b < p.batch && j < p.state;
  return {r, c, b, j, !valid ? 0 : p.lengths ? p.lengths[b] : p.time, valid};
}

// Rows [b0, b0 + R) of a (batch, S) matrix that other blocks wrote, from L2 (not this
// multiprocessor's L1, which may hold an older copy) into shared memory rows of `stride`; zeros
// past the batch. The loads of a round are all in flight together.
template <int R, typename T>
__device__ __forceinline__ void gather_rows(T* to, int stride, const T* from, int S, int64_t b0, int64_t B) {
  constexpr int kInFlight = 8;
  const int thread = thread_rank(), threads = block_threads();
  for (int first = thread; first < R * S; first += kInFlight * threads) {
    T v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads, r = i / S;
      v[u] = i < R * S && b0 + r < B ? __ldcg(from + (b0 + r) * S + i % S) : T(0);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads;
      if (i < R * S) to[(i / S) * stride + i % S] = v[u];
    }
  }
}

// This thread slice's share [begin, end) of `count`.
struct Share {
  int begin, end;
};

__device__ __forceinline__ Share slice_share(int count) {
  const int per = static_cast<int>(ceil_div(count, blockDim.y)), begin = threadIdx.y * per;
  return {begin, begin + per < count ? begin + per : count};
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(kPersistentThreads) persistent_forward_kernel(SequenceParams p, Tiling tiling) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int S = static_cast<int>(p.state), padded = static_cast<int>(round_up(S, 4)), packs = padded / 4;
  const int W = tiling.width;
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  V* w = reinterpret_cast<V*>(shared);             // w[(g * packs + q) * W + c].v[i] = W_h[g*S + j0 + c][4q + i]
  T* h = reinterpret_cast<T*>(w + 3 * packs * W);  // h[r * padded + k]
  T* partial = h + R * padded;                     // partial[((s * 3 + g) * R + r) * W + c]
  const Workspace<T> ws = workspace<T>(p, tiling, true);
  T* exchange = ws.exchange;  // [2][batch][state]
  int* arrivals = ws.arrivals + at.group;
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  const int thread = thread_rank(), threads = block_threads();
  for (int i = thread; i < 3 * W * padded; i += threads) {
    const int row = i / padded, k = i % padded, g = row / W, c = row % W, j = at.j0 + c;
    w[(g * packs + k / 4) * W + c].v[k % 4] =
        k < S && j < S ? T(weights[static_cast<int64_t>(g * S + j) * p.weights_ld + k]) : T(0);
  }
  const auto* h0 = static_cast<const scalar_t*>(p.h0);
  for (int i = thread; i < R * padded; i += threads) {
    const int r = i / padded, k = i % padded;
    const int64_t b = at.b0 + r;
    h[i] = h0 != nullptr && b < B && k < S ? T(h0[b * S + k]) : T(0);
  }
  auto* gates = static_cast<scalar_t*>(p.gates);
  auto* output = static_cast<scalar_t*>(p.output);
  auto* cells = static_cast<scalar_t*>(p.cells);
  // Each item's state, and the input projection of the step at hand, loaded a step ahead.
  Item items[kItems];
  T c[kItems], h_own[kItems], x[kItems][3];
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    const Item& it = items[m] = item_at<R>(p, tiling, at, m);
    c[m] = it.valid && p.c0 != nullptr ? T(static_cast<const scalar_t*>(p.c0)[it.b * S + it.j]) : T(0);
    h_own[m] = it.valid && h0 != nullptr ? T(h0[it.b * S + it.j]) : T(0);
#pragma unroll
    for (int g = 0; g < 3; ++g) x[m][g] = it.valid && p.time > 0 ? T(gates[it.b * 3 * S + g * S + it.j]) : T(0);
  }
  __syncthreads();
  const Share share = slice_share(packs);
  const int col = threadIdx.x;
  for (int64_t t = 0; t < p.time; ++t) {
    T next[kItems][3];
#pragma unroll
    for (int m = 0; m < kItems; ++m) {
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        next[m][g] = items[m].valid && t + 1 < p.time
                         ? T(gates[((t + 1) * B + items[m].b) * 3 * S + g * S + items[m].j])
                         : T(0);
      }
    }
    if (col < W) {
      T z[3][R] = {};
      for (int q = share.begin; q < share.end; ++q) {
        const V wi = w[q * W + col], wo = w[(packs + q) * W + col], wc = w[(2 * packs + q) * W + col];
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
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int r = 0; r < R; ++r) partial[((threadIdx.y * 3 + g) * R + r) * W + col] = z[g][r];
      }
    }
    __syncthreads();  // the partial sums are in; every thread has read h
#pragma unroll
    for (int m = 0; m < kItems; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
      T z[3];
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        z[g] = x[m][g];
        for (int s = 0; s < blockDim.y; ++s) z[g] += partial[((s * 3 + g) * R + it.r) * W + it.c];
        x[m][g] = next[m][g];
      }
      const int64_t row = t * B + it.b;
      if (cells != nullptr) {  // a backward follows: it reads the pre-activations
#pragma unroll
        for (int g = 0; g < 3; ++g) gates[row * 3 * S + g * S + it.j] = scalar_t(z[g]);
      }
      if (t < it.length) {
        const auto o = forward_point<T, MathFor<scalar_t>>(z[0], z[1], z[2], c[m]);
        c[m] = o.new_cell;
        h_own[m] = o.new_h;
        output[row * S + it.j] = scalar_t(o.new_h);
      } else {
        output[row * S + it.j] = scalar_t(0);
      }
      if (cells != nullptr) cells[row * S + it.j] = scalar_t(c[m]);
      if (tiling.tiles == 1) {
        h[it.r * padded + it.j] = h_own[m];
      } else {
        __stcg(exchange + ((t % 2) * B + it.b) * S + it.j, h_own[m]);
      }
    }
    if (tiling.tiles > 1) {
      arrive_and_wait(arrivals, static_cast<int>(t + 1) * tiling.tiles);
      gather_rows<R>(h, padded, exchange + (t % 2) * B * S, S, at.b0, B);
    }
    __syncthreads();  // the new h is in
  }
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    const Item& it = items[m];
    if (!it.valid) continue;
    static_cast<scalar_t*>(p.h_n)[it.b * S + it.j] = scalar_t(h_own[m]);
    static_cast<scalar_t*>(p.c_n)[it.b * S + it.j] = scalar_t(c[m]);
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
  const T c_prev = t > 0             ? T(static_cast<const scalar_t*>(p.cells)[((t - 1) * B + b) * S + j])
                   : p.c0 != nullptr ? T(static_cast<const scalar_t*>(p.c0)[b * S + j])
                                     : T(0);
  return {{T(z[0]), T(z[S]), T(z[2 * S])}, c_prev, T(grad_output_at<scalar_t>(p, t, b, j))};
}

template <typename scalar_t, int R>
__global__ void __launch_bounds__(kPersistentThreads) persistent_backward_kernel(SequenceParams p, Tiling tiling) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int S = static_cast<int>(p.state), W = tiling.width, packs = W / 4;
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  V* w = reinterpret_cast<V*>(shared);              // w[(g * packs + q) * S + k].v[i] = W_h[g*S + j0 + 4q + i][k]
  T* dg = reinterpret_cast<T*>(w + 3 * packs * S);  // dg[(r * 3 + g) * W + c]
  T* partial = dg + R * 3 * W;                      // partial[(s * R + r) * S + k]
  const Workspace<T> ws = workspace<T>(p, tiling, false);
  T* exchange = ws.exchange;  // [2][tiles][batch][state]
  int* arrivals = ws.arrivals + at.group;
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  const int thread = thread_rank(), threads = block_threads();
  for (int i = thread; i < 3 * W * S; i += threads) {
    const int row = i / S, k = i % S, g = row / W, c = row % W, j = at.j0 + c;
    w[(g * packs + c / 4) * S + k].v[c % 4] =
        j < S ? T(weights[static_cast<int64_t>(g * S + j) * p.weights_ld + k]) : T(0);
  }
  for (int i = thread; i < R * 3 * W; i += threads) dg[i] = T(0);  // what no item writes stays zero
  Item items[kItems];
  T dh[kItems], dc[kItems], bias[kItems][3] = {};  // bias: the item's gate gradients summed over the steps
  StepInputs<T> in[kItems];
  const auto* grad_h_n = static_cast<const scalar_t*>(p.grad_h_n);
  const auto* grad_c_n = static_cast<const scalar_t*>(p.grad_c_n);
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    const Item& it = items[m] = item_at<R>(p, tiling, at, m);
    dh[m] = it.valid && grad_h_n != nullptr ? T(grad_h_n[it.b * S + it.j]) : T(0);
    dc[m] = it.valid && grad_c_n != nullptr ? T(grad_c_n[it.b * S + it.j]) : T(0);
    if (it.valid && p.time > 0) in[m] = step_inputs<scalar_t>(p, p.time - 1, it.b, it.j);
  }
  auto* gates = static_cast<scalar_t*>(p.gates);
  const Share share = slice_share(3 * packs);
  const int k = threadIdx.x;
  __syncthreads();
  for (int64_t t = p.time - 1; t >= 0; --t) {
#pragma unroll
    for (int m = 0; m < kItems; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
      scalar_t* z = gates + (t * B + it.b) * 3 * S + it.j;
      T d[3] = {T(0), T(0), T(0)};
      if (t < it.length) {
        const auto o = backward_point<T, MathFor<scalar_t>>(in[m].grad_h + dh[m], dc[m], in[m].z[0], in[m].z[1],
                                                            in[m].z[2], in[m].c_prev);
        dc[m] = o.d_old_cell;
        d[0] = o.d_input_gate;
        d[1] = o.d_output_gate;
        d[2] = o.d_candidate;
      }
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        z[g * S] = scalar_t(d[g]);
        dg[(it.r * 3 + g) * W + it.c] = d[g];
        bias[m][g] += d[g];
      }
      if (t > 0) in[m] = step_inputs<scalar_t>(p, t - 1, it.b, it.j);
    }
    __syncthreads();  // the step's gate gradients are in shared memory
    if (k < S) {
      T sum[R] = {};
      for (int g = 0; g < 3; ++g) {  // this slice's pairs (g, q) of [share.begin, share.end)
        const int begin = max(share.begin - g * packs, 0), end = min(share.end - g * packs, packs);
        for (int q = begin; q < end; ++q) {
          const V wv = w[(g * packs + q) * S + k];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const V dv = reinterpret_cast<const V*>(dg + (r * 3 + g) * W)[q];
#pragma unroll
            for (int i = 0; i < 4; ++i) sum[r] += wv.v[i] * dv.v[i];
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) partial[(threadIdx.y * R + r) * S + k] = sum[r];
    }
    __syncthreads();  // the partial sums are in; every thread has read the gate gradients
    const int parity = static_cast<int>(t % 2);
    if (tiling.tiles > 1) {  // this tile's share of d_h of every column, for the columns' owners
      T* share_out = exchange + (parity * tiling.tiles + at.tile) * B * S;
      for (int i = thread; i < R * S; i += threads) {
        const int r = i / S, kk = i % S;
        const int64_t b = at.b0 + r;
        if (b >= B) continue;
        T total = T(0);
        for (int s = 0; s < blockDim.y; ++s) total += partial[(s * R + r) * S + kk];
        __stcg(share_out + b * S + kk, total);
      }
      arrive_and_wait(arrivals, static_cast<int>(p.time - t) * tiling.tiles);
    }
#pragma unroll
    for (int m = 0; m < kItems; ++m) {
      const Item& it = items[m];
      if (!it.valid || t >= it.length) continue;  // past the end h passes through unchanged
      T total = T(0);
      if (tiling.tiles == 1) {
        for (int s = 0; s < blockDim.y; ++s) total += partial[(s * R + it.r) * S + it.j];
      } else {
        const T* shares = exchange + (parity * tiling.tiles * B + it.b) * S + it.j;
#pragma unroll 8
        for (int u = 0; u < tiling.tiles; ++u) total += __ldcg(shares + u * B * S);
      }
      dh[m] = total;
    }
  }
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    const Item& it = items[m];
    if (!it.valid) continue;
    static_cast<scalar_t*>(p.d_h)[it.b * S + it.j] = scalar_t(dh[m]);
    static_cast<scalar_t*>(p.d_c)[it.b * S + it.j] = scalar_t(dc[m]);
  }
  if (p.d_bias == nullptr) return;
  // d_bias: the items' sums added up over the block's rows in dg (free now: the last step's
  // reduction has read it, and where no item is it holds zeros), then over the groups of rows,
  // in a fixed order, by the last block of the tile to finish.
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    const Item& it = items[m];
    if (!it.valid) continue;
#pragma unroll
    for (int g = 0; g < 3; ++g) dg[(it.r * 3 + g) * W + it.c] = bias[m][g];
  }
  __syncthreads();
  auto* d_bias = static_cast<scalar_t*>(p.d_bias);
  const int groups = gridDim.x / tiling.tiles;
  for (int i = thread; i < 3 * W; i += threads) {
    const int g = i / W, c = i % W, j = at.j0 + c;
    if (j >= S) continue;
    T total = T(0);
#pragma unroll
    for (int r = 0; r < R; ++r) total += dg[(r * 3 + g) * W + c];
    if (groups == 1) {
      d_bias[g * S + j] = scalar_t(total);
    } else {
      __stcg(ws.bias_sums + (int64_t{at.group} * 3 + g) * S + j, total);
    }
  }
  if (groups == 1 || !last_to_arrive(ws.tickets + at.tile, groups)) return;
  for (int i = thread; i < 3 * W; i += threads) {
    const int g = i / W, j = at.j0 + i % W;
    if (j >= S) continue;
    T total = T(0);
    for (int u = 0; u < groups; ++u) total += __ldcg(ws.bias_sums + (int64_t{u} * 3 + g) * S + j);
    d_bias[g * S + j] = scalar_t(total);
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
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);  // nullptr: zeros
  auto* d_h = static_cast<T*>(d_h_);
  auto* d_c = static_cast<T*>(d_c_);
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    scalar_t* z = gates + b * 3 * S + j;
    if (runs(p.lengths, b, t)) {
      const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j)) + d_h[i];
      const T c = c_prev != nullptr ? T(c_prev[i]) : T(0);
      const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, d_c[i], T(z[0]), T(z[S]), T(z[2 * S]), c);
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
cudaError_t launch_persistent(const SequenceParams& p, const Tiling& tiling, cudaStream_t stream) {
  auto kernel = kForward ? persistent_forward_kernel<scalar_t, R> : persistent_backward_kernel<scalar_t, R>;
  if (const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(tiling.shared_bytes));
      error != cudaSuccess) {
    return error;
  }
  const int groups = static_cast<int>(ceil_div(p.batch, R));
  if (const WorkspaceSizes n = workspace_sizes(p, tiling, kForward); n.arrivals + n.tickets > 0) {
    int* counters = workspace<opmath_t<scalar_t>>(p, tiling, kForward).arrivals;
    if (const cudaError_t error = cudaMemsetAsync(counters, 0, sizeof(int) * (n.arrivals + n.tickets), stream);
        error != cudaSuccess) {
      return error;
    }
  }
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = tiling.tiles > 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(tiling.tiles * groups));
  config.blockDim = dim3(block_columns(p, tiling, kForward), tiling.slices);
  config.dynamicSmemBytes = tiling.shared_bytes;
  config.stream = stream;
  config.attrs = &cooperative;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, p, tiling);
}

// The tiling of a direction for the dtype at hand, and f(tag, tiling) with its scalar type's tag.
template <typename F>
void with_tiling(const SequenceParams& p, at::ScalarType dtype, bool forward, const char* name, F&& f) {
  dispatch(dtype, name, [&](auto tag) { f(tag, persistent_tiling<opmath_t<decltype(tag)>>(p, forward)); });
}

template <bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, at::ScalarType dtype, cudaStream_t stream) {
  if (p.batch == 0) {  // no rows: nothing to run, and a bias gradient of zeros
    const bool bias = !kForward && p.d_bias != nullptr;
    return bias ? cudaMemsetAsync(p.d_bias, 0, 3 * p.state * c10::elementSize(dtype), stream) : cudaSuccess;
  }
  cudaError_t error = cudaSuccess;
  const char* name = kForward ? "lltm_sequence_forward_cuda" : "lltm_sequence_backward_cuda";
  with_tiling(p, dtype, kForward, name, [&](auto tag, const Tiling& tiling) {
    using scalar_t = decltype(tag);
    switch (tiling.rows) {
      case 1: error = launch_persistent<scalar_t, 1, kForward>(p, tiling, stream); break;
      case 2: error = launch_persistent<scalar_t, 2, kForward>(p, tiling, stream); break;
      case 4: error = launch_persistent<scalar_t, 4, kForward>(p, tiling, stream); break;
      case kMaxRows: error = launch_persistent<scalar_t, kMaxRows, kForward>(p, tiling, stream); break;
      default: error = cudaErrorInvalidConfiguration;  // persistent_fits said no
    }
  });
  return error;
}

}  // namespace

bool persistent_fits(const SequenceParams& p, at::ScalarType dtype) {
  bool fits = true;
  for (const bool forward : {true, false}) {
    with_tiling(p, dtype, forward, "lltm_sequence_cuda", [&](auto, const Tiling& t) { fits = fits && t.rows > 0; });
  }
  return fits;
}

size_t persistent_workspace_bytes(const SequenceParams& p, at::ScalarType dtype, bool forward) {
  size_t bytes = 0;
  with_tiling(p, dtype, forward, "lltm_sequence_cuda", [&](auto tag, const Tiling& t) {
    bytes = workspace_bytes<opmath_t<decltype(tag)>>(p, t, forward);
  });
  return bytes;
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
