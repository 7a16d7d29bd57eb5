// The persistent backward kernel on tensor cores (see tensor_core.cuh).
#pragma once

#include "persistent_backward.cuh"
#include "tensor_core.cuh"

namespace lltm::cuda {

template <typename scalar_t, int R, int ITEMS, bool CLUSTER>
__global__ void __launch_bounds__(kTensorThreads) tensor_core_backward_kernel(BackwardParams p, Tiling tiling) {
  constexpr int N_TILES = R / 8;
  using T = float;
  extern __shared__ __align__(16) unsigned char shared[];
  const int S = static_cast<int>(p.state), padded = static_cast<int>(tensor_state_padded(S));
  const int ld = static_cast<int>(tensor_operand_ld(padded));
  const int W = tiling.width, M = 3 * W, dg_ld = static_cast<int>(tensor_operand_ld(M));
  const int partial_ld = static_cast<int>(tensor_partial_ld(padded));
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  uint16_t* w = reinterpret_cast<uint16_t*>(shared);  // w[(g * W + c) * ld + k] = W_h[g*S + j0 + c][k]
  const size_t w_bytes = std::max(size_t{2} * M * ld, size_t{4} * R * M);
  // dg[r * dg_ld + g * W + c]: the gate gradients in the storage type
  uint16_t* dg = reinterpret_cast<uint16_t*>(shared + w_bytes);
  T* partial = reinterpret_cast<T*>(dg + R * dg_ld);  // partial[(s * R + r) * partial_ld + k]
  // In a cluster: inbox[((parity * tiles + u) * R + r) * W + c], tile u's share of d_h at (r, j0 + c)
  T* inbox = partial + tiling.slices * R * partial_ld;
  // In a cluster, received[parity]: the mbarrier that counts the bytes of that inbox as the
  // cluster's blocks store them
  auto* received = reinterpret_cast<uint64_t*>(inbox + tensor_inbox_size(tiling));
  const Workspace<T> ws = workspace<T>(p, tiling);
  T* exchange = ws.exchange;  // [2][tiles][batch][state]
  int* arrivals = ws.arrivals + at.group;
  const int thread = thread_rank(), threads = block_threads();
  load_weights(w, ld, p, at.j0, W, S, padded);
  for (int i = thread; i < R * dg_ld; i += threads) dg[i] = 0;  // what no item writes stays zero
  BackwardCells<scalar_t, ITEMS> cells;
  cells.template start<R>(p, tiling, at, S);
  auto* gates = static_cast<scalar_t*>(p.gates);
  const TensorProduct f = tensor_product(p, tiling, false);
  const int m_tiles = static_cast<int>(f.m_tiles), k_tiles = static_cast<int>(f.k_tiles);
  const int splits = tiling.slices, per_split = (k_tiles + splits - 1) / splits;
  // Row r, column k of the block's share: its splits' partial sums added up.
  const auto split_sum = [&](int r, auto k) {
    T total = T(0);
    for (int s = 0; s < splits; ++s) total += partial[(s * R + r) * partial_ld + k];
    return total;
  };
  const bool in_shared = tensor_partials_in_shared(tiling, false);
  const int lane = threadIdx.x;
  // In a cluster, the 16-byte chunks of the tiles' columns that this thread sends (tile u's row r:
  // row u * R + r of W / 4 chunks).
  const RowWalk first_chunk(thread, threads, W / 4);
  setup_done<CLUSTER>(received, CLUSTER ? 2 : 0);
  for (int64_t t = p.time - 1; t >= 0; --t) {
    cells.step(p, gates, B, S, t, [&](const Item& it, int g, T d) {
      dg[it.r * dg_ld + g * W + it.c] = scalar_t(d).x;
    });
    __syncthreads();  // the step's gate gradients are in shared memory
    const int parity = static_cast<int>(t % 2);
    T* share_out = exchange + (parity * tiling.tiles + at.tile) * B * S;
    // d_h (S x R) = W_tile^T dg^T, unit u: M tile u % m_tiles of the state, split u / m_tiles of
    // the gate rows. W_tile^T's fragments are W_tile's, transposed by ldmatrix.
    for (int u = threadIdx.y; u < m_tiles * splits; u += kTensorWarps) {
      const int mt = u % m_tiles, s = u / m_tiles, k_begin = s * per_split;
      const int q = lane >> 3;
      const uint16_t* a_lane = w + ((lane & 7) + (q >> 1) * 8) * ld + mt * 16 + (q & 1) * 8;
      float d[N_TILES][4] = {};
      warp_product<scalar_t, N_TILES>(
          d, [&](uint32_t(&a)[4], int kt) { load_a_transposed(a, a_lane + kt * 16 * ld); }, dg, dg_ld,
          k_begin, min(k_begin + per_split, k_tiles));
#pragma unroll
      for (int n = 0; n < N_TILES; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const FragmentAt e = fragment_at(n, i);
          const int k = mt * 16 + e.m;
          if (in_shared) {
            partial[(s * R + e.n) * partial_ld + k] = d[n][i];
          } else if (k < S && at.b0 + e.n < B) {
            __stcg(share_out + (at.b0 + e.n) * S + k, d[n][i]);
          }
        }
      }
    }
    __syncthreads();  // the partial sums are in; every warp has read the gate gradients
    if (CLUSTER) {
      // Each tile's columns of this block's share (its splits added up), 16 bytes a store, into
      // the tile's inbox of this step's parity (which its block finished reading two steps ago,
      // before its share of the step between), counted by that block's mbarrier of the parity;
      // then this block's inbox is awaited.
      uint64_t* bar = received + parity;
      if (thread == 0) mbarrier_expect(bar, static_cast<unsigned>(4 * tiling.tiles * R * W));
      for (RowWalk e = first_chunk; e.row < tiling.tiles * R; e.advance()) {
        const int u = e.row / R, r = e.row % R, c = e.column * 4, k = u * W + c;
        unsigned v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          T total = T(0);
          if (k + q < S) total = split_sum(r, k + q);
          v[q] = __float_as_uint(total);
        }
        const T* to = inbox + ((parity * tiling.tiles + at.tile) * R + r) * W + c;
        store_async(cluster_address(to, u), make_uint4(v[0], v[1], v[2], v[3]), cluster_address(bar, u));
      }
      mbarrier_wait<Scope::kCluster>(bar, static_cast<unsigned>((p.time - 1 - t) / 2 % 2));
    } else if (tiling.tiles > 1) {  // this tile's share of d_h of every column, for the columns' owners
      if (in_shared) {
        for (int i = thread; i < R * S; i += threads) {
          const int r = i / S, k = i % S;
          const int64_t b = at.b0 + r;
          if (b >= B) continue;
          const T total = split_sum(r, k);
          __stcg(share_out + b * S + k, total);
        }
      }
      arrive_and_wait(arrivals, static_cast<int>(p.time - t) * tiling.tiles);
    }
    // One tile: the splits' partial sums; a cluster: the tiles' shares in the inbox.
    const auto from_block = [&](const Item& it) {
      if (!CLUSTER) return split_sum(it.r, it.j);
      T total = T(0);
      for (int u = 0; u < tiling.tiles; ++u) total += inbox[((parity * tiling.tiles + u) * R + it.r) * W + it.c];
      return total;
    };
    // Four items a thread take their shares in runs (add_shares); with two, where each thread
    // rarely holds more than one item at several tiles, runs measured slower than a loop an item.
    // (The one-tile call names its tile count, so that the loop over shares compiles away.)
    if constexpr (CLUSTER) {
      cells.take_dh(t, 1, exchange, parity, B, S, from_block);
    } else if constexpr (ITEMS == kTensorMaxItems) {
      if (tiling.tiles > 1) {
        add_shares(cells.dh, cells.items, exchange + parity * tiling.tiles * B * S, tiling.tiles, B, S, t);
      } else {
        cells.take_dh(t, 1, exchange, parity, B, S, from_block);
      }
    } else {
      cells.take_dh(t, tiling.tiles, exchange, parity, B, S, from_block);
    }
  }
  cells.finish(p, S);
  if (p.d_bias == nullptr) return;
  // The items' sums go through float scratch where W_h was (every warp has read it: the last
  // step's product is behind a barrier), zeroed first where no item writes.
  T* sums = reinterpret_cast<T*>(shared);
  for (int i = thread; i < R * M; i += threads) sums[i] = T(0);
  __syncthreads();
  cells.template sum_bias<R>(p, tiling, at, ws, sums, S);
}

template <typename scalar_t, int R, int ITEMS, bool CLUSTER>
cudaError_t launch_tensor_core_kernel(const BackwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  return launch_persistent<scalar_t, R>(tensor_core_backward_kernel<scalar_t, R, ITEMS, CLUSTER>, p, tiling, stream,
                                        dim3(32, kTensorWarps));
}

}  // namespace lltm::cuda
