// The sequence operator's CUDA backend: the persistent kernels where W_h fits in a block's shared
// memory, else a loop of one cuBLAS product and one fused kernel per step each way; no host
// synchronisation either way.
#include "sequence.h"
#include "cublas.h"
#include "cuda_device.h"
#include "sequence_cuda.h"

#include <ATen/OpMathType.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>

namespace lltm {
namespace {

// What both directions pass to the kernels. The kernels read W_h through a row stride, with unit
// column stride; `lengths` is the device copy (device_lengths), which the caller keeps alive.
cuda::SequenceParams sequence_params(Recurrence& r, const Tensor& lengths) {
  r.weights = r.weights.contiguous();
  cuda::SequenceParams p{};
  p.time = r.sizes.time;
  p.batch = r.sizes.batch;
  p.state = r.sizes.state;
  p.multiprocessors = cuda::device_attribute(cudaDevAttrMultiProcessorCount);
  p.shared_memory_per_block = cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p.weights = r.weights.const_data_ptr();
  p.weights_ld = r.weights.stride(0);
  p.h0 = r.h0.const_data_ptr();
  p.c0 = r.c0.const_data_ptr();
  p.gates = r.gates.data_ptr();
  p.cells = r.cells.defined() ? r.cells.data_ptr() : nullptr;
  p.output = r.output.data_ptr();
  p.lengths = lengths.defined() ? lengths.const_data_ptr<int64_t>() : nullptr;
  return p;
}

// LLTM_JIT_SEQUENCE_KERNEL=step takes the per-step loop even where the persistent kernels fit
// (for tests and benchmarks of that path).
bool use_persistent(const cuda::SequenceParams& p, at::ScalarType dtype) {
  const char* choice = std::getenv("LLTM_JIT_SEQUENCE_KERNEL");
  return !(choice && std::strcmp(choice, "step") == 0) && cuda::persistent_fits(p, dtype);
}

// The device copy of the lengths, made on the current stream without waiting for it (from pinned
// memory, which the caching host allocator keeps until the copy is done).
Tensor device_lengths(const Recurrence& r, const Tensor& like) {
  return r.lengths.defined() ? r.lengths.pin_memory().to(like.device(), /*non_blocking=*/true) : Tensor();
}

void cuda_forward(Recurrence& r) {
  const c10::cuda::CUDAGuard guard(r.gates.device());
  project_input(r, r.gates);
  const Tensor lengths = device_lengths(r, r.gates);
  cuda::SequenceParams p = sequence_params(r, lengths);
  p.h_n = r.h_n.data_ptr();
  p.c_n = r.c_n.data_ptr();
  const auto dtype = r.gates.scalar_type();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  if (use_persistent(p, dtype)) {
    C10_CUDA_CHECK(cuda::launch_persistent_forward(p, dtype, stream));
    return;
  }
  const int64_t S = r.sizes.state, B = r.sizes.batch;
  const Tensor w_h_t = r.weights.narrow(1, 0, S).t();
  // The step's state, and two buffers each that the steps' new state alternates between; the cell
  // state's are float (opmath) in every dtype, so that half types do not round it between steps.
  const auto math = at::toOpMathType(dtype);
  Tensor h = r.h0, c = r.c0.to(math);
  const Tensor h_buffers[2] = {at::empty_like(r.h0), at::empty_like(r.h0)};
  const Tensor c_buffers[2] = {at::empty_like(c), at::empty_like(c)};
  for (int64_t t = 0; t < r.sizes.time; ++t) {
    // gates[t] += h W_h^T: in column-major terms gates[t]^T (3S x B) += W_h (3S x S) h^T (S x B).
    if (cublas::available()) {
      cublas::gemm_accumulate(stream, dtype, cublas::T, cublas::N, 3 * S, B, S, p.weights, p.weights_ld,
                              h.const_data_ptr(), S, r.gates.select(0, t).data_ptr(), 3 * S);
    } else {
      r.gates.select(0, t).addmm_(h, w_h_t);
    }
    const Tensor& h_next = h_buffers[t % 2];
    const Tensor& c_next = c_buffers[t % 2];
    const cuda::StepState state{h.const_data_ptr(), c.const_data_ptr(), h_next.data_ptr(), c_next.data_ptr()};
    C10_CUDA_CHECK(cuda::launch_step_forward(p, t, state, dtype, stream));
    h = h_next;
    c = c_next;
  }
  r.h_n.copy_(h);
  r.c_n.copy_(c);
}

void cuda_backward(Recurrence& r) {
  const c10::cuda::CUDAGuard guard(r.gates.device());
  const Tensor lengths = device_lengths(r, r.gates);
  cuda::SequenceParams p = sequence_params(r, lengths);
  if (r.grad_output.defined()) {
    p.grad_output = r.grad_output.const_data_ptr();
    for (int d = 0; d < 3; ++d) p.grad_output_strides[d] = r.grad_output.stride(d);
  }
  p.d_h = r.d_h.data_ptr();
  p.d_c = r.d_c.data_ptr();
  const auto dtype = r.gates.scalar_type();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  if (use_persistent(p, dtype)) {
    C10_CUDA_CHECK(cuda::launch_persistent_backward(p, dtype, stream));
    return;
  }
  const int64_t S = r.sizes.state, B = r.sizes.batch;
  const Tensor w_h = r.weights.narrow(1, 0, S);
  for (int64_t t = r.sizes.time - 1; t >= 0; --t) {
    C10_CUDA_CHECK(cuda::launch_step_backward(p, t, dtype, stream));
    // d_h += d_gates[t] W_h: in column-major terms d_h^T (S x B) += W_h^T (S x 3S) d_gates[t]^T (3S x B).
    if (cublas::available()) {
      cublas::gemm_accumulate(stream, dtype, cublas::N, cublas::N, S, B, 3 * S, p.weights, p.weights_ld,
                              r.gates.select(0, t).const_data_ptr(), 3 * S, r.d_h.data_ptr(), S);
    } else {
      r.d_h.addmm_(r.gates.select(0, t), w_h);
    }
  }
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, CUDA, m) {
  m.impl("sequence_forward", TORCH_FN(lltm::sequence_forward<lltm::cuda_forward>));
  m.impl("sequence_backward", TORCH_FN(lltm::sequence_backward<lltm::cuda_backward>));
}
