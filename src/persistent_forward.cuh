// The persistent forward kernel (see persistent.cuh).
#pragma once

#include "persistent.cuh"

namespace lltm::cuda {

// A thread's cells of the state in a persistent forward, either family's: their items, their cell
// state and h (in float for the half types), and the input projection of the step at hand. A step
// comes in two parts around the group's exchange: update() makes the new h, which the group's
// other blocks wait for; store() writes what only later kernels read (the pre-activations, the
// output, the cell state), after the block's arrival, so that the arrival's release does not wait
// for those stores. The next step's projection is loaded after that (load()), in the storage type
// and converted where update() reads it: a conversion at the load, or a copy from a register that
// a load in flight fills, would wait for the load there, and a load before the product put its
// latency before every step's product (benchmarks/NOTES.md, "Session 23").
template <typename scalar_t, int ITEMS>
struct ForwardCells {
  using T = opmath_t<scalar_t>;
  Item items[ITEMS];
  T c[ITEMS], h[ITEMS], z[ITEMS][3];
  scalar_t x[ITEMS][3];

  template <int R>
  __device__ __forceinline__ void start(const ForwardParams& p, const Tiling& tiling, const Place& at, int S) {
    const auto* h0 = static_cast<const scalar_t*>(p.h0);
    const auto* c0 = static_cast<const scalar_t*>(p.c0);
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m] = item_at<R>(p, tiling, at, m);
      c[m] = item_value<T>(c0, it, S);
      h[m] = item_value<T>(h0, it, S);
    }
    load(p, 0, S);
  }

  // Step t's input projection (unread past the last step).
  __device__ __forceinline__ void load(const ForwardParams& p, int64_t t, int S) {
    const auto* gates = static_cast<const scalar_t*>(p.gates);
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        if (it.valid && t < p.time) x[m][g] = gates[(t * p.batch + it.b) * 3 * S + g * S + it.j];
      }
    }
  }

  // Step t: each item's pre-activations, sum(item, z) adding the product's partial sums to the
  // three gates' projections z in one pass over the slices (three loads in flight a slice, where a
  // pass a gate put each gate's loads after the last one's sums; nothing added for an item that is
  // not valid); its new cell state and h where the step ran (past a sequence's end both carry
  // over); h given to publish(item, h). Past two items every item's sums come before the cells:
  // item by item, the four-item kernels spilled; at one or two items, sums first were slower
  // (benchmarks/NOTES.md, "Session 40").
  template <typename Sum, typename Publish>
  __device__ __forceinline__ void update(int64_t t, Sum&& sum, Publish&& publish) {
    constexpr bool sums_first = ITEMS > 2;
    const auto project = [&](int m) {
#pragma unroll
      for (int g = 0; g < 3; ++g) z[m][g] = T(x[m][g]);
    };
    if constexpr (sums_first) {
#pragma unroll
      for (int m = 0; m < ITEMS; ++m) project(m);
#pragma unroll
      for (int m = 0; m < ITEMS; ++m) sum(items[m], z[m]);
    }
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
      if constexpr (!sums_first) {
        project(m);
        sum(it, z[m]);
      }
      if (t < it.length) {
        const auto o = forward_point<T, MathFor<scalar_t>>(z[m][0], z[m][1], z[m][2], c[m]);
        c[m] = o.new_cell;
        h[m] = o.new_h;
      }
      publish(it, h[m]);
    }
  }

  // Step t's output (zero past a sequence's end) and, where a backward follows, the
  // pre-activations and the cell state it reads.
  __device__ __forceinline__ void store(const ForwardParams& p, int64_t t, int S) const {
    auto* gates = static_cast<scalar_t*>(p.gates);
    auto* output = static_cast<scalar_t*>(p.output);
    auto* cells = static_cast<scalar_t*>(p.cells);
#pragma unroll
    for (int m = 0; m < ITEMS; ++m) {
      const Item& it = items[m];
      if (!it.valid) continue;
      const int64_t row = t * p.batch + it.b;
      if (cells != nullptr) {
#pragma unroll
        for (int g = 0; g < 3; ++g) gates[row * 3 * S + g * S + it.j] = scalar_t(z[m][g]);
        cells[row * S + it.j] = scalar_t(c[m]);
      }
      output[row * S + it.j] = t < it.length ? scalar_t(h[m]) : scalar_t(0);
    }
  }

  // h_n and c_n, after the last step.
  __device__ __forceinline__ void finish(const ForwardParams& p, int S) const {
    store_items<scalar_t>(items, h, c, p.h_n, p.c_n, S);
  }
};

template <typename scalar_t, int R>
__global__ void __launch_bounds__(most_threads(R, true)) persistent_forward_kernel(ForwardParams p, Tiling tiling) {
  using T = opmath_t<scalar_t>;
  using V = Pack<T, 4>;
  extern __shared__ __align__(32) unsigned char shared[];
  const int S = static_cast<int>(p.state), padded = static_cast<int>(round_up(S, 4)), packs = padded / 4;
  const int W = tiling.width;
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  V* w = reinterpret_cast<V*>(shared);             // w[(g * packs + q) * W + c].v[i] = W_h[g*S + j0 + c][4q + i]
  constexpr bool by_packs = h_by_packs(R);
  T* h = reinterpret_cast<T*>(w + 3 * packs * W);  // h[r * padded + k], or by packs: h_packs
  V* h_packs = reinterpret_cast<V*>(h);              // h_packs[operand_pack(q, r)]
  // partial[((s * 3 + g) * R + r) * W + c]
  T* partial = paired_rows(R) ? h : h + operand_rows(R, true) * padded;
  const Workspace<T> ws = workspace<T>(p, tiling);
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
    (by_packs ? operand_element<R>(h_packs, r, k) : h[i]) =
        h0 != nullptr && b < B && k < S ? T(h0[b * S + k]) : T(0);
  }
  ForwardCells<scalar_t, kItems> cells;
  cells.template start<R>(p, tiling, at, S);
  __syncthreads();
  const Share share = slice_share(packs);
  const PackGather packing = pack_gather<T>(S);  // where by_packs
  // This thread's column and, where `lanes` threads share it, its place among them (they take
  // every lanes-th pack of the slice's share: adjacent packs of h, one load for the warp).
  const int per_warp = 32 / tiling.lanes, lane = threadIdx.x % 32, k_lane = lane / per_warp;
  const int col = threadIdx.x / 32 * per_warp + lane % per_warp;
  for (int64_t t = 0; t < p.time; ++t) {
    T z[3][R] = {};
    if (col < W) {
      for (int q = share.begin + k_lane; q < share.end; q += tiling.lanes) {
        const V wi = w[q * W + col], wo = w[(packs + q) * W + col], wc = w[(2 * packs + q) * W + col];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const V hv = by_packs ? h_packs[operand_pack<R>(q, r)] : reinterpret_cast<const V*>(h + r * padded)[q];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            z[0][r] += wi.v[i] * hv.v[i];
            z[1][r] += wo.v[i] * hv.v[i];
            z[2][r] += wc.v[i] * hv.v[i];
          }
        }
      }
    }
    for (int offset = per_warp; offset < 32; offset *= 2) {  // the lanes of a column (every lane)
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int r = 0; r < R; ++r) z[g][r] += __shfl_xor_sync(0xffffffffu, z[g][r], offset);
      }
    }
    if constexpr (paired_rows(R)) __syncthreads();  // every thread has read h, which the partial sums overwrite
    if (col < W && k_lane == 0) {
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int r = 0; r < R; ++r) partial[((threadIdx.y * 3 + g) * R + r) * W + col] = z[g][r];
      }
    }
    __syncthreads();  // the partial sums are in; every thread has read h
    cells.update(
        t,
        [&](const Item& it, T(&z)[3]) {
          // Unrolled so that a few slices' loads are in flight at once, not one after another.
#pragma unroll 4
          for (int s = 0; s < blockDim.y; ++s) {
#pragma unroll
            for (int g = 0; g < 3; ++g) {
              if (it.valid) z[g] += partial[((s * 3 + g) * R + it.r) * W + it.c];
            }
          }
        },
        [&](const Item& it, T h_new) {
          if (tiling.tiles == 1) {
            const int j = static_cast<int>(it.j);
            (by_packs ? operand_element<R>(h_packs, it.r, j) : h[it.r * padded + it.j]) = h_new;
          } else {
            __stcg(exchange + ((t % 2) * B + it.b) * S + it.j, h_new);
          }
        });
    if (tiling.tiles > 1) {
      arrive_and_wait(arrivals, static_cast<int>(t + 1) * tiling.tiles);
      if constexpr (by_packs) {
        gather_packs<R>(h_packs, exchange + (t % 2) * B * S, S, at.b0, B, packing);
      } else {
        gather_operand<R>(h, padded, exchange + (t % 2) * B * S, S, at.b0, B);
      }
    }
    __syncthreads();  // the new h is in
    // The step's outputs and the next step's projection after the barrier, beside the next
    // product: before it, every other warp would wait at the barrier while the warps that own
    // cells issue these (benchmarks/NOTES.md, "Session 35").
    cells.store(p, t, S);
    cells.load(p, t + 1, S);
  }
  cells.finish(p, S);
}

// Launches the forward kernel of storage type scalar_t with the tiling's rows per group;
// instantiated per dtype in persistent_forward_<dtype>.cu.
template <typename scalar_t>
cudaError_t launch_persistent_typed(const ForwardParams& p, const Tiling& tiling, cudaStream_t stream) {
  const dim3 block = persistent_block(p, tiling, true);
  return with_rows<scalar_t>(tiling.rows, [&](auto rows) {
    constexpr int R = decltype(rows)::value;
    return launch_persistent<scalar_t, R>(persistent_forward_kernel<scalar_t, R>, p, tiling, stream, block);
  });
}

}  // namespace lltm::cuda
