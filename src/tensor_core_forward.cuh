// The persistent forward kernel on tensor cores (see tensor_core.cuh).
#pragma once

#include "persistent_forward.cuh"
#include "tensor_core.cuh"

namespace lltm::cuda {

template <typename scalar_t, int R, int ITEMS, bool CLUSTER, bool HELD = false>
__global__ void __launch_bounds__(kTensorThreads) tensor_core_forward_kernel(ForwardParams p, Tiling tiling) {
  constexpr int N_TILES = R / 8;
  using T = float;
  extern __shared__ __align__(16) unsigned char shared[];
  const int S = static_cast<int>(p.state), padded = static_cast<int>(tensor_state_padded(S));
  const int ld = static_cast<int>(tensor_operand_ld(padded));
  const int W = tiling.width, M = 3 * W, partial_ld = static_cast<int>(tensor_partial_ld(M));
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  uint16_t* w = reinterpret_cast<uint16_t*>(shared);  // w[(g * W + c) * ld + k] = W_h[g*S + j0 + c][k]
  uint16_t* h = w + M * ld;  // h[r * ld + k] in the storage type; in a cluster, h[2][R * ld] by parity
  // partial[(s * R + r) * partial_ld + g * W + c], past the operand(s) or over it
  T* partial = reinterpret_cast<T*>(tiling.partials_over_operand ? h : h + (CLUSTER ? 2 : 1) * R * ld);
  // In shared memory's last 16 bytes: in a cluster, received[parity], the mbarrier that counts the
  // bytes of that operand as the cluster's blocks store them; through L2, received[0] counts those
  // of the bulk gather
  auto* received = reinterpret_cast<uint64_t*>(shared + tiling.shared_bytes - 16);
  const Workspace<T> ws = workspace<T>(p, tiling);
  auto* exchange = reinterpret_cast<uint16_t*>(ws.exchange);  // [2][batch][state] in the storage type
  int* arrivals = ws.arrivals + at.group;
  const int thread = thread_rank(), threads = block_threads();
  load_weights(w, ld, p, at.j0, W, S, padded);
  const auto* h0 = static_cast<const scalar_t*>(p.h0);
  for (int i = thread; i < R * padded; i += threads) {
    const int r = i / padded, k = i % padded;
    const int64_t b = at.b0 + r;
    h[r * ld + k] = h0 != nullptr && b < B && k < S ? h0[b * S + k].x : uint16_t{0};
  }
  ForwardCells<scalar_t, ITEMS> cells;
  cells.template start<R>(p, tiling, at, S);
  const bool bulk = !CLUSTER && tiling.tiles > 1 && bulk_gather(S);
  const int sharing = bulk ? tiling.gather_blocks : 1;  // the blocks that share the gather: at.tile % sharing
  setup_done<CLUSTER>(received, CLUSTER ? 2 : bulk ? 1 : 0, sharing > 1);
  const TensorProduct f = tensor_product(p, tiling, true);
  const int m_tiles = static_cast<int>(f.m_tiles), k_tiles = static_cast<int>(f.k_tiles);
  const int splits = tiling.slices, per_split = (k_tiles + splits - 1) / splits;
  const int lane = threadIdx.x;
  // The product's unit u: M tile mt = u % m_tiles, split s = u / m_tiles of the state; its sums d
  // go to the partial sums of its split.
  const auto a_lane_of = [&](int mt) { return w + (mt * 16 + (lane & 15)) * ld + (lane >> 4) * 8; };
  const auto store_partial = [&](int s, int mt, const float(&d)[N_TILES][4]) {
#pragma unroll
    for (int n = 0; n < N_TILES; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const FragmentAt e = fragment_at(n, i);
        partial[(s * R + e.n) * partial_ld + mt * 16 + e.m] = d[n][i];
      }
    }
  };
  // HELD: the warp's units are u = warp + round * kTensorWarps, split s of kHeldSplit k tiles (the
  // tiling's slices cover the state so), walked as (s, mt), and their fragments stay in registers
  // from here on.
  uint32_t held[HELD ? kHeldRounds : 1][HELD ? kHeldSplit : 1][4];
  const RowWalk first_held(threadIdx.y, kTensorWarps, m_tiles);
  if constexpr (HELD) {
    RowWalk u = first_held;
#pragma unroll
    for (int round = 0; round < kHeldRounds; ++round, u.advance()) {
#pragma unroll
      for (int q = 0; q < kHeldSplit; ++q) {
        const int kt = u.row * kHeldSplit + q;
        if (u.row < splits && kt < k_tiles) load_a(held[round][q], a_lane_of(u.column) + kt * 16);
      }
    }
  }
  for (int64_t t = 0; t < p.time; ++t) {
    uint16_t* operand = CLUSTER ? h + (t % 2) * R * ld : h;  // in a cluster, the next step's is the other parity's
    // z^T (3 width x R) = W_tile h^T, in rounds of a unit a warp (one round where the partial sums
    // overlay the operand).
    if constexpr (HELD) {
      RowWalk u = first_held;
#pragma unroll
      for (int round = 0; round < kHeldRounds; ++round, u.advance()) {
        if (u.row >= splits) break;
        float d[N_TILES][4] = {};
        held_product<scalar_t, N_TILES>(d, held[round], operand, ld, u.row * kHeldSplit, k_tiles);
        store_partial(u.row, u.column, d);
      }
    } else {
      for (int round = 0; round < m_tiles * splits; round += kTensorWarps) {
        const int u = round + threadIdx.y, s = u / m_tiles, mt = u % m_tiles, k_begin = s * per_split;
        const bool unit = u < m_tiles * splits;
        const uint16_t* a_lane = a_lane_of(mt);
        float d[N_TILES][4] = {};
        if (unit) {
          warp_product<scalar_t, N_TILES>(
              d, [&](uint32_t(&a)[4], int kt) { load_a(a, a_lane + kt * 16); }, operand, ld, k_begin,
              min(k_begin + per_split, k_tiles));
        }
        if (tiling.partials_over_operand) __syncthreads();  // every warp has read h
        if (unit) store_partial(s, mt, d);
      }
    }
    __syncthreads();  // the partial sums are in; every warp has read h
    cells.update(
        t,
        [&](const Item& it, T(&z)[3]) {
#pragma unroll 4
          for (int s = 0; s < splits; ++s) {
#pragma unroll
            for (int g = 0; g < 3; ++g) {
              if (it.valid) z[g] += partial[(s * R + it.r) * partial_ld + g * W + it.c];
            }
          }
        },
        [&](const Item& it, T h_new) {
          if (CLUSTER) return;  // sent below, 8 columns a store
          const uint16_t word = scalar_t(h_new).x;
          if (tiling.tiles == 1) {
            h[it.r * ld + it.j] = word;
          } else {
            __stcg(exchange + ((t % 2) * B + it.b) * S + it.j, word);
          }
        });
    // The group's exchange. In a cluster, this block's columns of the new h go into every block's
    // operand of the next step (all of which finished reading it for the step before), counted by
    // that block's mbarrier of its parity: the 8 lanes that hold 8 consecutive columns of a row
    // (widths are multiples of 16) gather them through shuffles, and lane q of the 8 stores them
    // into blocks q, q + 8, ... Through L2, it is published, and while the others publish theirs,
    // the step's stores to memory go out; then the others' columns come in.
    if (CLUSTER) {
      if (t + 1 < p.time) {
        uint16_t* next = h + ((t + 1) % 2) * R * ld;
        uint64_t* bar = received + (t + 1) % 2;
        if (thread == 0) mbarrier_expect(bar, static_cast<unsigned>(2 * R * padded));
        // Each lane's reads of the partial sums are ordered before the stores of whichever lane
        // of its 8 sends into this block: a completed phase then says they are done (the values
        // themselves reach that lane through shuffles, which order no memory).
        __syncwarp();
#pragma unroll
        for (int m = 0; m < ITEMS; ++m) {
          if ((thread & ~31) + m * threads >= R * W) break;  // the warp holds no cells
          const uint32_t mine = cells.items[m].valid ? scalar_t(cells.h[m]).x : 0u;
          const uint32_t pair = mine | (__shfl_down_sync(~0u, mine, 1) << 16);  // even lanes: 2 columns
          // The 8 lanes' first item is this lane's, (lane & 7) columns back (a row's items come in
          // runs of 8: widths are multiples of 16).
          const int first = lane & ~7;
          const uint4 v{__shfl_sync(~0u, pair, first), __shfl_sync(~0u, pair, first + 2),
                        __shfl_sync(~0u, pair, first + 4), __shfl_sync(~0u, pair, first + 6)};
          const Item& it = cells.items[m];
          const int k = static_cast<int>(it.j) - (lane & 7);
          if (k >= padded) continue;
          const uint16_t* to = next + (it.b - at.b0) * ld + k;
          for (int rank = lane & 7; rank < tiling.tiles; rank += 8) {
            store_async(cluster_address(to, rank), v, cluster_address(bar, rank));
          }
        }
      }
    } else if (tiling.tiles > 1 && t + 1 < p.time) {
      if (bulk) operand_done_for_copies();
      arrive(arrivals);
      // The bulk gather starts as soon as the group has arrived; the other warps' stores and
      // loads of the step go out meanwhile.
      if (bulk && threadIdx.y == 0) {
        gather_bulk<R>(h, ld, exchange + (t % 2) * B * S, S, at.b0, B, arrivals,
                       static_cast<int>(t + 1) * tiling.tiles, received, at.tile % sharing, sharing);
      }
    }
    cells.store(p, t, S);
    cells.load(p, t + 1, S);
    if (CLUSTER) {
      // The new h is in (every phase's bytes come from every block: the block's own reads of the
      // partial sums are done too)
      if (t + 1 < p.time) mbarrier_wait<Scope::kCluster>(received + (t + 1) % 2, static_cast<unsigned>(t / 2 % 2));
      continue;
    }
    if (tiling.tiles > 1 && t + 1 < p.time) {
      if (bulk) {
        mbarrier_wait<Scope::kBlock>(received, static_cast<unsigned>(t % 2));
      } else {
        wait_for(arrivals, static_cast<int>(t + 1) * tiling.tiles);
        gather_operand<R>(h, ld, exchange + (t % 2) * B * S, S, at.b0, B);
      }
      // The partial sums overwrote the operand's columns past the state, which the product reads
      // against W_h's zeros there: zeros again (bits of a float may be a NaN's, and 0 NaN is NaN).
      // (Its rows past the batch, which the bulk gather leaves as they are, reach only their own
      // columns of the product, whose items store nothing.)
      if (tiling.partials_over_operand && padded > S) {
        const int pad = padded - S;
        for (int i = thread; i < R * pad; i += threads) h[i / pad * ld + S + i % pad] = 0;
      }
    }
    // The new h is in (the bulk gather's wait says so, unless zeros were written beside it)
    if (!bulk || tiling.partials_over_operand) __syncthreads();
  }
  cells.finish(p, S);
  // No block of a cluster that shares the gather leaves while its copies into the others may
  // still be under way.
  if (sharing > 1) cluster_barrier();
}

template <typename scalar_t, int R, int ITEMS, bool CLUSTER>
cudaError_t launch_tensor_core_kernel(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  return launch_persistent<scalar_t, R>(tensor_core_forward_kernel<scalar_t, R, ITEMS, CLUSTER>, p, tiling, stream,
                                        dim3(32, kTensorWarps));
}

template <typename scalar_t>
cudaError_t launch_tensor_core_held(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  return launch_persistent<scalar_t, 8>(tensor_core_forward_kernel<scalar_t, 8, 1, true, true>, p, tiling, stream,
                                        dim3(32, kTensorWarps));
}

}  // namespace lltm::cuda
