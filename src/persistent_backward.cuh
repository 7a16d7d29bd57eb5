// The persistent backward kernel (see persistent.cuh).
#pragma once

#include "persistent.cuh"

namespace lltm::cuda {

// What step t's backward reads from memory for one element, loaded a step ahead in the storage
// type and converted where the step reads it: a conversion at the load waits for the load there
// (the cluster backward's stall samples, benchmarks/NOTES.md, "Session 33").
template <typename scalar_t>
struct StepInputs {
  scalar_t z[3], c_prev, grad_h;
};

template <typename scalar_t>
__device__ __forceinline__ StepInputs<scalar_t> step_inputs(const BackwardParams& p, int64_t t, int64_t b, int64_t j) {
  const int64_t S = p.state, B = p.batch;
  const auto* z = static_cast<const scalar_t*>(p.gates) + (t * B + b) * 3 * S + j;
  const scalar_t c_prev = t > 0             ? static_cast<const scalar_t*>(p.cells)[((t - 1) * B + b) * S + j]
                          : p.c0 != nullptr ? static_cast<const scalar_t*>(p.c0)[b * S + j]
                                            : scalar_t(0);
  return {{z[0], z[S], z[2 * S]}, c_prev, grad_output_at<scalar_t>(p, t, b, j)};
}

// A thread's cells of the state in a persistent backward, either family's: their items, the
// gradients of h and of the cell state that they carry between steps (in float for the half
// types), their gate gradients summed over the steps for d_bias, and the inputs of the step at
// hand, loaded a step ahead.
template <typename scalar_t, int ITEMS>
struct BackwardCells {
  using T = opmath_t<scalar_t>;
  Item items[ITEMS];
  T dh[ITEMS], dc[ITEMS], bias[ITEMS][3] = {};
  StepInputs<scalar_t> in[ITEMS];

  // The items of this thread in block `at`, from the gradients of h_n and c_n and the last step's
  // inputs.
  template <int R>
  __device__ __forceinline__ void start(const BackwardParams& p, const Tiling& tiling, const Place& at, int S) {
    const auto* grad_h_n = static_cast<const scalar_t*>(p.grad_h_n);
    const auto* grad_c_n = static_cast<const scalar_t*>(p.grad_c_n);
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m] = item_at<R>(p, tiling, at, m);
      dh[m] = item_value<T>(grad_h_n, it, S);
      dc[m] = item_value<T>(grad_c_n, it, S);
      if (it.valid && p.time > 0) in[m] = step_inputs<scalar_t>(p, p.time - 1, it.b, it.j);
    }
  }

  // Step t of every cell: its gate gradients into gates[t] (p.gates, over the pre-activations) and,
  // through put(item, g, gradient), into the block's operand of the product; the cell state's
  // gradient carried back; step t - 1's inputs loaded.
  template <typename Put>
  __device__ __forceinline__ void step(const BackwardParams& p, scalar_t* gates, int64_t B, int S, int64_t t,
                                       Put&& put) {
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
      scalar_t* z = gates + (t * B + it.b) * 3 * S + it.j;
      T d[3] = {T(0), T(0), T(0)};
      if (t < it.length) {
        const StepInputs<scalar_t>& x = in[m];
        const auto o = backward_point<T, MathFor<scalar_t>>(T(x.grad_h) + dh[m], dc[m], T(x.z[0]), T(x.z[1]),
                                                            T(x.z[2]), T(x.c_prev));
        dc[m] = o.d_old_cell;
        d[0] = o.d_input_gate;
        d[1] = o.d_output_gate;
        d[2] = o.d_candidate;
      }
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        z[g * S] = scalar_t(d[g]);
        put(it, g, d[g]);
        bias[m][g] += d[g];
      }
      if (t > 0) in[m] = step_inputs<scalar_t>(p, t - 1, it.b, it.j);
    }
  }

  // d_h of every cell that ran step t: where `tiles` is 1, from_block(item), from the block's
  // shared memory (its partial sums where one tile holds every column, a cluster's inbox); else
  // the sum over the tiles, in order, of their shares in the exchange ([2][tiles][batch][state],
  // the half of the step's parity). Past a sequence's end h passes through unchanged.
  template <typename FromBlock>
  __device__ __forceinline__ void take_dh(int64_t t, int tiles, const T* exchange, int parity, int64_t B, int S,
                                          FromBlock&& from_block) {
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
      if (!it.valid || t >= it.length) continue;
      T total = T(0);
      if (tiles == 1) {
        total = from_block(it);
      } else {
        const T* shares = exchange + (parity * tiles * B + it.b) * S + it.j;
#pragma unroll 8
        for (int u = 0; u < tiles; ++u) total += __ldcg(shares + u * B * S);
      }
      dh[m] = total;
    }
  }

  // The gradients of h0 and c0, after the first step.
  __device__ __forceinline__ void finish(const BackwardParams& p, int S) const {
    store_items<scalar_t>(items, dh, dc, p.d_h, p.d_c, S);
  }

  // d_bias: the items' sums added up over the block's rows in `scratch` ((r * 3 + g) * W + c, W =
  // tiling.width, R x 3 W, zeros where no item is: no thread may still read it), then over the
  // groups of rows, in a fixed order, by the last block of the tile to finish.
  template <int R>
  __device__ __forceinline__ void sum_bias(const BackwardParams& p, const Tiling& tiling, const Place& at,
                                           const Workspace<T>& ws, T* scratch, int S) const {
    const int W = tiling.width, thread = thread_rank(), threads = block_threads();
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
#pragma unroll
      for (int g = 0; g < 3; ++g) scratch[(it.r * 3 + g) * W + it.c] = bias[m][g];
    }
    __syncthreads();
    auto* d_bias = static_cast<scalar_t*>(p.d_bias);
    const int groups = gridDim.x / tiling.tiles;
    for (int i = thread; i < 3 * W; i += threads) {
      const int g = i / W, c = i % W, j = at.j0 + c;
      if (j >= S) continue;
      T total = T(0);
#pragma unroll
      for (int r = 0; r < R; ++r) total += scratch[(r * 3 + g) * W + c];
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
};

template <typename scalar_t, int R>
__global__ void __launch_bounds__(kPersistentThreads) persistent_backward_kernel(BackwardParams p, Tiling tiling) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int S = static_cast<int>(p.state), W = tiling.width, packs = W / 4;
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  V* w = reinterpret_cast<V*>(shared);              // w[(g * packs + q) * S + k].v[i] = W_h[g*S + j0 + 4q + i][k]
  V* dg = w + 3 * packs * S;  // the tile's gate gradients, the product's operand (operand_pack g * packs + q)
  // partial[(s * R + r) * S + k]; none where paired_rows(R), unread where `direct` (below)
  T* partial = reinterpret_cast<T*>(dg + operand_packs<R>(3 * packs));
  const Workspace<T> ws = workspace<T>(p, tiling);
  T* exchange = ws.exchange;  // [2][tiles][batch][state]
  int* arrivals = ws.arrivals + at.group;
  const auto* weights = static_cast<const scalar_t*>(p.weights);
  const int thread = thread_rank(), threads = block_threads();
  for (int i = thread; i < 3 * W * S; i += threads) {
    const int row = i / S, k = i % S, g = row / W, c = row % W, j = at.j0 + c;
    w[(g * packs + c / 4) * S + k].v[c % 4] =
        j < S ? T(weights[static_cast<int64_t>(g * S + j) * p.weights_ld + k]) : T(0);
  }
  // What no item writes stays zero
  for (int i = thread; i < operand_packs<R>(3 * packs); i += threads) dg[i] = V{};
  BackwardCells<scalar_t, kItems> cells;
  cells.template start<R>(p, tiling, at, S);
  auto* gates = static_cast<scalar_t*>(p.gates);
  const Share share = slice_share(3 * packs);
  const int k = threadIdx.x;
  // Where tiles > 1, this tile's share of d_h of every column at step t's parity, for the columns'
  // owners.
  auto share_of = [&](int parity) { return exchange + (parity * tiling.tiles + at.tile) * B * S; };
  // Where the tiling has one slice and more than one tile (always so where paired_rows), a
  // thread's sums are the tile's share itself: stored from the product, with no partial sums in
  // shared memory, no block barrier and no pass over them.
  const bool direct = paired_rows(R) || (tiling.slices == 1 && tiling.tiles > 1);
  // Elsewhere that pass takes elements thread + n * threads of the R x S partial sums.
  const RowWalk first_share(thread, threads, S);
  __syncthreads();
  for (int64_t t = p.time - 1; t >= 0; --t) {
    cells.step(p, gates, B, S, t,
               [&](const Item& it, int g, T d) { operand_element<R>(dg, it.r, g * W + it.c) = d; });
    __syncthreads();  // the step's gate gradients are in shared memory
    {
      // Lanes l and l ^ 16 of a warp share columns c0 = 32 w + l % 16 and c0 + 16 of its 32, each
      // taking every other pack of the slice's share for both: a warp's loads of the gate
      // gradients then serve two columns a lane (64 FMA a pack pair where one column took 32),
      // and each half's loads of W_h stay 16 lanes of adjacent packs. Then each lane keeps its own
      // column k, the partner's half of it through a shuffle.
      const int lane = threadIdx.x % 32, half = lane / 16, c0 = threadIdx.x - lane + lane % 16, c1 = c0 + 16;
      T sum[2][R] = {};
      for (int g = 0; g < 3; ++g) {  // this slice's pairs (g, q) of [share.begin, share.end)
        const int begin = max(share.begin - g * packs, 0), end = min(share.end - g * packs, packs);
        for (int q = begin + half; q < end; q += 2) {
          const V w0 = c0 < S ? w[(g * packs + q) * S + c0] : V{}, w1 = c1 < S ? w[(g * packs + q) * S + c1] : V{};
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const V dv = dg[operand_pack<R>(g * packs + q, r)];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              sum[0][r] += w0.v[i] * dv.v[i];
              sum[1][r] += w1.v[i] * dv.v[i];
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const T partner = __shfl_xor_sync(0xffffffffu, half ? sum[0][r] : sum[1][r], 16);
        if (direct) {
          if (k < S && at.b0 + r < B) {
            __stcg(share_of(static_cast<int>(t % 2)) + (at.b0 + r) * S + k, (half ? sum[1][r] : sum[0][r]) + partner);
          }
        } else if (k < S) {
          partial[(threadIdx.y * R + r) * S + k] = (half ? sum[1][r] : sum[0][r]) + partner;
        }
      }
    }
    if (direct) {
      // Its barrier also keeps the next step's gate gradients until every thread has read these.
      arrive_and_wait(arrivals, static_cast<int>(p.time - t) * tiling.tiles);
    } else {
      __syncthreads();  // the partial sums are in; every thread has read the gate gradients
    }
    const int parity = static_cast<int>(t % 2);
    if (!direct && tiling.tiles > 1) {  // this tile's share of d_h of every column, for the columns' owners
      T* share_out = share_of(parity);
      for (RowWalk e = first_share; e.row < R && at.b0 + e.row < B; e.advance()) {
        T total = T(0);  // the slices' loads a few at a time, as the forward's sums
#pragma unroll 4
        for (int s = 0; s < blockDim.y; ++s) total += partial[(s * R + e.row) * S + e.column];
        __stcg(share_out + (at.b0 + e.row) * S + e.column, total);
      }
      arrive_and_wait(arrivals, static_cast<int>(p.time - t) * tiling.tiles);
    }
    cells.take_dh(t, tiling.tiles, exchange, parity, B, S, [&](const Item& it) {
      T total = T(0);
#pragma unroll 4
      for (int s = 0; s < blockDim.y; ++s) total += partial[(s * R + it.r) * S + it.j];
      return total;
    });
  }
  cells.finish(p, S);
  if (p.d_bias == nullptr) return;
  // dg is free now (the last step's reduction has read it); sum_bias wants zeros where no item is.
  T* scratch = reinterpret_cast<T*>(dg);
  for (int i = thread; i < R * 3 * W; i += threads) scratch[i] = T(0);
  __syncthreads();
  cells.template sum_bias<R>(p, tiling, at, ws, scratch, S);
}

// Launches the backward kernel of storage type scalar_t with the tiling's rows per group;
// instantiated per dtype in persistent_backward_<dtype>.cu.
template <typename scalar_t>
cudaError_t launch_persistent_typed(const BackwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  const dim3 block = persistent_block(p, tiling, false);
  return with_rows<scalar_t>(tiling.rows, [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    return launch_persistent<scalar_t, R>(persistent_backward_kernel<scalar_t, R>, p, tiling, stream, block);
  });
}

}  // namespace lltm::cuda
