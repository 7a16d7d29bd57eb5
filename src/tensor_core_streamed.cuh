// The streamed forward on tensor cores, for half and bfloat16 storage at large batch and state
// (Tiling::streamed): where no tiling of tensor_core.cuh fits, because W_h needs so many blocks
// that the groups of at most 32 rows outnumber the multiprocessors (256 x 1024: 32 tiles of 32
// columns, 8 groups), a group of 64 rows would need its operand of 64 x S beside W_h's tile in
// shared memory, which does not fit (128 KB beside 198 KB at state 1024). Here each step streams
// the operand through shared memory instead, in chunks of 64 columns of h: a block keeps its
// tile's rows of W_h (3 x 32 gate rows) for the whole sequence, as the other kernels do, and
// reads its group's h of the step from L2 chunk by chunk (cp.async, three stages in flight), so
// 4 groups of 64 rows x 32 tiles fill 128 multiprocessors at 256 x 1024.
//
// A step's product is z (R x 3 W) = h (R x S) W_tile^T on mma.sync.m16n8k16 (float sums), h the
// A operand and W's rows the B operand, both by ldmatrix. The block's 8 warps split it: warp
// (j, mh, kq) takes columns [16 j, 16 j + 16) of each gate (so a thread holds all three gates of
// its cells), rows [32 mh, 32 mh + 32), and half of each chunk's k tiles (kq); the two halves'
// sums meet through shared memory (over the stages), each warp of a pair keeping one of its two
// M tiles' cells. The group exchanges h through L2 and waits at its counter, as the other
// kernels' groups without clusters (persistent.cuh): every block must be resident at once.
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

// A thread's cells: 4 pairs of adjacent columns, pair q * 2 + half at row 16 mt + lane / 4 + 8 half
// and column 16 j + 8 q + 2 (lane % 4) of the block's R x W (mt its M tile).
struct StreamedPair {
  int64_t b, j, length;
  bool valid;
};

template <typename scalar_t>
__global__ void __launch_bounds__(32 * kStreamWarps, 1) streamed_forward_kernel(ForwardParams p, Tiling tiling) {
  constexpr int R = kStreamRows, W = kStreamWidth, M = 3 * W;
  extern __shared__ __align__(32) unsigned char shared[];
  const int S = static_cast<int>(p.state), padded = static_cast<int>(tensor_state_padded(S));
  const int ld = static_cast<int>(tensor_operand_ld(padded)), k_tiles = padded / 16;
  const int chunks = static_cast<int>(ceil_div(padded, kStreamChunk));
  const int64_t B = p.batch;
  const Place at = place<R>(tiling);
  uint16_t* w = reinterpret_cast<uint16_t*>(shared);  // w[(g * W + c) * ld + k] = W_h[g*S + j0 + c][k]
  uint16_t* stages = w + M * ld;                      // [stage][R][kStreamStageLd]
  float* handed = reinterpret_cast<float*>(stages);   // [warp][kStreamHanded][lane], over the stages
  const Workspace<float> ws = workspace<float>(p, tiling);
  auto* exchange = reinterpret_cast<uint16_t*>(ws.exchange);  // [2][batch][state] in the storage type
  int* arrivals = ws.arrivals + at.group;
  const int lane = threadIdx.x, warp = threadIdx.y, thread = thread_rank();
  const int j = warp & 1, mh = (warp >> 1) & 1, kq = warp >> 2;
  const int mine = kq;  // of the warp's two M tiles (2 mh, 2 mh + 1), the one whose cells it keeps
  load_weights(w, ld, p, at.j0, W, S, padded);

  StreamedPair pairs[4];
  float c[4][2], h[4][2];
  uint32_t x[4][3];  // the step's input projection of each pair's gates, two elements of the storage type
  const auto* c0 = static_cast<const scalar_t*>(p.c0);
  const auto* h0 = static_cast<const scalar_t*>(p.h0);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int r = 16 * (2 * mh + mine) + (lane >> 2) + 8 * (q & 1);
    const int col = 16 * j + 8 * (q >> 1) + 2 * (lane & 3);
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

  // This thread's copies of a chunk: rows copy_row and copy_row + 32, columns [8 seg, 8 seg + 8).
  const int copy_row = thread / 8, seg = thread % 8;
  for (int64_t t = 0; t < p.time; ++t) {
    if (t > 0) wait_for(arrivals, static_cast<int>(t) * tiling.tiles);
    const uint16_t* from = t == 0 ? reinterpret_cast<const uint16_t*>(h0) : exchange + ((t - 1) % 2) * B * S;
    const auto issue = [&](int chunk) {
      if (chunk < chunks) {
        uint16_t* stage = stages + (chunk % kStreamStages) * kStreamStageElements;
        const int k = chunk * kStreamChunk + seg * 8;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int r = copy_row + 32 * u;
          const int64_t b = at.b0 + r;
          const bool real = from != nullptr && b < B && k < S;
          copy_async(stage + r * kStreamStageLd + seg * 8, real ? static_cast<const void*>(from + b * S + k) : p.weights,
                     real ? 16u : 0u);
        }
      }
      copies_commit();  // empty past the last chunk, so that every wait counts alike
    };
    issue(0);
    issue(1);
    // [M tile 2 mh + m][gate][N tile 2 j + q of the gate][element], indexed by constants only (a
    // runtime index would put them in local memory)
    float d[2][3][2][4] = {};
    for (int chunk = 0; chunk < chunks; ++chunk) {
      copies_wait<1>();
      __syncthreads();  // the chunk is in, and every warp is done with the stage the next copies reuse
      issue(chunk + 2);
      const uint16_t* stage = stages + (chunk % kStreamStages) * kStreamStageElements;
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int kl = 2 * kq + s, kt = chunk * (kStreamChunk / 16) + kl;
        if (kt >= k_tiles) break;
        uint32_t a[2][4];
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          load_a(a[m], stage + ((2 * mh + m) * 16 + (lane & 15)) * kStreamStageLd + kl * 16 + (lane >> 4) * 8);
        }
#pragma unroll
        for (int g = 0; g < 3; ++g) {
          // B fragments of N tiles 2 j and 2 j + 1 of gate g: matrix i of the x4 load is rows
          // 8 (i / 2) + (lane % 8) of those 16, at k 8 (i % 2) (ldmatrix reads W's rows as B's columns).
          uint32_t bf[4];
          load_a(bf, w + (g * W + 16 * j + (lane & 7) + ((lane >> 4) << 3)) * ld + kt * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
          for (int m = 0; m < 2; ++m) {
#pragma unroll
            for (int q = 0; q < 2; ++q) mma<scalar_t>(d[m][g][q], a[m], bf[2 * q], bf[2 * q + 1]);
          }
        }
      }
    }
    __syncthreads();  // every warp is done with the stages, which the handed sums overwrite
    {
      float* to = handed + ((warp ^ 4) * kStreamHanded) * 32 + lane;  // the partner: the other kq
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
#pragma unroll
          for (int i = 0; i < 4; ++i) to[((g * 2 + q) * 4 + i) * 32] = mine == 0 ? d[1][g][q][i] : d[0][g][q][i];
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
          // element i of N tile q: pair q * 2 + i / 2, its column i % 2
          z[q * 2 + i / 2][g][i % 2] =
              (mine == 0 ? d[0][g][q][i] : d[1][g][q][i]) + from_partner[((g * 2 + q) * 4 + i) * 32];
        }
      }
    }
    auto* exchange_now = exchange + (t % 2) * B * S;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const StreamedPair& pr = pairs[q];
      if (!pr.valid) continue;
#pragma unroll
      for (int g = 0; g < 3; ++g) {
#pragma unroll
        for (int e = 0; e < 2; ++e) z[q][g][e] += float(element<scalar_t>(x[q][g], e));
      }
      if (t < pr.length) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const auto o = forward_point<float, MathFor<scalar_t>>(z[q][0][e], z[q][1][e], z[q][2][e], c[q][e]);
          c[q][e] = o.new_cell;
          h[q][e] = o.new_h;
        }
      }
      if (t + 1 < p.time) {  // past a sequence's end h passes through unchanged
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
