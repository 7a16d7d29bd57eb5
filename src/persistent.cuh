// The persistent sequence kernels' shared pieces: their tiling of the batch and the state, their
// workspace, the device helpers both directions use, and their launch. Each direction's kernel is
// in persistent_forward.cuh or persistent_backward.cuh, instantiated per dtype in a file of its own
// (persistent_<direction>_<dtype>.cu) so that a build compiles them side by side and an edit of one
// recompiles one; sequence_persistent.cu dispatches on the dtype.
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
// column, and each column's owner adds up the tiles' shares. (The tensor-core kernels' groups may
// instead run as thread-block clusters on sm_90 and exchange through each other's shared memory:
// tensor_core.cuh.)
#pragma once

#include "sequence_kernels.cuh"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace lltm::cuda {

// A persistent block has `columns` x `slices` threads: slices split each step's reduction over
// W_h, and every thread then updates at most kItems (row, column) cells of the state. In the
// forward, `lanes` threads of a warp may share a column (the warp then covers 32 / lanes columns):
// they split the slice's part of the reduction and add it up through shuffles, so that a narrow
// tile still fills the block with warps where the slices' partial sums would not fit.
constexpr int kPersistentThreads = 512;
constexpr int kMaxRows = 8;
constexpr int kMaxSlices = 16;
constexpr int kMaxLanes = 4;
constexpr int kItems = 2;

// Where another launch of the same sizes runs beside this one (SequenceParams::copies) and W_h is
// split over tiles, a group may take up to kPairedRows rows, so that the two launches fit on the
// device together where groups of kMaxRows would fill it alone. Such a group keeps no partial sums
// of its own (paired_rows): the forward's share h's shared memory, which the product has read by
// then, and the backward's one slice stores its sums straight to the exchange. The forward's block
// then has kPairedForwardThreads threads, each with 3 x 16 sums of the product, which 128 registers
// a thread (512 threads) do not hold beside the rest.
constexpr int kPairedRows = 16;
constexpr int kPairedForwardThreads = 256;

// The storage types whose kernels come in groups of kPairedRows: float alone, whose kernels fill
// the GPU at a bidirectional layer's common sizes (the half types run on tensor cores there), as
// each instantiation adds to the build.
template <typename scalar_t>
constexpr bool has_paired_rows = std::is_same_v<scalar_t, float>;

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
  int lanes = 1;  // the forward's threads a column within a warp
  int items = kItems;  // the most cells of the state a thread updates (the tensor-core kernels
                       // take more where their blocks' rows and width need it)
  bool partials_over_operand = false;  // the tensor-core forward's partial sums share the shared
                                       // memory of the product's operand (where both do not fit)
  bool cluster = false;  // the blocks of a group form a thread-block cluster: they exchange through
                         // each other's shared memory and wait at the cluster's barrier (sm_90)
  bool held = false;  // the tensor-core forward's warps hold their fragments of W_h in registers
                      // (tensor_core.cuh)
  int gather_blocks = 1;  // where the group exchanges through L2: its consecutive blocks that share
                          // the tensor-core forward's gather of h as a cluster (sm_90; tensor_core.cuh)
  bool streamed = false;  // the tensor-core forward that streams h through shared memory a chunk at a
                          // time (tensor_core_streamed.cuh)
  size_t shared_bytes = 0;
};

// Whether `copies` launches of tiling t (its rows, tiles and cluster set) are all resident at
// once, a block a multiprocessor: as clusters, every group's cluster; otherwise every block (and,
// where blocks share the gather, as clusters of them).
inline bool resident(const SequenceParams& p, const Tiling& t, int64_t copies = 1) {
  const int64_t groups = ceil_div(p.batch, t.rows), blocks = copies * t.tiles * groups;
  if (t.cluster) return copies * groups <= p.resident_clusters[std::min(t.tiles, kMaxCluster)];
  return blocks <= p.multiprocessors &&
         (t.gather_blocks == 1 || blocks / t.gather_blocks <= p.resident_clusters[t.gather_blocks]);
}

// The workspace, in the math type: where tiles > 1 and the group is no cluster, what the blocks of
// a group exchange (the forward's h, 2 x batch x state; the backward's shares of d_h, 2 x tiles x
// batch x state; two halves that alternate with the step's parity); where the backward sums d_bias
// over more than one group of rows, each group's sums (groups x 3 x state). Then counters that
// start at zero: an arrival counter per group (where it exchanges), then a ticket per tile (the
// d_bias sums).
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

// Whether a params type is the forward's: the direction of its kernels and workspace.
template <typename Params>
constexpr bool is_forward = std::is_same_v<Params, ForwardParams>;

LLTM_HD bool sums_bias(const ForwardParams&) { return false; }
LLTM_HD bool sums_bias(const BackwardParams& p) { return p.d_bias != nullptr; }

template <typename Params>
LLTM_HD WorkspaceSizes workspace_sizes(const Params& p, const Tiling& t) {
  constexpr bool forward = is_forward<Params>;
  if (t.rows == 0) return {};  // the tiling does not fit: no launch
  const int64_t groups = ceil_div(p.batch, t.rows);
  const bool split = t.tiles > 1 && !t.cluster, bias = sums_bias(p) && groups > 1;
  return {split ? 2 * (forward ? 1 : t.tiles) * p.batch * p.state : 0, bias ? groups * 3 * p.state : 0,
          split ? groups : 0, bias ? t.tiles : 0};
}

template <typename T, typename Params>
LLTM_HD Workspace<T> workspace(const Params& p, const Tiling& t) {
  const WorkspaceSizes n = workspace_sizes(p, t);
  T* exchange = static_cast<T*>(p.workspace);
  int* arrivals = reinterpret_cast<int*>(exchange + n.exchange + n.bias_sums);
  return {exchange, exchange + n.exchange, arrivals, arrivals + n.arrivals};
}

template <typename T, typename Params>
inline size_t workspace_bytes(const Params& p, const Tiling& t) {
  const WorkspaceSizes n = workspace_sizes(p, t);
  return sizeof(T) * (n.exchange + n.bias_sums) + sizeof(int) * (n.arrivals + n.tickets);
}

// The threads of a slice: a column each (the backward: of the state; the forward: of the tile,
// `lanes` each), in whole warps.
inline int block_columns(const SequenceParams& p, const Tiling& t, bool forward) {
  if (!forward) return static_cast<int>(round_up(p.state, 32));
  return static_cast<int>(round_up(t.width, 32 / t.lanes)) * t.lanes;
}

// Whether a group of `rows` keeps its partial sums as kPairedRows says (the kernels' template R).
LLTM_HD constexpr bool paired_rows(int rows) { return rows > kMaxRows; }

// The most threads a block of `rows` has.
LLTM_HD constexpr int most_threads(int rows, bool forward) {
  return forward && paired_rows(rows) ? kPairedForwardThreads : kPersistentThreads;
}

// Whether the forward of `rows` rows keeps h by packs (operand_pack) rather than in rows, each
// row's packs a run: the backward's gate gradients always are.
LLTM_HD constexpr bool h_by_packs(int rows) { return paired_rows(rows); }

// The rows that the product's operand of `rows` rows takes in shared memory (operand_packs' pack
// of padding counts as one where by packs).
LLTM_HD constexpr int operand_rows(int rows, bool forward) { return forward && !h_by_packs(rows) ? rows : rows + 1; }

template <typename T>
inline size_t shared_bytes(const SequenceParams& p, const Tiling& t, bool forward) {
  const int64_t S = p.state, padded = round_up(S, 4), R = t.rows, W = t.width;
  const int64_t partials = paired_rows(t.rows) ? 0 : t.slices * R * (forward ? 3 * W : S);
  const int64_t rows = operand_rows(t.rows, forward);
  return sizeof(T) * ((forward ? 3 * W * padded + rows * padded : 3 * W * S + rows * 3 * W) + partials);
}

// The CUDA-core product's operand of R rows (the backward's gate gradients, the paired forward's
// h) in shared memory: packs of 4 along the reduction, the R rows' packs at q side by side, then a
// pack of padding. The product then reads row r's pack at an offset known when compiled (no
// address arithmetic a row, where the kernels issue an instruction a cycle), and the lanes of a
// warp at adjacent q read distinct banks. The forwards of kMaxRows rows or fewer keep h in rows
// (h_by_packs): by packs they measure slower (benchmarks/NOTES.md, "Session 38").
// operand_packs(n): the packs that n packs a row take.
template <int R>
LLTM_HD constexpr int64_t operand_packs(int64_t n) {
  return n * (R + 1);
}

template <int R>
__device__ __forceinline__ int operand_pack(int q, int r) {
  return q * (R + 1) + r;
}

// Element k of row r of such an operand.
template <int R, typename T>
__device__ __forceinline__ T& operand_element(Pack<T, 4>* operand, int r, int k) {
  return operand[operand_pack<R>(k / 4, r)].v[k % 4];
}

// Whether a tiling of more than kMaxRows rows keeps its partial sums where paired_rows says: the
// forward's in h's rows (every tile exchanges h through L2, so no block writes its own h there
// mid-step), at a state that is a multiple of 4, so that h has no padding, which the gather
// does not write: partial sums left there would meet W_h's zeros, and 0 x NaN is NaN (another
// row's NaN would spread); the backward's as one slice.
inline bool partials_placed(const SequenceParams& p, const Tiling& t, bool forward) {
  if (!paired_rows(t.rows)) return true;
  return t.tiles > 1 && (forward ? p.state % 4 == 0 && t.slices * 3 * t.width <= p.state : t.slices == 1);
}

// The fewest tiles whose rows of W_h fit in a block's shared memory (more tiles exchange more
// each step); then the fewest rows that give each multiprocessor at most one block of the
// p.copies launches (fewer rows make more blocks, and with tiles > 1 every block must be resident
// at once; with one tile, fewer rows where those do not fit); then the most threads: for each
// count of lanes (the forward's), the most slices that fit, the fewest lanes where the threads are
// as many. None (rows == 0) where no tiling fits.
template <typename scalar_t>
inline Tiling persistent_tiling(const SequenceParams& p, bool forward) {
  using T = opmath_t<scalar_t>;
  if (round_up(p.state, 32) > kPersistentThreads) return {};
  for (int64_t nominal = 1; nominal <= p.multiprocessors && (nominal == 1 || p.cooperative); nominal *= 2) {
    Tiling t;
    t.width = static_cast<int>(round_up(ceil_div(p.state, nominal), 4));
    t.tiles = static_cast<int>(ceil_div(p.state, t.width));
    auto blocks = [&](int rows) { return p.copies * t.tiles * ceil_div(p.batch, rows); };
    const int most_rows = has_paired_rows<scalar_t> && p.copies > 1 && t.tiles > 1 ? kPairedRows : kMaxRows;
    int rows = 1;
    while (rows < most_rows && blocks(rows) > p.multiprocessors) rows *= 2;
    for (; rows >= 1 && (t.tiles == 1 || blocks(rows) <= p.multiprocessors); rows /= 2) {
      t.rows = rows;
      Tiling best;
      int best_threads = 0;
      for (t.lanes = 1; t.lanes <= (forward ? kMaxLanes : 1); t.lanes *= 2) {
        const int columns = block_columns(p, t, forward);
        for (t.slices = std::min(kMaxSlices, most_threads(rows, forward) / columns); t.slices >= 1; --t.slices) {
          t.shared_bytes = shared_bytes<T>(p, t, forward);
          if (t.shared_bytes <= p.shared_memory_per_block && rows * t.width <= kItems * columns * t.slices &&
              partials_placed(p, t, forward)) {
            if (columns * t.slices > best_threads) {
              best = t;
              best_threads = columns * t.slices;
            }
            break;
          }
        }
      }
      if (best.rows > 0) return best;
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

// Arrives at the group's counter (tiles arrivals a step): what every thread of the block wrote to
// global memory before it is published to the group. The block's barrier orders its threads'
// writes before thread 0's arrival, whose release (not a sequentially consistent __threadfence,
// which waits longer) publishes them; writes after the arrival do not hold it up.
__device__ __forceinline__ void arrive(int* arrivals) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(arrivals) : "memory");
  }
}

// The group's counter, read with an acquire: once it shows every arrival of a step, what their
// blocks wrote before arriving is visible to this thread.
__device__ __forceinline__ int load_acquire(const int* arrivals) {
  int seen;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(arrivals) : "memory");
  return seen;
}

// Waits until the group's counter reaches `target`: what every block of the group wrote before
// arriving is then visible to every thread of this one (the acquiring polls order what follows
// after the last arrival).
__device__ __forceinline__ void wait_for(int* arrivals, int target) {
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    while (load_acquire(arrivals) < target) {
    }
  }
  __syncthreads();
}

__device__ __forceinline__ void arrive_and_wait(int* arrivals, int target) {
  arrive(arrivals);
  wait_for(arrivals, target);
}

// This thread's index in its (2-D) block, and the block's number of threads.
__device__ __forceinline__ int thread_rank() { return threadIdx.y * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int block_threads() { return blockDim.x * blockDim.y; }

// Element i = first + n * step (n = 0, 1, ...) of a row-major range `columns` wide, as its row and
// column, advanced by a step without a division: a loop's element from a division by a runtime
// width costs ~20 dependent instructions, where the step's own row and column are worked out once
// (made before a kernel's step loop and copied at each step).
struct RowWalk {
  int row, column;
  int row_step, column_step, columns;
  LLTM_HD RowWalk(int first, int step, int width)
      : row(first / width), column(first % width), row_step(step / width), column_step(step % width),
        columns(width) {}
  LLTM_HD void advance() {
    row += row_step;
    column += column_step;
    if (column >= columns) {
      column -= columns;
      ++row;
    }
  }
};

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

// Element (b, j) of item `it` in a (batch, S) tensor of the storage type, in float: zero where
// the item lies outside the state or the tensor is not given (an optional initial state).
template <typename T, typename scalar_t>
__device__ __forceinline__ T item_value(const scalar_t* t, const Item& it, int S) {
  return it.valid && t != nullptr ? T(t[it.b * S + it.j]) : T(0);
}

// Each item's pair of final values, first[m] and second[m] in float, stored in the storage type
// at its (row, column) of two (batch, S) tensors: h_n and c_n after a forward, the gradients of h0
// and c0 after a backward.
template <typename scalar_t, int ITEMS, typename T>
__device__ __forceinline__ void store_items(const Item (&items)[ITEMS], const T (&first)[ITEMS],
                                            const T (&second)[ITEMS], void* first_out, void* second_out, int S) {
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) {
    const Item& it = items[m];
    if (!it.valid) continue;
    static_cast<scalar_t*>(first_out)[it.b * S + it.j] = scalar_t(first[m]);
    static_cast<scalar_t*>(second_out)[it.b * S + it.j] = scalar_t(second[m]);
  }
}

// Elements [0, count) of a run in global memory that other blocks wrote, from L2 (not this
// multiprocessor's L1, which may hold an older copy), each element v at i given to put(i, v);
// zeros from `written` on (rows past the batch). The loads of a round are all in flight together:
// up to 8, or 4 of 16 bytes (registers the product needs).
template <typename T, typename Put>
__device__ __forceinline__ void gather_run(Put&& put, const T* from, int count, int written) {
  constexpr int kInFlight = sizeof(T) >= 16 ? 4 : 8;
  const int thread = thread_rank(), threads = block_threads();
  for (int first = thread; first < count; first += kInFlight * threads) {
    T v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads;
      v[u] = i < written ? __ldcg(from + i) : T{};
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads;
      if (i < count) put(i, v[u]);
    }
  }
}

// The forward's gather of rows [b0, b0 + R) of h's exchange, a (batch, S) matrix, into the
// operand (row stride ld elements, rows 16-byte aligned where S is a multiple of 16 bytes), zeros
// past the batch: 16 bytes a load where the state allows it, an element at a time otherwise, so
// that a step's gather is one round of loads from L2, or few. The group's rows are one run in the
// exchange; where the operand's rows are one run too (ld == S), so is the copy, and no element's
// place needs a division by the row's length.
template <int R, typename T>
__device__ __forceinline__ void gather_operand(T* operand, int ld, const T* from, int S, int64_t b0, int64_t B) {
  constexpr int kPerLoad = 16 / sizeof(T);
  const int rows = static_cast<int>(B - b0 < R ? B - b0 : R);
  from += b0 * S;
  if (S % kPerLoad != 0) {
    gather_run([&](int i, T v) { operand[i / S * ld + i % S] = v; }, from, R * S, rows * S);
    return;
  }
  const int chunks = S / kPerLoad;
  auto* to = reinterpret_cast<uint4*>(operand);
  const auto* run = reinterpret_cast<const uint4*>(from);
  if (ld == S) {
    gather_run([&](int i, uint4 v) { to[i] = v; }, run, R * chunks, rows * chunks);
  } else {
    gather_run([&](int i, uint4 v) { *reinterpret_cast<uint4*>(operand + i / chunks * ld + i % chunks * kPerLoad) = v; },
               run, R * chunks, rows * chunks);
  }
}

// Where a thread's 16-byte loads of gather_packs fall: the same at every step, so the kernel
// computes them once, before its step loop (the divisions by the runtime count of chunks would
// otherwise wait after each step's barrier). Where the block's threads cover a row's chunks of 16
// bytes, thread t takes chunk t % chunks of rows t / chunks + passes k, passes = threads / chunks;
// elsewhere (passes 0) gather_operand's order, an element at a time.
struct PackGather {
  int chunks, passes, chunk, first;
};

template <typename T>
__device__ __forceinline__ PackGather pack_gather(int S) {
  constexpr int kPerLoad = 16 / sizeof(T);
  const int thread = thread_rank(), chunks = S / kPerLoad;
  const int passes = S % kPerLoad == 0 ? block_threads() / chunks : 0;
  return {chunks, passes, passes > 0 ? thread % chunks : 0, passes > 0 ? thread / chunks : 0};
}

// The paired forward's gather (as gather_operand's) into the CUDA-core product's operand
// (operand_pack), its 16-byte loads along the exchange's rows as the flat copy's, where `g`
// (pack_gather) places them. Float or double, whose packs one load fills, or half of.
template <int R, typename T>
__device__ __forceinline__ void gather_packs(Pack<T, 4>* operand, const T* from, int S, int64_t b0, int64_t B,
                                             const PackGather& g) {
  constexpr int kPerLoad = 16 / sizeof(T), kInFlight = 4;
  static_assert(kPerLoad <= 4, "a 16-byte load fits in a pack");
  const int rows = static_cast<int>(B - b0 < R ? B - b0 : R);
  from += b0 * S;
  if (g.passes == 0) {
    gather_run([&](int i, T v) { operand_element<R>(operand, i / S, i % S) = v; }, from, R * S, rows * S);
    return;
  }
  const auto* column = reinterpret_cast<const uint4*>(from) + g.chunk;  // row r's chunk: column[r * chunks]
  for (int first = g.first; first < R && thread_rank() < g.passes * g.chunks; first += kInFlight * g.passes) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int r = first + u * g.passes;
      v[u] = r < rows ? __ldcg(column + r * g.chunks) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int r = first + u * g.passes;
      if (r < R) *reinterpret_cast<uint4*>(&operand_element<R>(operand, r, g.chunk * kPerLoad)) = v[u];
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

// The launch attribute that groups a 1-D grid's blocks into clusters of n consecutive blocks.
inline cudaLaunchAttribute cluster_dimension(int n) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(n);
  attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  return attribute;
}

// Launches one instantiation of a persistent kernel, `kernel` of R rows per group, with `block`
// threads a block, after zeroing its workspace's counters. Where the blocks of a group wait for
// each other at counters in L2, every block must be resident at once (where they share a gather,
// as clusters); where they form a cluster, the clusters run independently, and the device must
// hold one. Where it cannot (a shared GPU, fewer multiprocessors than p.multiprocessors), nothing
// is launched and the answer is cudaErrorCooperativeLaunchTooLarge, for the caller to take the
// per-step path.
template <typename scalar_t, int R, typename Params>
cudaError_t launch_persistent_once(void (*kernel)(Params, Tiling), const Params& p, const Tiling& tiling,
                                   cudaStream_t stream, dim3 block) {
  if (const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(tiling.shared_bytes));
      error != cudaSuccess) {
    return error;
  }
  if (tiling.cluster && tiling.tiles > 8) {  // past the portable cluster size
    if (const cudaError_t error = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        error != cudaSuccess) {
      return error;
    }
  }
  const int groups = static_cast<int>(ceil_div(p.batch, R)), blocks = tiling.tiles * groups;
  // Clusters of a group's blocks (tiling.cluster), or of those that share a gather, which then
  // launch cooperatively all the same
  const int cluster = tiling.cluster ? tiling.tiles : tiling.gather_blocks;
  cudaLaunchAttribute attributes[2] = {{}, cluster_dimension(cluster)};
  attributes[0].id = cudaLaunchAttributeCooperative;
  attributes[0].val.cooperative = tiling.tiles > 1 && !tiling.cluster;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = block;
  config.dynamicSmemBytes = tiling.shared_bytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = cluster > 1 ? 2 : 1;
  // A launch refused for its size (a GPU shared through MPS, or partitioned in a way the checks
  // below do not see: the cooperative launch's refusal, or the cluster's) is answered
  // cudaErrorCooperativeLaunchTooLarge, for the caller to run the per-step path, and the runtime's
  // record of it goes.
  const auto refused = [&](cudaError_t error) {
    if (error != cudaErrorCooperativeLaunchTooLarge && !(cluster > 1 && error == cudaErrorInvalidClusterSize)) {
      return error;
    }
    (void)cudaGetLastError();
    return cudaErrorCooperativeLaunchTooLarge;
  };
  if (cluster > 1) {  // one cluster resident at a time, or (cooperative) all of them
    cudaLaunchConfig_t clusters_alone = config;
    clusters_alone.attrs = attributes + 1;
    clusters_alone.numAttrs = 1;
    int clusters = 0;
    if (const cudaError_t error = cudaOccupancyMaxActiveClusters(&clusters, kernel, &clusters_alone);
        error != cudaSuccess) {
      return refused(error);
    }
    if (clusters < (attributes[0].val.cooperative ? blocks / cluster : 1)) return cudaErrorCooperativeLaunchTooLarge;
  } else if (attributes[0].val.cooperative) {
    int device = 0, multiprocessors = 0, per_multiprocessor = 0;
    if (cudaError_t error = cudaGetDevice(&device); error != cudaSuccess) return error;
    if (cudaError_t error = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
        error != cudaSuccess) {
      return error;
    }
    if (cudaError_t error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_multiprocessor, kernel, static_cast<int>(block.x * block.y * block.z), tiling.shared_bytes);
        error != cudaSuccess) {
      return error;
    }
    if (per_multiprocessor * multiprocessors < blocks) return cudaErrorCooperativeLaunchTooLarge;
  }
  if (const WorkspaceSizes n = workspace_sizes(p, tiling); n.arrivals + n.tickets > 0) {
    int* counters = workspace<opmath_t<scalar_t>>(p, tiling).arrivals;
    if (const cudaError_t error = cudaMemsetAsync(counters, 0, sizeof(int) * (n.arrivals + n.tickets), stream);
        error != cudaSuccess) {
      return error;
    }
  }
  return refused(cudaLaunchKernelEx(&config, kernel, p, tiling));
}

// launch_persistent_once, and where the clusters of a shared gather do not fit, the same tiling
// without them (its blocks alone may: a GPU shared through MPS).
template <typename scalar_t, int R, typename Params>
cudaError_t launch_persistent(void (*kernel)(Params, Tiling), const Params& p, const Tiling& tiling,
                              cudaStream_t stream, dim3 block) {
  const cudaError_t error = launch_persistent_once<scalar_t, R>(kernel, p, tiling, stream, block);
  if (error != cudaErrorCooperativeLaunchTooLarge || tiling.gather_blocks == 1) return error;
  Tiling alone = tiling;
  alone.gather_blocks = 1;
  return launch_persistent_once<scalar_t, R>(kernel, p, alone, stream, block);
}

// f(std::integral_constant<int, R>{}) for the group of R = rows rows that the CUDA-core kernels
// come in (kPairedRows where has_paired_rows), both directions' dispatch from a tiling to its
// kernel; cudaErrorInvalidConfiguration for any other count (persistent_fits said no).
template <typename scalar_t, typename F>
cudaError_t with_rows(int rows, F&& f) {
  if constexpr (has_paired_rows<scalar_t>) {
    if (rows == kPairedRows) return f(std::integral_constant<int, kPairedRows>{});
  }
  switch (rows) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case kMaxRows: return f(std::integral_constant<int, kMaxRows>{});
    default: return cudaErrorInvalidConfiguration;
  }
}

template <typename scalar_t>
cudaError_t launch_persistent_typed(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream);
template <typename scalar_t>
cudaError_t launch_persistent_typed(const BackwardParams& p, const Tiling& tiling, cudaStream_t stream);

// The CUDA-core kernels' block: `columns` x `slices` threads.
inline dim3 persistent_block(const SequenceParams& p, const Tiling& t, bool forward) {
  return dim3(block_columns(p, t, forward), t.slices);
}

}  // namespace lltm::cuda
