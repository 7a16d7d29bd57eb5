// The streamed forward on tensor cores, for half and bfloat16 storage at large batch and state
// (Tiling::streamed): where no tiling of tensor_core.cuh fits, because W_h needs so many blocks
// that the groups of at most 32 rows outnumber the multiprocessors (256 x 1024: 32 tiles of 32
// columns, 8 groups), a group of 64 rows would need its operand of 64 x S beside W_h's tile in
// shared memory, which does not fit (128 KB beside 192 KB at state 1024). Here each step streams
// the operand through shared memory instead, in chunks of 64 columns of h: a block keeps its
// tile's rows of W_h (3 x 32 gate rows) for the whole sequence, as the other kernels do, and
// reads its group's h of the step from L2 chunk by chunk (cp.async, four stages), so 4 groups of
// 64 rows x 32 tiles fill 128 multiprocessors at 256 x 1024.
//
// A step's product is z (R x 3 W) = h (R x S) W_tile^T, float sums: h the A operand, W's rows the
// B operand, both K-major in shared memory in wgmma's 128-byte swizzled layout (swizzled_offset).
// The block's two warpgroups each take half of every chunk's k tiles over the whole 64 x 96 tile:
// on sm_90a one wgmma.m64n96k16 a k tile, reading both operands from shared memory (each thread
// fences its copies for the async proxy before the chunk's barrier; mma.sync read them through
// registers by ldmatrix at ~half the tensor cores' rate: benchmarks/NOTES.md, "Session 42");
// elsewhere each warp runs the same sums, its 16 rows by 12 N tiles, on mma.sync. Warp w's sums
// are rows 16 (w % 4) + ... of all 96 columns either way (wgmma's layout is the mma's, a tile
// after another), so a thread holds all three gates of its cells; the halves' sums meet through
// shared memory (over the stages), each warp of a pair keeping two of the four N tiles of each
// gate. The group exchanges h through L2 and waits at its counter, as the other kernels' groups
// without clusters (persistent.cuh): every block must be resident at once.
#pragma once

#include "persistent_forward.cuh"
#include "tensor_core.cuh"

namespace lltm::cuda {

// 16 bytes from global memory into shared memory without the registers, bypassing L1 (other
// blocks wrote them); `bytes` of them read, zeros for the rest (0: zeros, `from` unread).
__device__ __forceinline__ void copy_async(void* to, const void* from, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(to)), "l"(from), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void copies_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until this thread's copies of all but the last N committed groups are done.
template <int N>
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// Whether this build's code runs the product on wgmma (sm_90a), and its fences, commits and waits.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kWgmma = true;
#else
constexpr bool kWgmma = false;
#endif

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

// Waits until all but the last N committed groups of this warpgroup's wgmma's are done; at N = 0
// the sums' registers are then the compiler's again (an access to them between wgmma's would
// make it fence the warpgroup there).
template <int N>
__device__ __forceinline__ void wgmma_wait(float (&d)[48]) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
  if constexpr (N == 0) {
#pragma unroll
    for (int i = 0; i < 48; ++i) asm volatile("" : "+f"(d[i])::"memory");
  }
#endif
}

// What the block's generic writes to shared memory (W_h, the copies) wrote, visible to wgmma's reads.
__device__ __forceinline__ void shared_for_async_proxy() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// A descriptor of an operand (W's tile, a stage) in swizzled_offset's layout at the k tile `at`
// points into: 128-byte swizzling, 8-row groups 1024 bytes apart (the leading offset unused: a k
// tile lies within a row's 128 bytes, which the start address steps through 32 bytes a k tile).
__device__ __forceinline__ uint64_t swizzled_descriptor(const void* at) {
  return (uint64_t{shared_address(at)} & 0x3FFFF) >> 4 | uint64_t{1} << 16 | uint64_t{1024 >> 4} << 32 |
         uint64_t{1} << 62;
}

// Where element (row, k) of W's tile (M rows) lies in wgmma's 128-byte swizzled K-major layout,
// in elements: blocks of 64 columns one after another, in each a row's 64 elements are 128
// bytes, rows one after another, and a row's 16-byte groups permuted by the row (group ^ row % 8),
// so that the 8 rows of a group's reads fall on different banks. The tile starts 1024-byte aligned.
__device__ __forceinline__ int swizzled_offset(int row, int k, int rows) {
  return (k / 64 * rows + row) * 64 + ((k / 8 % 8) ^ (row % 8)) * 8 + k % 8;
}

// The product of a k tile whose A operand (h's 64 rows: a stage, swizzled as W's tile) and B
// operand (W: 96 rows) the descriptors `a` and `b` name, added to the warpgroup's 64 x 96 sums `d`
// (wgmma's layout: n tile i of a warp's 16 rows in d[4 i] to d[4 i + 3], as an mma's; sm_90a).
// The wgmma reads both after it issues: the stages stay unwritten until the warpgroup's wait for
// it. TYPE: the operands' type in PTX's spelling.
#define LLTM_WGMMA_SS(TYPE)                                                                    \
  asm volatile(                                                                                \
      "{\n"                                                                                    \
      ".reg .pred p;\n"                                                                        \
      "setp.ne.b32 p, %50, 0;\n"                                                               \
      "wgmma.mma_async.sync.aligned.m64n96k16.f32." TYPE "." TYPE " "                          \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "                                                                             \
      "%48, %49, p, 1, 1, 0, 0;\n"                                                             \
      "}\n"                                                                                    \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]) \
      : "l"(a), "l"(b), "r"(1))

template <typename scalar_t>
__device__ __forceinline__ void wgmma_tile_ss(float (&d)[48], uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (std::is_same_v<scalar_t, bfloat16_t>) {
    LLTM_WGMMA_SS("bf16");
  } else {
    LLTM_WGMMA_SS("f16");
  }
#else
  __trap();  // streamed_forward_kernel calls it only where the build is sm_90a's
#endif
}
#undef LLTM_WGMMA_SS

// Two floats as two elements of the storage type in one word, the first in its low half.
template <typename scalar_t>
__device__ __forceinline__ uint32_t pack2(float first, float second) {
  return uint32_t{scalar_t(first).x} | (uint32_t{scalar_t(second).x} << 16);
}

// Element e of the two that pack2 packs.
template <typename scalar_t>
__device__ __forceinline__ scalar_t element(uint32_t two, int e) {
  scalar_t v;
  v.x = static_cast<uint16_t>(e == 0 ? two : two >> 16);
  return v;
}

// The tile's rows of W_h swizzled (swizzled_offset, 3 W rows, `padded` columns): w row
// g * W + c = W_h[g * S + j0 + c], zeros past the state (in j or k). 16 bytes a load where W_h's
// rows allow it (the row stride a multiple of 8 elements, the rows 16-byte aligned).
__device__ __forceinline__ void load_weight_cores(uint16_t* w, const SequenceParams& p, int j0, int S, int padded) {
  constexpr int W = kStreamWidth, M = 3 * W;
  const auto* weights = static_cast<const uint16_t*>(p.weights);
  const int thread = thread_rank(), threads = block_threads(), groups = padded / 8;
  const auto row_of = [&](int row) { return weights + static_cast<int64_t>(row / W * S + j0 + row % W) * p.weights_ld; };
  const bool whole = p.weights_ld % 8 == 0 && reinterpret_cast<uintptr_t>(weights) % 16 == 0;
  for (int i = thread; i < M * groups; i += threads) {
    const int row = i % M, k = i / M * 8;  // consecutive threads, consecutive rows: 16-byte stores in a run
    const bool inside = j0 + row % W < S && k < S;
    uint4 v{};
    if (inside && whole) {
      v = *reinterpret_cast<const uint4*>(row_of(row) + k);
    } else if (inside) {
      auto* e = reinterpret_cast<uint16_t*>(&v);
      for (int u = 0; u < 8; ++u) e[u] = row_of(row)[k + u];
    }
    *reinterpret_cast<uint4*>(w + swizzled_offset(row, k, M)) = v;
  }
}

// A thread's cells: 4 pairs of adjacent columns, pair qq * 2 + half at row 16 (warp % 4) + lane / 4
// + 8 half and column 8 (2 kq + qq) + 2 (lane % 4) of the block's R x W (kq: the warp's half).
struct StreamedPair {
  int64_t b, j, length;
  bool valid;
};

template <typename scalar_t>
__global__ void __launch_bounds__(32 * kStreamWarps, 1) streamed_forward_kernel(ForwardParams p, Tiling tiling) {
  constexpr int R = kStreamRows, W = kStreamWidth, M = 3 * W;
  constexpr int kChunkTiles = kStreamChunk / 16;
  // W's swizzled tile wants 1024-byte alignment (the swizzle permutes by the address's bits 7-9);
  // a name of its own, since the other kernels' declarations ask for less
  extern __shared__ __align__(1024) unsigned char streamed_shared[];
  // W_h's columns padded with zeros to whole chunks, so that every chunk's k tiles run
  // unconditionally (a wgmma under a branch makes ptxas serialise them all)
  const int S = static_cast<int>(p.state), padded = static_cast<int>(streamed_state_padded(S));
  const int chunks = padded / kStreamChunk;
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  uint16_t* w = reinterpret_cast<uint16_t*>(streamed_shared);  // swizzled_offset(g * W + c, k, M): W_h[g*S + j0 + c][k]
  auto* stages = reinterpret_cast<unsigned char*>(w + M * padded);  // [stage]: swizzled_offset(r, k, R)
  float* handed = reinterpret_cast<float*>(stages);                 // [warp][kStreamHanded][lane], over the stages
  const Workspace<float> ws = workspace<float>(p, tiling);
  auto* exchange = reinterpret_cast<uint16_t*>(ws.exchange);  // [2][batch][state] in the storage type
  int* arrivals = ws.arrivals + at.group;
  const int lane = threadIdx.x, warp = threadIdx.y, thread = thread_rank();
  const int mt = warp & 3, kq = warp >> 2;  // the warp's 16 rows, its half of each chunk's k tiles
  if (shared_address(w) % 1024 != 0) __trap();  // the alignment asked for above, relied on by the swizzle
  load_weight_cores(w, p, at.j0, S, padded);
  shared_for_async_proxy();  // W_h's stores, for the wgmma's reads (the first chunk's barrier orders them)

  StreamedPair pairs[4];
  float c[4][2], h[4][2];
  uint32_t x[4][3] = {};  // the step's input projection of each pair's gates, two elements of the storage type
  const auto* c0 = static_cast<const scalar_t*>(p.c0);
  const auto* h0 = static_cast<const scalar_t*>(p.h0);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int r = 16 * mt + (lane >> 2) + 8 * (q & 1);
    const int col = 8 * (2 * kq + (q >> 1)) + 2 * (lane & 3);
    StreamedPair& pr = pairs[q];
    pr.b = at.b0 + r;
    pr.j = at.j0 + col;
    pr.valid = pr.b < B && pr.j < S;  // S is even: the pair's second column too
    pr.length = !pr.valid ? 0 : p.lengths ? p.lengths[pr.b] : p.time;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      c[q][e] = pr.valid && c0 != nullptr ? float(c0[pr.b * S + pr.j + e]) : 0.0f;
      h[q][e] = pr.valid && h0 != nullptr ? float(h0[pr.b * S + pr.j + e]) : 0.0f;
    }
  }
  const auto load_projection = [&](int64_t t) {
    const auto* gates = static_cast<const uint32_t*>(p.gates);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        if (pairs[q].valid) x[q][g] = gates[((t * B + pairs[q].b) * 3 * S + g * S + pairs[q].j) / 2];
      }
    }
  };
  load_projection(0);

  // This thread's copies of a chunk, i = thread and thread + 256: 16 bytes of row (bits 0-2 and
  // 5-7 of i) at k group (bits 3-4, and 8) of the chunk. The 8 lanes of a store phase take 8
  // rows (distinct banks), and a pair of lanes 8 apart a row's 32 bytes.
  // Their places are the same every chunk: a chunk's copies cost an address add each.
  int copy_row[2], copy_k[2], copy_to[2];  // the row, its first column in the chunk, where in a stage
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int i = thread + u * 32 * kStreamWarps;
    copy_row[u] = (i & 7) | ((i >> 5 & 7) << 3);
    copy_k[u] = 8 * ((i >> 3 & 3) | ((i >> 8) << 2));
    copy_to[u] = swizzled_offset(copy_row[u], copy_k[u], R);
  }
  const auto stage_at = [&](int chunk) {
    return reinterpret_cast<uint16_t*>(stages + (chunk % kStreamStages) * kStreamStageBytes);
  };
  for (int64_t t = 0; t < p.time; ++t) {
    if (t > 0) wait_for(arrivals, static_cast<int>(t) * tiling.tiles);
    const uint16_t* from = t == 0 ? reinterpret_cast<const uint16_t*>(h0) : exchange + ((t - 1) % 2) * B * S;
    const uint16_t* copy_from[2];  // chunk 0's 16 bytes of each copy, where it reads any
    bool copy_real[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t b = at.b0 + copy_row[u];
      copy_real[u] = from != nullptr && b < B;
      copy_from[u] = copy_real[u] ? from + b * S + copy_k[u] : nullptr;
    }
    const auto issue = [&](int chunk) {
      if (chunk < chunks) {
        uint16_t* stage = stage_at(chunk);
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const bool real = copy_real[u] && chunk * kStreamChunk + copy_k[u] < S;
          copy_async(stage + copy_to[u], real ? static_cast<const void*>(copy_from[u] + chunk * kStreamChunk) : p.weights,
                     real ? 16u : 0u);
        }
      }
      copies_commit();  // empty past the last chunk, so that every wait counts alike
    };
    issue(0);
    issue(1);
    float d[48] = {};  // n tile i of the warp's 16 rows: d[4 i .. 4 i + 3], as an mma's
    // Each chunk's wgmma's read its stage while the next chunk's are issued, so that a warpgroup
    // waits only for the wgmma's of the chunk before last, whose stage the copies then refill (the
    // chunks run in pairs, whole pairs by the padding, as the mma.sync path's fragments want).
    uint32_t a[2][2][4];
    for (int pair = 0; pair < chunks; pair += 2) {
#pragma unroll
      for (int odd = 0; odd < 2; ++odd) {
        const int chunk = pair + odd;
        copies_wait<1>();
        shared_for_async_proxy();  // this thread's copies, for the wgmma's reads
        __syncthreads();  // the chunk is in; the wgmma's of the stage the next copies fill are done
        issue(chunk + 2);  // into the stage of the chunk before last, whose wgmma's are done
        const uint16_t* stage = stage_at(chunk);
        // Without wgmma, the warp's A fragments of its two k tiles (rows 16 mt.., by load_a's
        // lanes: row l % 16 at k 8 (l / 16)); wgmma reads them from the stage itself.
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if constexpr (!kWgmma) {
            load_a(a[odd][s], stage + swizzled_offset(16 * mt + (lane & 15), 16 * (2 * kq + s) + (lane >> 4) * 8, R));
          }
        }
        wgmma_fence();  // the fragments' and the sums' registers ordered before the wgmma's
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int kt = chunk * kChunkTiles + 2 * kq + s;
          if constexpr (kWgmma) {
            wgmma_tile_ss<scalar_t>(d, swizzled_descriptor(stage + swizzled_offset(0, 16 * (2 * kq + s), R)),
                                    swizzled_descriptor(w + swizzled_offset(0, 16 * kt, M)));
          } else {
            // The same sums a warp at a time: the B fragments of N tiles 2 n2 and 2 n2 + 1 (lane l:
            // row 8 (l / 16) + l % 8 of those 16 at k 8 ((l / 8) % 2)).
#pragma unroll
            for (int n2 = 0; n2 < M / 16; ++n2) {
              uint32_t bf[4];
              load_a(bf, w + swizzled_offset(16 * n2 + (lane & 7) + ((lane >> 4) << 3), 16 * kt + ((lane >> 3) & 1) * 8, M));
#pragma unroll
              for (int q = 0; q < 2; ++q) {
                float* at_tile = d + 4 * (2 * n2 + q);
                float tile[4] = {at_tile[0], at_tile[1], at_tile[2], at_tile[3]};
                mma<scalar_t>(tile, a[odd][s], bf[2 * q], bf[2 * q + 1]);
#pragma unroll
                for (int i = 0; i < 4; ++i) at_tile[i] = tile[i];
              }
            }
          }
        }
        wgmma_commit();
        wgmma_wait<1>(d);
      }
    }
    wgmma_wait<0>(d);
    __syncthreads();  // every warp is done with the stages, which the handed sums overwrite
    // Gate g's N tiles are 4 g .. 4 g + 3: this warp keeps 2 kq and 2 kq + 1 of each, and hands the
    // partner (the other half's warp of the same rows) the other two.
    // (Both tiles indexed by constants and one chosen: a runtime index would put d in local memory.)
    const auto sum_at = [&](int g, int q, int i, bool kept) {
      const float first = d[4 * (4 * g + q) + i], second = d[4 * (4 * g + 2 + q) + i];
      return (kq == 0) == kept ? first : second;
    };
    {
      float* to = handed + ((warp ^ 4) * kStreamHanded) * 32 + lane;
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
#pragma unroll
          for (int i = 0; i < 4; ++i) to[((g * 2 + q) * 4 + i) * 32] = sum_at(g, q, i, false);
        }
      }
    }
    __syncthreads();
    const float* from_partner = handed + (warp * kStreamHanded) * 32 + lane;
    float z[4][3][2];  // [pair][gate][element]: the pre-activations
#pragma unroll
    for (int g = 0; g < 3; ++g) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          // element i of kept N tile q: pair q * 2 + i / 2, its column i % 2
          z[q * 2 + i / 2][g][i % 2] = sum_at(g, q, i, true) + from_partner[((g * 2 + q) * 4 + i) * 32];
        }
      }
    }
    // Every pair's arithmetic runs first, straight through, the results of pairs without a step t
    // selected away: under a branch a pair, the pairs' chains of dependent instructions would run
    // one after another.
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const bool live = t < pairs[q].length;  // a pair past the batch or the state has length 0
#pragma unroll
      for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int g = 0; g < 3; ++g) z[q][g][e] += float(element<scalar_t>(x[q][g], e));
        const auto o = forward_point<float, MathFor<scalar_t>>(z[q][0][e], z[q][1][e], z[q][2][e], c[q][e]);
        c[q][e] = live ? o.new_cell : c[q][e];
        h[q][e] = live ? o.new_h : h[q][e];
      }
    }
    auto* exchange_now = exchange + (t % 2) * B * S;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const StreamedPair& pr = pairs[q];
      if (pr.valid && t + 1 < p.time) {  // past a sequence's end h passes through unchanged
        __stcg(reinterpret_cast<uint32_t*>(exchange_now + pr.b * S + pr.j), pack2<scalar_t>(h[q][0], h[q][1]));
      }
    }
    // The group's exchange: published, and while the others publish theirs, the step's stores go out.
    if (t + 1 < p.time) arrive(arrivals);
    auto* output = static_cast<uint32_t*>(p.output);
    auto* gates = static_cast<uint32_t*>(p.gates);
    auto* cells = static_cast<uint32_t*>(p.cells);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const StreamedPair& pr = pairs[q];
      if (!pr.valid) continue;
      const int64_t row = t * B + pr.b;
      if (cells != nullptr) {
#pragma unroll
        for (int g = 0; g < 3; ++g) gates[(row * 3 * S + g * S + pr.j) / 2] = pack2<scalar_t>(z[q][g][0], z[q][g][1]);
        cells[(row * S + pr.j) / 2] = pack2<scalar_t>(c[q][0], c[q][1]);
      }
      output[(row * S + pr.j) / 2] = t < pr.length ? pack2<scalar_t>(h[q][0], h[q][1]) : 0u;
    }
    if (t + 1 < p.time) load_projection(t + 1);
  }
  auto* h_n = static_cast<uint32_t*>(p.h_n);
  auto* c_n = static_cast<uint32_t*>(p.c_n);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const StreamedPair& pr = pairs[q];
    if (!pr.valid) continue;
    h_n[(pr.b * S + pr.j) / 2] = pack2<scalar_t>(h[q][0], h[q][1]);
    c_n[(pr.b * S + pr.j) / 2] = pack2<scalar_t>(c[q][0], c[q][1]);
  }
}

// Launches the streamed forward of storage type scalar_t: in tensor_core_forward_<dtype>_streamed.cu.
template <typename scalar_t>
cudaError_t launch_streamed_forward(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  return launch_persistent<scalar_t, kStreamRows>(streamed_forward_kernel<scalar_t>, p, tiling, stream,
                                                  dim3(32, kStreamWarps));
}

}  // namespace lltm::cuda
