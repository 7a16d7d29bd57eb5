// The sequence's step kernels: for states whose W_h does not fit the persistent kernels, the host
// runs one cuBLAS product per step and these fused elementwise passes around it.
#include "sequence_kernels.cuh"

#include <algorithm>
#include <cstdint>

namespace lltm::cuda {
namespace {

constexpr int kStepThreads = 256;

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads) step_forward_kernel(ForwardParams p, int64_t t, StepState state) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  const auto* pre = static_cast<const T*>(state.pre);
  const auto* bias = static_cast<const scalar_t*>(state.bias);
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* __restrict__ h_prev = static_cast<const scalar_t*>(state.h_prev);
  const auto* __restrict__ c_prev = static_cast<const T*>(state.c_prev);
  auto* __restrict__ h_next = static_cast<scalar_t*>(state.h_next);
  auto* __restrict__ c_next = static_cast<T*>(state.c_next);
  auto* output = static_cast<scalar_t*>(p.output) + t * n;
  auto* cells = p.cells ? static_cast<scalar_t*>(p.cells) + t * n : nullptr;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    T z[3];
#pragma unroll
    for (int g = 0; g < 3; ++g) {
      z[g] = pre[b * 3 * S + g * S + j] + (bias != nullptr ? T(bias[g * S + j]) : T(0)) +
             (state.add_gates ? T(gates[b * 3 * S + g * S + j]) : T(0));
    }
    if (runs(p.lengths, b, t)) {
      const auto o = forward_point<T, MathFor<scalar_t>>(z[0], z[1], z[2], c_prev[i]);
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
#pragma unroll
      for (int g = 0; g < 3; ++g) gates[b * 3 * S + g * S + j] = scalar_t(z[g]);  // rounded once
    }
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kStepThreads)
    step_backward_kernel(BackwardParams p, int64_t t, void* d_h_, void* d_c_, void* d_gates_) {
  using T = opmath_t<scalar_t>;
  const int64_t S = p.state, n = p.batch * S;
  auto* gates = static_cast<scalar_t*>(p.gates) + t * p.batch * 3 * S;
  const auto* c_prev = t > 0 ? static_cast<const scalar_t*>(p.cells) + (t - 1) * n : static_cast<const scalar_t*>(p.c0);  // nullptr: zeros
  auto* d_h = static_cast<T*>(d_h_);
  auto* d_c = static_cast<T*>(d_c_);
  auto* d_gates = static_cast<scalar_t*>(d_gates_);
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = i / S, j = i % S;
    scalar_t* z = gates + b * 3 * S + j;
    scalar_t d[3] = {scalar_t(0), scalar_t(0), scalar_t(0)};  // d_h and d_c pass through a skipped step
    if (runs(p.lengths, b, t)) {
      const T grad_h = T(grad_output_at<scalar_t>(p, t, b, j)) + d_h[i];
      const T c = c_prev != nullptr ? T(c_prev[i]) : T(0);
      const auto o = backward_point<T, MathFor<scalar_t>>(grad_h, d_c[i], T(z[0]), T(z[S]), T(z[2 * S]), c);
      d[0] = scalar_t(o.d_input_gate);
      d[1] = scalar_t(o.d_output_gate);
      d[2] = scalar_t(o.d_candidate);
      d_c[i] = o.d_old_cell;
      d_h[i] = T(0);  // the host adds d_gates W_h
    }
#pragma unroll
    for (int g = 0; g < 3; ++g) z[g * S] = d_gates[b * 3 * S + g * S + j] = d[g];
  }
}

unsigned step_blocks(const SequenceParams& p) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(ceil_div(p.batch * p.state, kStepThreads), int64_t{8} * p.multiprocessors)));
}

template <typename... Args>
StepKernel step_kernel_of(void (*kernel)(Args...)) {
  return {reinterpret_cast<const void*>(kernel), static_cast<int>(sizeof...(Args))};
}

}  // namespace

cudaError_t launch_step_forward(const ForwardParams& p, int64_t t, const StepState& state, DType dtype,
                                cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    step_forward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(p, t, state);
  });
  if (!ran) return cudaErrorNotSupported;
  return cudaGetLastError();
}

cudaError_t launch_step_backward(const BackwardParams& p, int64_t t, void* d_h, void* d_c, void* d_gates, DType dtype,
                                 cudaStream_t stream) {
  if (p.batch == 0) return cudaSuccess;
  const bool ran = dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    step_backward_kernel<scalar_t><<<step_blocks(p), kStepThreads, 0, stream>>>(p, t, d_h, d_c, d_gates);
  });
  if (!ran) return cudaErrorNotSupported;
  return cudaGetLastError();
}

StepKernel step_kernel(DType dtype, bool forward) {
  StepKernel kernel{};
  dispatch(dtype, [&](auto tag) {
    using scalar_t = decltype(tag);
    kernel = forward ? step_kernel_of(step_forward_kernel<scalar_t>) : step_kernel_of(step_backward_kernel<scalar_t>);
  });
  return kernel;
}

}  // namespace lltm::cuda
