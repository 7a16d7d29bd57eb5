// The persistent sequence kernels on tensor cores, for half and bfloat16 storage: their tiling,
// their fragments and the instructions that load and multiply them. The kernels are in
// tensor_core_forward.cuh and tensor_core_backward.cuh, instantiated per dtype in files of their
// own (tensor_core_<direction>_<dtype>.cu, ..._<dtype>_wide.cu for four cells a thread,
// ..._<dtype>_cluster.cu for clusters and tensor_core_forward_<dtype>_held.cu for held fragments);
// sequence_persistent.cu chooses them over the CUDA-core kernels of persistent_*.cuh where they fit.
//
// The work is split as in persistent.cuh (a block runs every step of one group of R batch rows
// for one tile of `width` state columns, the blocks of a group exchanging a vector a step through
// L2 where there are several tiles), with these differences:
// - the tile's rows of W_h stay in shared memory in the storage type (half the bytes of the
//   CUDA-core kernels' float copy), rows of the tile's 3 * width gate rows, each along the state
//   k, padded to a multiple of 16 and then by 8 more elements, which puts the 8 rows that one
//   ldmatrix phase reads in 8 different 16-byte bank groups;
// - each step's product runs on mma.sync.m16n8k16 (float sums): the forward's z (3 width x R) =
//   W_tile (3 width x S) h^T (S x R), the backward's share of d_h^T (S x R) = W_tile^T (S x 3 width)
//   d_gates^T (3 width x R). The product's operand of R rows (h, the gate gradients) is rounded to
//   the storage type, as torch's half-type matmul, an eager loop and cuDNN round it; the cell
//   state, the sums and the carried gradients stay in float.
// - a block has kTensorWarps warps; its work units are (16-row tile of the product's M, split of
//   its reduction K): the splits' partial sums meet in shared memory where there are several.
// - on sm_90, where a group has at most kMaxCluster tiles, its blocks may form a thread-block
//   cluster (Tiling::cluster): each block then writes what the others need straight into their
//   shared memory (the forward its columns of the new h into their operands, the backward each
//   owner's columns of its share of d_h into the owner's inbox), in buffers that alternate with
//   the step's parity, with stores that a receiving block's mbarrier counts: each block waits for
//   its own bytes, not at a barrier of the cluster; the clusters of different groups never wait
//   for each other, so no launch needs them all resident.
// - in a cluster's forward of 8 rows, each warp may hold its fragments of the tile's W_h in
//   registers for the whole sequence (Tiling::held): the step's product then reads only h from
//   shared memory, where the fragments' 512 bytes each had been most of what it read.
// - on sm_90, where the group exchanges through L2, the forward's consecutive blocks of a group may
//   share the gather of h as a cluster of 2 or 4 (Tiling::gather_blocks): each copies its share
//   of the rows into all of their operands at once (one read of L2 for them all), and the launch
//   is cooperative as without them.
#pragma once

#include "persistent.cuh"

namespace lltm::cuda {

constexpr int kTensorWarps = 16;
constexpr int kTensorThreads = 32 * kTensorWarps;

// Whether the storage type runs the tensor-core kernels (the half types).
template <typename scalar_t>
constexpr bool has_tensor_cores = std::is_same_v<scalar_t, bfloat16_t> || std::is_same_v<scalar_t, half_t>;

// Row strides of the shared-memory operands, in elements: the state padded to 16 (the mma's k)
// and 8 more (see above); the partial sums' rows padded to 4 past a multiple of 32 floats, so
// that a fragment's stores (8 consecutive rows m for 4 columns n two apart) hit 32 banks.
LLTM_HD int64_t tensor_state_padded(int64_t state) { return round_up(state, 16); }
LLTM_HD int64_t tensor_operand_ld(int64_t padded) { return padded + 8; }
LLTM_HD int64_t tensor_partial_ld(int64_t m) { return round_up(m, 32) + 4; }

// The product of a direction: M x K of the tile's W_h (forward: 3 width gate rows by the state;
// backward: the state by the gate rows), in 16 x 16 fragments.
struct TensorProduct {
  int64_t m_tiles, k_tiles;
};

LLTM_HD TensorProduct tensor_product(const SequenceParams& p, const Tiling& t, bool forward) {
  const int64_t gates = 3 * t.width / 16, state = tensor_state_padded(p.state) / 16;
  return forward ? TensorProduct{gates, state} : TensorProduct{state, gates};
}

// Whether a block's partial sums go through shared memory: always in the forward (each item adds
// its sums up from there); in the backward where the reduction is split, where one tile holds
// every column (each item then adds its d_h up from there), or where the group is a cluster (the
// shares go to their owners from there, 16 bytes a store). Otherwise each block's share of d_h
// goes from the fragments' registers to the exchange.
LLTM_HD bool tensor_partials_in_shared(const Tiling& t, bool forward) {
  return forward || t.tiles == 1 || t.slices > 1 || t.cluster;
}

// The backward's inbox of a cluster's block, in floats: [2][tiles][R][width], each tile's share of
// d_h of the block's columns, for two steps.
LLTM_HD int64_t tensor_inbox_size(const Tiling& t) {
  return t.cluster ? 2 * int64_t{t.tiles} * t.rows * t.width : 0;
}

// Shared memory: the tile's W_h (in the backward also the float scratch of its d_bias sums at
// the end), the product's operand of R rows in the storage type (two in a cluster's forward), the
// partial sums in float (in the forward, where t.partials_over_operand, in the operand's place),
// a cluster's backward inbox, and the mbarriers (a cluster's, or the forward's bulk gather's).
inline size_t tensor_shared_bytes(const SequenceParams& p, const Tiling& t, bool forward) {
  const int64_t padded = tensor_state_padded(p.state), ld = tensor_operand_ld(padded), M = 3 * t.width, R = t.rows;
  // A cluster's two mbarriers, or the forward's gather's one (the last 16 bytes)
  const int64_t w = 2 * M * ld, received = t.cluster || (forward && t.tiles > 1) ? 16 : 0;
  if (forward) {
    const int64_t operand = 2 * R * ld * (t.cluster ? 2 : 1), partials = 4 * t.slices * R * tensor_partial_ld(M);
    return w + (t.partials_over_operand ? std::max(operand, partials) : operand + partials) + received;
  }
  const int64_t partials = tensor_partials_in_shared(t, false) ? 4 * t.slices * R * tensor_partial_ld(padded) : 0;
  return std::max(w, 4 * R * M) + 2 * R * tensor_operand_ld(M) + partials + 4 * tensor_inbox_size(t) + received;
}

// A rough cost of a step in cycles, to choose between tilings: the shared-memory reads of the
// product's fragments (an A fragment of 512 bytes and R / 8 B fragments of 256 each, at
// 128 bytes a cycle), plus the longest warp's chain of fragments (about 16 cycles an mma, two
// chains in flight: a few warps alone do not keep the reads at that rate, so the two add up rather
// than overlap), plus, with several tiles, the exchange (through L2: a barrier, about 1 us, and the
// gather of R rows of h; in a cluster about 0.5 us, the stores into the other blocks and the
// wait for theirs, which ranks the tilings measured in benchmarks/NOTES.md "Session 18" as they
// ran with the cluster's barrier; not refitted since the mbarriers of "Session 23"), plus the
// items' sums of the splits' partials (about 8 cycles each).
inline int64_t tensor_step_cycles(const SequenceParams& p, const Tiling& t, bool forward) {
  const TensorProduct f = tensor_product(p, t, forward);
  const int64_t n = t.rows / 8;
  const int64_t reads = f.m_tiles * f.k_tiles * ((t.held ? 0 : 512) + 256 * n) / 128;
  const int64_t chain =
      ceil_div(f.m_tiles * t.slices, kTensorWarps) * ceil_div(f.k_tiles, t.slices) * n * 16;
  const int64_t exchange = t.tiles == 1 ? 0 : t.cluster ? 1000 : 2000 + t.rows * p.state * (forward ? 2 : 4) / 32;
  const int64_t sums = tensor_partials_in_shared(t, forward)
                           ? t.slices * (forward ? 3 : 1) * ceil_div(t.rows * t.width, kTensorThreads) * 8
                           : 0;
  const int64_t overlay = t.partials_over_operand ? 200 : 0;  // one more block barrier
  return reads + chain + exchange + sums + overlay;
}

constexpr int kTensorMaxRows = 32;
constexpr int kTensorMaxItems = 4;

// The forward's fragments of W_h held in registers (Tiling::held): a warp's units, at most
// kHeldRounds of them, each a split of kHeldSplit k tiles, so that the loops over them unroll and
// the fragments (kHeldRounds * kHeldSplit of 4 registers) stay in registers for the whole
// sequence; the product then reads only h from shared memory. For groups of 8 rows (one N tile,
// whose sums take few registers) of a cell a thread, in clusters (without them the kernel's L2
// exchange leaves too few registers: it spilled), where the tile's fragments fit: at most 192 (a
// tile of 32 columns of a state of 512).
constexpr int kHeldSplit = 4;
constexpr int kHeldRounds = 3;

inline bool held_fits(const TensorProduct& f, const Tiling& t) {
  return t.cluster && t.rows == 8 && t.rows * t.width <= kTensorThreads &&
         f.m_tiles * ceil_div(f.k_tiles, kHeldSplit) <= kHeldRounds * kTensorWarps;
}

// Tiling t (its width, tiles, rows and cluster set) with the items a thread that its rows and
// width need, and the splits of the reduction of least rough cost that fit in shared memory (the
// forward's partial sums over its operand where nothing else fits and the group is no cluster,
// whose second operand would be overwritten); rows == 0 where none fits.
inline Tiling tensor_core_slices(const SequenceParams& p, Tiling t, bool forward) {
  t.items = t.rows * t.width > kItems * kTensorThreads ? kTensorMaxItems : kItems;
  if (t.rows > kTensorMaxRows || t.rows * t.width > t.items * kTensorThreads) return {};
  if (t.items > kItems && t.rows < kTensorMaxRows) return {};  // instantiated at 32 rows only
  const TensorProduct f = tensor_product(p, t, forward);
  int64_t chosen_cost = 0;
  Tiling chosen;
  for (t.slices = 1; t.slices <= f.k_tiles && t.slices <= kTensorWarps; ++t.slices) {
    t.partials_over_operand = false;
    t.shared_bytes = tensor_shared_bytes(p, t, forward);
    if (t.shared_bytes > p.shared_memory_per_block && forward && t.tiles > 1 && !t.cluster &&
        f.m_tiles * t.slices <= kTensorWarps) {
      t.partials_over_operand = true;
      t.shared_bytes = tensor_shared_bytes(p, t, forward);
    }
    if (t.shared_bytes > p.shared_memory_per_block) break;  // more splits only take more
    const int64_t cost = tensor_step_cycles(p, t, forward);
    if (chosen.rows == 0 || cost < chosen_cost) {
      chosen = t;
      chosen_cost = cost;
    }
  }
  if (forward && chosen.rows > 0 && held_fits(f, t)) {  // the same with its fragments held
    t.held = true;
    t.items = 1;
    t.partials_over_operand = false;
    t.slices = static_cast<int>(ceil_div(f.k_tiles, kHeldSplit));
    t.shared_bytes = tensor_shared_bytes(p, t, forward);
    if (t.shared_bytes <= p.shared_memory_per_block && tensor_step_cycles(p, t, forward) < chosen_cost) chosen = t;
  }
  return chosen;
}

// The blocks of a group that share the forward's gather through L2 (Tiling::gather_blocks): the
// most of 4 and 2 that divide its tiles and as whose clusters the device holds every block at
// once; 1 where the bulk copies do not run (rows of the state not whole 16 bytes) or the device
// runs no clusters (p.resident_clusters: zeros before sm_90, and past LLTM_JIT_CLUSTERS). The
// rough cost does not count it: it halves or quarters each block's reads of L2, not their wait.
inline int tensor_gather_blocks(const SequenceParams& p, const Tiling& t) {
  if (t.cluster || t.tiles == 1 || p.state % 8 != 0) return 1;
  const int64_t blocks = ceil_div(p.batch, t.rows) * t.tiles;
  for (const int n : {4, 2}) {
    if (t.tiles % n == 0 && p.resident_clusters[n] * n >= blocks) return n;
  }
  return 1;
}

// The tiling of the least rough cost among those that fit: widths a multiple of 16 (the mma's m
// in the forward, its k in the backward) for 1, 2, 4, ... tiles, each with its groups' blocks in
// clusters (where the device runs them) and not; for each the fewest rows (8, 16 or 32: the mma's
// n, once, twice or four times) that keep a group's blocks resident at once where there are
// several tiles (every group's, or as clusters every group's cluster), with 2 cells of the state a
// thread (4 at 32 rows: a batch past 16 rows a block at state 256), and the splits of the
// reduction that shorten the warps' chains most within the shared memory. A cluster takes no more
// rows than the same tiles without one: fewer groups of more rows, where fewer clusters than
// groups fit, leave multiprocessors idle (and measured slower). Where the forward's operand and
// partial sums do not both fit (a state near 1400 at 32 rows), the sums take the operand's place,
// at most one unit a warp (the kernel stores them once every warp has read the operand). The
// forward's chosen tiling then shares its gather where it can (tensor_gather_blocks). None
// (rows == 0) where nothing fits.
inline Tiling tensor_core_tiling(const SequenceParams& p, bool forward) {
  Tiling best;
  int64_t best_cost = 0;
  int previous_tiles = 0;
  for (int64_t nominal = 1; nominal <= p.multiprocessors; nominal *= 2) {
    Tiling t;
    t.width = static_cast<int>(round_up(ceil_div(p.state, nominal), 16));
    t.tiles = static_cast<int>(ceil_div(p.state, t.width));
    if (t.tiles == previous_tiles) continue;
    previous_tiles = t.tiles;
    int rows_alone = 0;  // without clusters
    for (const bool cluster : {false, true}) {
      t.cluster = cluster;
      for (t.rows = 8; t.rows <= kTensorMaxRows; t.rows *= 2) {
        if ((!cluster && t.tiles == 1) || resident(p, t)) break;
      }
      if (!cluster) rows_alone = t.rows;
      const bool allowed = cluster ? t.tiles > 1 && t.tiles <= kMaxCluster && t.rows <= rows_alone
                                   : t.tiles == 1 || p.cooperative;
      if (!allowed) continue;
      const Tiling chosen = tensor_core_slices(p, t, forward);
      if (chosen.rows == 0) continue;
      const int64_t cost = tensor_step_cycles(p, chosen, forward);
      if (best.rows == 0 || cost < best_cost) {
        best = chosen;
        best_cost = cost;
      }
    }
  }
  if (forward && best.rows > 0) best.gather_blocks = tensor_gather_blocks(p, best);
  return best;
}

// The streamed forward (tensor_core_streamed.cuh), where no tiling above fits: its sizes, shared
// memory and tiling.
constexpr int kStreamRows = 64;
constexpr int kStreamWidth = 32;
constexpr int kStreamWarps = 8;
constexpr int kStreamChunk = 64;  // columns of h a stage holds: 4 k tiles
constexpr int kStreamStages = 4;
constexpr int kStreamStageBytes = 2 * kStreamRows * kStreamChunk;
// What a warp hands its partner: 3 gates x 2 N tiles x 4 elements, a float a lane each
constexpr int kStreamHanded = 24;
static_assert(kStreamWarps * kStreamHanded * 32 * 4 <= kStreamStages * kStreamStageBytes,
              "the partner's sums fit over the stages");

// The state padded to whole chunks, and the shared memory: the tile's W_h (3 W rows of the padded
// state), then the stages.
LLTM_HD int64_t streamed_state_padded(int64_t state) { return round_up(state, 2 * kStreamChunk); }

inline size_t streamed_shared_bytes(const SequenceParams& p) {
  return 2 * 3 * kStreamWidth * streamed_state_padded(p.state) + kStreamStages * kStreamStageBytes;
}

// The streamed tiling, where it fits: states of whole 16-byte rows (the copies' unit) past one
// tile, a single launch (no pair: each fills the device), every block resident.
inline Tiling streamed_tiling(const SequenceParams& p) {
  Tiling t;
  t.width = kStreamWidth;
  t.tiles = static_cast<int>(ceil_div(p.state, kStreamWidth));
  t.rows = kStreamRows;
  t.slices = 1;
  t.streamed = true;
  t.shared_bytes = streamed_shared_bytes(p);
  const bool fits = p.state % 8 == 0 && t.tiles > 1 && p.cooperative && p.copies == 1 &&
                    t.shared_bytes <= p.shared_memory_per_block && resident(p, t);
  return fits ? t : Tiling{};
}

// Where the streamed forward runs unasked: where no persistent pair of kernels fits (the caller's
// test) and its blocks fill three quarters of the multiprocessors at a state of 1024 or more. It
// was measured at 256 x 1024 on an H100 (128 blocks: 0.92 of the per-step path's forward) and at
// 128 x 1024 (64 blocks: 1.10, a step as long with half the rows); other sizes are not measured
// (benchmarks/NOTES.md, "Session 42").
inline bool streamed_by_default(const SequenceParams& p, const Tiling& t) {
  const int64_t blocks = ceil_div(p.batch, t.rows) * t.tiles;
  return 4 * blocks >= 3 * int64_t{p.multiprocessors} && p.state >= 1024;
}

// The fragment instructions: ldmatrix from sm_75, the half-type mma's with float sums (bfloat16's
// in particular) from sm_80; SequenceParams::tensor_cores is false below it.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// A cluster's shared memory (sm_90): the address in block `rank`'s shared memory of what `local`
// is in this block's (every block of a kernel lays its shared memory out alike), and the cluster's
// barrier: what each thread of the cluster wrote before it, to its own block's shared memory or
// another's, is visible to every thread of the cluster after it.
__device__ __forceinline__ unsigned cluster_address(const void* local, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned address;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(address) : "r"(shared_address(local)), "r"(rank));
  return address;
#else
  __trap();  // the host plans clusters on sm_90 and later only
  return 0;
#endif
}

__device__ __forceinline__ void cluster_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __trap();
#endif
}

// A cluster's exchange without its barrier (sm_90): a block's mbarrier counts the bytes that the
// cluster's stores (st.async) bring into its shared memory, and a thread that waits for a phase of
// it sees them all once the phase is complete; no block waits for the others' arrivals, and no
// release waits for a block's outgoing stores. One arrival a phase, which also announces the bytes
// the phase brings; stores that land before it count down from zero.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// The phase's one arrival, which announces the bytes it brings. Its release is the block's (the
// instruction's default): only this block's threads wait at its mbarrier, and the bytes bring their
// own release (st.async's completion is a release at the cluster's scope; the copy engine's, the
// block's). A release at the cluster's scope compiles to a fence of the whole GPU (MEMBAR.ALL.GPU),
// which waits for the thread's global stores still in flight and held a cluster's exchange up by
// ~1000 cycles a step (benchmarks/NOTES.md, "Session 29").
__device__ __forceinline__ void mbarrier_expect(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

// The scope of the waits for a phase: the cluster's where the bytes come from the cluster's stores
// (store_async), the block's where they come from its own bulk copies (bulk_copy; as any consumer
// of the copy engine waits).
enum class Scope { kBlock, kCluster };

// Waits until the phase of `parity` (0 for the barrier's 1st, 3rd, ... phase) is complete.
template <Scope SCOPE>
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    if constexpr (SCOPE == Scope::kCluster) {
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, "
          "p; }"
          : "=r"(done)
          : "r"(shared_address(bar)), "r"(parity)
          : "memory");
    } else {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(shared_address(bar)), "r"(parity)
                   : "memory");
    }
  } while (done == 0);
#else
  __trap();
#endif
}

// 16 bytes stored at `address` (a cluster's shared memory, as cluster_address gives it), counted by
// the mbarrier at `bar` (likewise) of the block that receives them.
__device__ __forceinline__ void store_async(unsigned address, const uint4& v, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   address),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
               : "memory");
#else
  __trap();
#endif
}

// Whether the forward's gather through L2 of rows of the state S runs on the bulk copy engine
// (gather_bulk) rather than on loads (gather_operand): on sm_90, for rows of whole 16 bytes (as
// the copies move them). The copies leave the warps free while the rows come in; no size
// measured slower than with the loads (benchmarks/NOTES.md, "Sessions 24–25").
__device__ __forceinline__ bool bulk_gather(int S) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return S % 8 == 0;
#else
  return false;
#endif
}

// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory into this block's
// shared memory by the bulk copy engine, counted by this block's mbarrier at `bar`.
__device__ __forceinline__ void bulk_copy(void* to, const void* from, unsigned bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_address(to)),
               "l"(from), "r"(bytes), "r"(shared_address(bar))
               : "memory");
#else
  __trap();
#endif
}

// bulk_copy into the same place of the shared memory of each block of the cluster whose rank is a
// bit of `blocks`, counted by each one's mbarrier at the place of `bar`.
__device__ __forceinline__ void bulk_copy_multicast(void* to, const void* from, unsigned bytes, uint64_t* bar,
                                                    uint16_t blocks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;" ::
          "r"(shared_address(to)),
      "l"(from), "r"(bytes), "r"(shared_address(bar)), "h"(blocks)
      : "memory");
#else
  __trap();
#endif
}

// A block's generic accesses of a step to its operand (the product's reads, the partial sums and
// zeros written over it) ordered before the bulk copies into it that follow the block's arrival:
// its own gather's, or where the gather is shared the cluster's other blocks', which acquire that
// arrival. Every thread fences its own accesses before the arrival's barrier, as the threads that
// write shared memory for a bulk copy do before the barrier after which one thread starts it: a
// fence of the block's shared memory (MEMBAR.ALL.CTA), where the gatherer's fence of the
// cluster's shared memory would be one of the whole GPU (MEMBAR.ALL.GPU).
__device__ __forceinline__ void operand_done_for_copies() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// The forward's gather of rows [b0, b0 + R) of h's exchange (`from`, S a multiple of 8) into the
// operand (row stride ld) on the bulk copy engine, started by warp 0 once the group's counter
// reaches `target` (each block arriving after operand_done_for_copies): a copy a row, counted by
// `gathered`, for which every thread then waits (mbarrier_wait). Rows past the batch are left as
// they are. Every lane polls (one load for the warp), so that each acquires the others' stores of
// h before its copies read them. Where `sharing` blocks of a cluster share the gather, this one
// (`share` of them) copies every sharing-th row into all of their operands, and each block's
// mbarrier counts every row.
template <int R>
__device__ __forceinline__ void gather_bulk(uint16_t* operand, int ld, const uint16_t* from, int S, int64_t b0,
                                            int64_t B, int* arrivals, int target, uint64_t* gathered, int share,
                                            int sharing) {
  while (__any_sync(~0u, load_acquire(arrivals) < target)) {
  }
  const int lane = threadIdx.x, rows = static_cast<int>(B - b0 < R ? B - b0 : R);
  if (lane == 0) mbarrier_expect(gathered, static_cast<unsigned>(2 * rows * S));
  // The other blocks' stores of h (acquired through the counter) are the generic proxy's, the
  // copies' reads the async proxy's. (A fence of every state space would also wait for this
  // thread's stores to global memory to complete.)
  asm volatile("fence.proxy.async.global;" ::: "memory");
  if (sharing == 1) {
    for (int r = lane; r < rows; r += 32) bulk_copy(operand + r * ld, from + (b0 + r) * S, 2 * S, gathered);
    return;
  }
  const auto blocks = static_cast<uint16_t>((1u << sharing) - 1);
  for (int r = share + lane * sharing; r < rows; r += 32 * sharing) {
    bulk_copy_multicast(operand + r * ld, from + (b0 + r) * S, 2 * S, gathered, blocks);
  }
}

// The end of a block's setup, before its first step: the block's mbarriers (`count` at `bars`: a
// cluster's two of the exchange, one a parity, or the bulk gather's one) set, then in a cluster
// (CLUSTER, or `clustered`: one that shares the gather) every block of the cluster running, its
// shared memory set, before any stores into it; otherwise the block's barrier.
template <bool CLUSTER>
__device__ __forceinline__ void setup_done(uint64_t* bars, int count, bool clustered = CLUSTER) {
  if (thread_rank() == 0) {
    for (int i = 0; i < count; ++i) mbarrier_init(bars + i);
  }
  if (CLUSTER || clustered) {
    cluster_barrier();
  } else {
    __syncthreads();
  }
}

// An A fragment (16 x 16, row-major) of a matrix stored row-major: lane l gives row (l % 16) at
// column 8 (l / 16).
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const uint16_t* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(shared_address(row)));
#else
  __trap();
#endif
}

// An A fragment of a matrix stored transposed (column-major): lane l gives stored row
// (l % 8) + 8 (l / 16) at stored column 8 ((l / 8) % 2).
__device__ __forceinline__ void load_a_transposed(uint32_t (&a)[4], const uint16_t* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(shared_address(row)));
#else
  __trap();
#endif
}

// d += a b, m16n8k16, float sums.
template <typename scalar_t>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<scalar_t, bfloat16_t>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#else
  __trap();  // the host chooses these kernels on sm_80 and later only
#endif
}

// sums += a B for k tile kt: N = 8 N_TILES columns whose B operand is stored by column (column
// n's k contiguous, row stride b_ld), from b_lane (this lane's b0 of column lane / 4: k 2 (lane % 4)
// at k tile 0).
template <typename scalar_t, int N_TILES>
__device__ __forceinline__ void mma_columns(float (&sums)[N_TILES][4], const uint32_t (&a)[4], const uint16_t* b_lane,
                                            int b_ld, int kt) {
#pragma unroll
  for (int n = 0; n < N_TILES; ++n) {
    const uint16_t* col = b_lane + n * 8 * b_ld + kt * 16;
    mma<scalar_t>(sums[n], a, *reinterpret_cast<const uint32_t*>(col), *reinterpret_cast<const uint32_t*>(col + 8));
  }
}

template <int N_TILES>
__device__ __forceinline__ void add_sets(float (&d)[N_TILES][4], const float (&sums)[2][N_TILES][4]) {
#pragma unroll
  for (int set = 0; set < 2; ++set) {
#pragma unroll
    for (int n = 0; n < N_TILES; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) d[n][i] += sums[set][n][i];
    }
  }
}

// One warp's unit of a product: M tile m_tile, k tiles [k_begin, k_end), N = 8 N_TILES columns of
// B (as mma_columns), from `a` (where load_a or load_a_transposed finds its fragments: a_at(k tile)
// gives this lane's row address), added to d. Two sets of sums, for even and odd k tiles, halve
// the chains of dependent mma's.
template <typename scalar_t, int N_TILES, typename AAt>
__device__ __forceinline__ void warp_product(float (&d)[N_TILES][4], AAt a_at, const uint16_t* b, int b_ld,
                                             int k_begin, int k_end) {
  const int lane = threadIdx.x;
  const uint16_t* b_lane = b + (lane >> 2) * b_ld + (lane & 3) * 2;  // b0 of column (lane / 4): k 2 (lane % 4)
  float sums[2][N_TILES][4] = {};  // set: k tile odd
  auto step = [&](auto set_constant, int kt) {
    uint32_t a[4];
    a_at(a, kt);
    mma_columns<scalar_t>(sums[decltype(set_constant)::value], a, b_lane, b_ld, kt);
  };
  int kt = k_begin;
  for (; kt + 1 < k_end; kt += 2) {
    step(std::integral_constant<int, 0>{}, kt);
    step(std::integral_constant<int, 1>{}, kt + 1);
  }
  if (kt < k_end) step(std::integral_constant<int, 0>{}, kt);
  add_sets(d, sums);
}

// The same unit from fragments held in registers (Tiling::held): `held` holds k tiles
// [k_begin, k_begin + K) of the unit's M tile; those past k_tiles are not multiplied.
template <typename scalar_t, int N_TILES, int K>
__device__ __forceinline__ void held_product(float (&d)[N_TILES][4], const uint32_t (&held)[K][4], const uint16_t* b,
                                             int b_ld, int k_begin, int k_tiles) {
  const int lane = threadIdx.x;
  const uint16_t* b_lane = b + (lane >> 2) * b_ld + (lane & 3) * 2;
  float sums[2][N_TILES][4] = {};
#pragma unroll
  for (int q = 0; q < K; ++q) {
    if (k_begin + q < k_tiles) mma_columns<scalar_t>(sums[q % 2], held[q], b_lane, b_ld, k_begin + q);
  }
  add_sets(d, sums);
}

// The backward's d_h of each item that runs step t: the sum over the tiles, in order, of their
// shares (`shares`: the step's [tiles][batch][state] of the exchange); the other items keep theirs.
// The loads of every item for a run of tiles are in flight together, one round trip to L2 for
// each run rather than one for each share (four items a thread at four tiles: one round, not 16).
// For the kernels of four items; those of two keep a loop per item (tensor_core_backward.cuh).
template <int ITEMS, typename T>
__device__ __forceinline__ void add_shares(T (&dh)[ITEMS], const Item (&items)[ITEMS], const T* shares, int tiles,
                                           int64_t B, int64_t S, int64_t t) {
  constexpr int kRun = 16 / ITEMS;  // 16 loads in flight
  T total[ITEMS] = {};
  for (int u0 = 0; u0 < tiles; u0 += kRun) {
    T v[ITEMS][kRun];
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const bool runs = items[m].valid && t < items[m].length;
      const T* at = shares + items[m].b * S + items[m].j;
#pragma unroll
      for (int q = 0; q < kRun; ++q) v[m][q] = runs && u0 + q < tiles ? __ldcg(at + (u0 + q) * B * S) : T(0);
    }
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
#pragma unroll
      for (int q = 0; q < kRun; ++q) total[m] += v[m][q];
    }
  }
#pragma unroll
  for (int m = 0; m < ITEMS; ++m) {
    if (items[m].valid && t < items[m].length) dh[m] = total[m];  // past the end h passes through unchanged
  }
}

// Where fragment element i of N tile n lies in the 16 x 8 N_TILES product: (m, n) with m = lane / 4
// (+ 8 for i >= 2), n = 8 n + 2 (lane % 4) + i % 2.
struct FragmentAt {
  int m, n;
};

__device__ __forceinline__ FragmentAt fragment_at(int n_tile, int i) {
  const int lane = threadIdx.x;
  return {(lane >> 2) + (i >= 2 ? 8 : 0), n_tile * 8 + (lane & 3) * 2 + (i & 1)};
}

// The tile's rows of W_h into shared memory, both directions' first work: w[(g * W + c) * ld + k] =
// W_h[g * S + j0 + c][k] in the storage type, zeros past the state (in j or k) up to `padded`
// columns. 16 bytes a load where W_h's rows allow it (the state and the row stride multiples of 8
// elements, the rows 16-byte aligned), 4 loads in flight a thread: at 2 bytes a load this took
// ~8% of a forward's warp samples at 64x1024x1024, T = 64 (benchmarks/NOTES.md, "Session 23").
__device__ __forceinline__ void load_weights(uint16_t* w, int ld, const SequenceParams& p, int j0, int W, int S,
                                             int padded) {
  const auto* weights = static_cast<const uint16_t*>(p.weights);
  const int thread = thread_rank(), threads = block_threads(), M = 3 * W;
  const auto row_of = [&](int row) {
    return weights + static_cast<int64_t>(row / W * S + j0 + row % W) * p.weights_ld;
  };
  if (S % 8 != 0 || p.weights_ld % 8 != 0 || reinterpret_cast<uintptr_t>(weights) % 16 != 0) {
    for (int i = thread; i < M * padded; i += threads) {
      const int row = i / padded, k = i % padded;
      w[row * ld + k] = k < S && j0 + row % W < S ? row_of(row)[k] : uint16_t{0};
    }
    return;
  }
  constexpr int kInFlight = 4;
  const int chunks = padded / 8, count = M * chunks;
  for (int first = thread; first < count; first += kInFlight * threads) {
    uint4 v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads, row = i / chunks, k = i % chunks * 8;
      v[u] = i < count && k < S && j0 + row % W < S ? *reinterpret_cast<const uint4*>(row_of(row) + k) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int i = first + u * threads;
      if (i < count) *reinterpret_cast<uint4*>(w + i / chunks * ld + i % chunks * 8) = v[u];
    }
  }
}

// Launches one instantiation of a direction's kernel, of storage type scalar_t with R rows a group,
// ITEMS cells of the state a thread, and its groups in clusters or not: defined in
// tensor_core_<direction>.cuh, instantiated per dtype in tensor_core_<direction>_<dtype>.cu, the
// clusters' in ..._<dtype>_cluster.cu and those of four items in ..._<dtype>_wide.cu (so that
// they compile beside the others rather than after them).
template <typename scalar_t, int R, int ITEMS, bool CLUSTER>
cudaError_t launch_tensor_core_kernel(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream);
template <typename scalar_t, int R, int ITEMS, bool CLUSTER>
cudaError_t launch_tensor_core_kernel(const BackwardParams& p, const Tiling& tiling, cudaStream_t stream);

// The forward's cluster kernel of 8 rows with its fragments held (Tiling::held): in
// tensor_core_forward_<dtype>_held.cu.
template <typename scalar_t>
cudaError_t launch_tensor_core_held(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream);

// The streamed forward (Tiling::streamed): in tensor_core_forward_<dtype>_streamed.cu.
template <typename scalar_t>
cudaError_t launch_streamed_forward(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream);

template <typename scalar_t, bool CLUSTER, typename Params>
cudaError_t launch_tensor_core_rows(const Params& p, const Tiling& tiling, cudaStream_t stream) {
  if constexpr (is_forward<Params> && CLUSTER) {
    if (tiling.held) return launch_tensor_core_held<scalar_t>(p, tiling, stream);
  }
  switch (tiling.rows) {
    case 8: return launch_tensor_core_kernel<scalar_t, 8, kItems, CLUSTER>(p, tiling, stream);
    case 16: return launch_tensor_core_kernel<scalar_t, 16, kItems, CLUSTER>(p, tiling, stream);
    case 32:
      if (tiling.items == kTensorMaxItems) {
        return launch_tensor_core_kernel<scalar_t, 32, kTensorMaxItems, CLUSTER>(p, tiling, stream);
      }
      return launch_tensor_core_kernel<scalar_t, 32, kItems, CLUSTER>(p, tiling, stream);
    default: return cudaErrorInvalidConfiguration;  // tensor_core_tiling said no
  }
}

// Launches the instantiation that the tiling's rows, items and cluster name. Four items a thread
// only where 32 rows of a wide tile need them: they take registers that the others spend on the
// product.
template <typename scalar_t, typename Params>
cudaError_t launch_tensor_core_typed(const Params& p, const Tiling& tiling, cudaStream_t stream) {
  return tiling.cluster ? launch_tensor_core_rows<scalar_t, true>(p, tiling, stream)
                        : launch_tensor_core_rows<scalar_t, false>(p, tiling, stream);
}

}  // namespace lltm::cuda
