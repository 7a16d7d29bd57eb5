// The sequence's step kernels: for states whose W_h does not fit the persistent kernels, the host
// runs one cuBLAS product per step and these fused elementwise passes around it.
#include "sequence_kernels.cuh"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>

namespace lltm::cuda {
namespace {

constexpr int kStepThreads = 256;
constexpr int kStepVec = 4;  // columns a thread takes where every row of every tensor allows it

// A thread takes the columns [j, j + VEC) of a row (j = thread_column<VEC>()), as packs of VEC
// elements of each tensor, in the rows of the batch in strides of the grid's y (see step_geometry).
__device__ __forceinline__ int64_t step_row() { return int64_t{blockIdx.y} * blockDim.y + threadIdx.y; }
__device__ __forceinline__ int64_t step_rows() { return int64_t{gridDim.y} * blockDim.y; }

// Adds element i's pack of parts 1, 2, ... to `sum` (part 0's, read with the step's other loads).
template <int VEC, typename T>
__device__ __forceinline__ void add_parts(Pack<T, VEC>& sum, const StepParts& parts, int64_t i) {
  const auto* sums = static_cast<const T*>(parts.sums) + i;
  for (int part = 1; part < parts.count; ++part) {
    const Pack<T, VEC> more = read_pack<VEC>(sums + part * parts.stride);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sum.v[k] += more.v[k];
  }
}

// kParts: the product's parts past the first (`parts`, from state.pre on) are added to it; the
// kernel of one part is compiled without them, as their loop, even empty, slows the one-part step
// (NOTES "Session 49").
template <typename scalar_t, int VEC, bool kParts>
__device__ __forceinline__ void step_forward_columns(const ForwardParams& p, int64_t t, const StepState& state,
                                                     const StepParts& parts) {
  using T = opmath_t<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  using Q = Pack<T, VEC>;
  const int64_t S = p.state, n = p.batch * S, j = thread_column<VEC>();
  if (j >= S) return;
  const auto* pre = static_cast<const T*>(state.pre);
  const auto* bias = static_cast<const scalar_t*>(state.bias);
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* __restrict__ h_prev = static_cast<const scalar_t*>(state.h_prev);
  const auto* __restrict__ c_prev = static_cast<const T*>(state.c_prev);
  auto* __restrict__ h_next = static_cast<scalar_t*>(state.h_next);
  auto* __restrict__ c_next = static_cast<T*>(state.c_next);
  auto* output = static_cast<scalar_t*>(p.output) + t * n;
  auto* cells = p.cells ? static_cast<scalar_t*>(p.cells) + t * n : nullptr;
  for (int64_t b = step_row(); b < p.batch; b += step_rows()) {
    const int64_t i = b * S + j, row = 3 * b * S + j;  // row: gate 0's column j of row b
    Q z[3];
#pragma unroll
    for (int g = 0; g < 3; ++g) {
      z[g] = read_pack<VEC>(pre + row + g * S);
      const auto add = [&](const scalar_t* from) {
        const P pack = read_pack<VEC>(from);
#pragma unroll
        for (int k = 0; k < VEC; ++k) z[g].v[k] += T(pack.v[k]);
      };
      if (bias != nullptr) add(bias + g * S + j);
      if (state.add_gates) add(gates + row + g * S);
    }
    Q c = read_pack<VEC>(c_prev + i);
    if constexpr (kParts) {
#pragma unroll
      for (int g = 0; g < 3; ++g) add_parts(z[g], parts, row + g * S);
    }
    P h, out;
    if (runs(p.lengths, b, t)) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const auto o = forward_point<T, MathFor<scalar_t>>(z[0].v[k], z[1].v[k], z[2].v[k], c.v[k]);
        c.v[k] = o.new_cell;
        h.v[k] = out.v[k] = scalar_t(o.new_h);
      }
    } else {  // the state passes through; the output is zero
      h = read_pack<VEC>(h_prev + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) out.v[k] = scalar_t(0);
    }
    write_pack(output + i, out);
    write_pack(c_next + i, c);
    write_pack(h_next + i, h);
    if (cells) {
      P rounded;
#pragma unroll
      for (int k = 0; k < VEC; ++k) rounded.v[k] = scalar_t(c.v[k]);
      write_pack(cells + i, rounded);
#pragma unroll
      for (int g = 0; g < 3; ++g) {  // the pre-activations, rounded once
#pragma unroll
        for (int k = 0; k < VEC; ++k) rounded.v[k] = scalar_t(z[g].v[k]);
        write_pack(gates + row + g * S, rounded);
      }
    }
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
    step_forward_kernel(ForwardParams p, int64_t t, StepState state, bool packed) {
  packed ? step_forward_columns<scalar_t, kStepVec, false>(p, t, state, StepParts{})
         : step_forward_columns<scalar_t, 1, false>(p, t, state, StepParts{});
}

// The forward step of a product in parts (float32 and float64 alone split theirs).
template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
    step_forward_parts_kernel(ForwardParams p, int64_t t, StepState state, StepParts parts, bool packed) {
  packed ? step_forward_columns<scalar_t, kStepVec, true>(p, t, state, parts)
         : step_forward_columns<scalar_t, 1, true>(p, t, state, parts);
}

template <typename scalar_t>
constexpr bool kSplitsForward = std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>;

template <typename scalar_t, int VEC>
__device__ __forceinline__ void step_backward_columns(const BackwardParams& p, int64_t t, const void* d_h_,
                                                      void* d_c_, void* d_gates_, const StepParts& parts) {
  using T = opmath_t<scalar_t>;
  using P = Pack<scalar_t, VEC>;
  using Q = Pack<T, VEC>;
  const int64_t S = p.state, n = p.batch * S, j = thread_column<VEC>();
  if (j >= S) return;
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);  // nullptr: zeros
  const auto* d_h = static_cast<const T*>(d_h_);
  auto* d_c = static_cast<T*>(d_c_);
  auto* d_gates = static_cast<scalar_t*>(d_gates_);
  for (int64_t b = step_row(); b < p.batch; b += step_rows()) {
    const int64_t i = b * S + j, row = 3 * b * S + j;
    P d[3] = {};  // d_h and d_c pass through a skipped step
    if (runs(p.lengths, b, t)) {
      const P z_input = read_pack<VEC>(gates + row), z_output = read_pack<VEC>(gates + row + S),
              z_candidate = read_pack<VEC>(gates + row + 2 * S);
      const P c = c_prev != nullptr ? read_pack<VEC>(c_prev + i) : P{};
      const bool after = t + 1 < p.time && runs(p.lengths, b, t + 1);
      Q carried_h = read_pack<VEC>((after ? static_cast<const T*>(parts.sums) : d_h) + i);
      if (after) add_parts(carried_h, parts, i);
      Q carried_c = read_pack<VEC>(d_c + i);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j + k)) + carried_h.v[k];
        const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, carried_c.v[k], T(z_input.v[k]),
                                                            T(z_output.v[k]), T(z_candidate.v[k]), T(c.v[k]));
        d[0].v[k] = scalar_t(o.d_input_gate);
        d[1].v[k] = scalar_t(o.d_output_gate);
        d[2].v[k] = scalar_t(o.d_candidate);
        carried_c.v[k] = o.d_old_cell;
      }
      write_pack(d_c + i, carried_c);
    }
#pragma unroll
    for (int g = 0; g < 3; ++g) {
      write_pack(gates + row + g * S, d[g]);
      write_pack(d_gates + row + g * S, d[g]);
    }
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
    step_backward_kernel(BackwardParams p, int64_t t, const void* d_h, void* d_c, void* d_gates, StepParts parts,
                         bool packed) {
  packed ? step_backward_columns<scalar_t, kStepVec>(p, t, d_h, d_c, d_gates, parts)
         : step_backward_columns<scalar_t, 1>(p, t, d_h, d_c, d_gates, parts);
}

// Whether every row of each tensor a step kernel reads or writes starts at a whole pack: the
// state a multiple of kStepVec, and each tensor's first element aligned to a pack of its type
// (elements of `bytes` bytes; nullptr for an absent tensor). The step's offsets are whole rows,
// so the answer is the same at every step.
bool packs_fit(int64_t state, std::initializer_list<std::pair<const void*, size_t>> tensors) {
  bool fit = state % kStepVec == 0;
  for (const auto& [pointer, bytes] : tensors) fit = fit && reinterpret_cast<std::uintptr_t>(pointer) % (kStepVec * bytes) == 0;
  return fit;
}

// Blocks of kStepThreads: x across the row's packs (a power of two up to the block), y across the
// rows, in strides where the batch passes the grid's largest y.
struct StepGeometry {
  dim3 grid, block;
};

StepGeometry step_geometry(const SequenceParams& p, bool packed) {
  const int64_t groups = p.state / (packed ? kStepVec : 1);
  unsigned tx = 1;
  while (tx < kStepThreads && tx < groups) tx *= 2;
  const unsigned ty = kStepThreads / tx;
  const int64_t row_blocks = std::min<int64_t>(ceil_div(p.batch, ty), 65535);
  return {dim3(static_cast<unsigned>(ceil_div(groups, tx)), static_cast<unsigned>(row_blocks)), dim3(tx, ty)};
}

template <typename... Args>
StepKernel step_kernel_of(void (*kernel)(Args...)) {
  return {reinterpret_cast<const void*>(kernel), static_cast<int>(sizeof...(Args))};
}

}  // namespace

cudaError_t launch_step_forward(const ForwardParams& p, int64_t t, const StepState& state, StepParts parts,
                                DType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    constexpr size_t storage = sizeof(scalar_t), math = sizeof(opmath_t<scalar_t>);
    const bool packed = packs_fit(p.state, {{p.gates, storage}, {p.output, storage}, {p.cells, storage},
                                            {state.pre, math}, {state.bias, storage}, {state.h_prev, storage},
                                            {state.c_prev, math}, {state.h_next, storage}, {state.c_next, math}});
    const StepGeometry geo = step_geometry(p, packed);
    if constexpr (kSplitsForward<scalar_t>) {
      if (parts.count > 1) {
        step_forward_parts_kernel<scalar_t><<<geo.grid, geo.block, 0, stream>>>(p, t, state, parts, packed);
        return;
      }
    }
    step_forward_kernel<scalar_t><<<geo.grid, geo.block, 0, stream>>>(p, t, state, packed);
  });
  if (!ran) return cudaErrorNotSupported;
  return cudaGetLastError();
}

cudaError_t launch_step_backward(const BackwardParams& p, int64_t t, const void* d_h, void* d_c, void* d_gates,
                                 StepParts parts, DType dtype, cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    constexpr size_t storage = sizeof(scalar_t), math = sizeof(opmath_t<scalar_t>);
    // the parts' stride a whole number of packs: batch * state, state a multiple of the pack
    const bool packed = packs_fit(p.state, {{p.gates, storage}, {p.cells, storage}, {p.c0, storage}, {d_h, math},
                                            {d_c, math}, {d_gates, storage}, {parts.sums, math}});
    const StepGeometry geo = step_geometry(p, packed);
    step_backward_kernel<scalar_t><<<geo.grid, geo.block, 0, stream>>>(p, t, d_h, d_c, d_gates, parts, packed);
  });
  if (!ran) return cudaErrorNotSupported;
  return cudaGetLastError();
}

StepKernel step_kernel(DType dtype, bool forward, bool parts) {
  StepKernel kernel{};
  dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    kernel = forward ? step_kernel_of(step_forward_kernel<scalar_t>) : step_kernel_of(step_backward_kernel<scalar_t>);
    if constexpr (kSplitsForward<scalar_t>) {
      if (forward && parts) kernel = step_kernel_of(step_forward_parts_kernel<scalar_t>);
    }
  });
  return kernel;
}

}  // namespace lltm::cuda
