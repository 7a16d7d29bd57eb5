// The sequence operator's CUDA backend: the persistent kernels where W_h fits in the shared memory
// of one block or of a group of blocks, else a loop of one cuBLAS product and one fused kernel per
// step each way; no host synchronisation either way.
#include "sequence.h"
#include "cublas.h"
#include "cuda_device.h"
#include "kernels.h"
#include "sequence_cuda.h"

#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace lltm {
namespace {

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.const_data_ptr() : nullptr;
}

// LLTM_JIT_TENSOR_CORES=0 keeps the half types' persistent kernels on CUDA cores (for tests and
// A/B timing of the two; read at each call).
bool tensor_cores_allowed() {
  const char* choice = std::getenv("LLTM_JIT_TENSOR_CORES");
  return !(choice && std::strcmp(choice, "0") == 0);
}

// LLTM_JIT_MULTIPROCESSORS=N plans the persistent kernels' tilings for N multiprocessors rather
// than the device's (for tests of the fallback where the device cannot hold a tiling's blocks at
// once; read at each call).
int planned_multiprocessors() {
  const char* given = std::getenv("LLTM_JIT_MULTIPROCESSORS");
  return given != nullptr && std::atoi(given) > 0 ? std::atoi(given)
                                                  : cuda::device_attribute(cudaDevAttrMultiProcessorCount);
}

// What both directions pass to the kernels. The kernels read W_h through a row stride, with unit
// column stride: `weights` is r.weights made contiguous, and `lengths` the device copy
// (device_lengths); the caller keeps both alive.
cuda::SequenceParams sequence_params(const Recurrence& r, const Tensor& weights, const Tensor& lengths) {
  cuda::SequenceParams p{};
  p.time = r.sizes.time;
  p.batch = r.sizes.batch;
  p.state = r.sizes.state;
  p.multiprocessors = planned_multiprocessors();
  p.shared_memory_per_block = cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p.cooperative = cuda::device_attribute(cudaDevAttrCooperativeLaunch) != 0;
  p.tensor_cores = cuda::device_attribute(cudaDevAttrComputeCapabilityMajor) >= 8 && tensor_cores_allowed();
  p.weights = weights.const_data_ptr();
  p.weights_ld = weights.stride(0);
  p.c0 = data_or_null(r.c0);
  p.gates = r.gates.data_ptr();
  p.cells = r.cells.defined() ? r.cells.data_ptr() : nullptr;
  p.lengths = lengths.defined() ? lengths.const_data_ptr<int64_t>() : nullptr;
  return p;
}

// LLTM_JIT_SEQUENCE_KERNEL=step takes the per-step loop even where the persistent kernels fit
// (for tests and benchmarks of that path).
bool use_persistent(const cuda::SequenceParams& p, at::ScalarType dtype) {
  const char* choice = std::getenv("LLTM_JIT_SEQUENCE_KERNEL");
  return !(choice && std::strcmp(choice, "step") == 0) && cuda::persistent_fits(p, kernel_dtype(dtype));
}

// One launch of the persistent kernel of a direction, with the workspace it needs (freed after it
// in the stream's order, as every temporary here). False where the device cannot hold the
// tiling's blocks at once, and nothing ran: the caller then takes the per-step path.
template <typename Params>
bool run_persistent(Params& p, const Tensor& like) {
  const auto dtype = kernel_dtype(like.scalar_type());
  const size_t bytes = cuda::persistent_workspace_bytes(p, dtype);
  const auto options = like.options().dtype(at::kByte);
  const Tensor workspace = bytes > 0 ? like.new_empty({static_cast<int64_t>(bytes)}, options) : Tensor();
  p.workspace = bytes > 0 ? workspace.data_ptr() : nullptr;
  const cudaError_t error = cuda::launch_persistent(p, dtype, c10::cuda::getCurrentCUDAStream());
  if (error == cudaErrorCooperativeLaunchTooLarge) return false;
  C10_CUDA_CHECK(error);
  return true;
}

// The device copy of the lengths, made on the current stream without waiting for it (from pinned
// memory, which the caching host allocator keeps until the copy is done).
Tensor device_lengths(const Recurrence& r, const Tensor& like) {
  return r.lengths.defined() ? r.lengths.pin_memory().to(like.device(), /*non_blocking=*/true) : Tensor();
}

// out = a b^T, or out += a b^T where `accumulate`, row-major, for a (m, k) and b (n, k) of the
// step's dtype, a with unit column stride, b with unit stride in either dimension, and out (m, n)
// contiguous, of that dtype or its opmath type: cuBLAS where it is loaded, else ATen (in out's
// dtype). The column-major call computes out^T (n x m) = b (n x k) a^T (k x m).
void product(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  if (!cublas::available()) {
    const Tensor a_out = a.to(out.scalar_type()), b_out = b.to(out.scalar_type()).t();
    Tensor result = out;
    accumulate ? result.addmm_(a_out, b_out) : aten::mm_out(result, a_out, b_out);
    return;
  }
  const bool b_rows = b.stride(1) == 1;  // b row-major: column-major memory holds b^T
  cublas::gemm(a.scalar_type(), out.scalar_type(), b_rows ? cublas::T : cublas::N, cublas::N, b.size(0), a.size(0),
               a.size(1), b.const_data_ptr(), b.stride(b_rows ? 0 : 1), a.const_data_ptr(), a.stride(0),
               out.data_ptr(), out.stride(0), accumulate);
}

// LLTM_JIT_STEP_GRAPHS=0 launches the step path's steps one by one rather than as a CUDA graph
// (for tests and A/B timing of the two; read at each call).
bool step_graphs_allowed() {
  const char* choice = std::getenv("LLTM_JIT_STEP_GRAPHS");
  return !(choice && std::strcmp(choice, "0") == 0);
}

// The step path's loop as CUDA graphs of kGraphSteps steps: a stream capture records a chunk's
// launches (each step a cuBLAS product, which may take two kernels, and our step kernel), and its
// graph runs them at the cost of one launch, where launching each costs the host more than the
// device's work at these sizes (benchmarks/NOTES.md, "Session 15"); the device runs a chunk while
// the host records the next. A thread keeps the executable graph of each chunk of each direction
// and device, and updates it in place where the next call records the same nodes (same sizes,
// other pointers), which costs less than instantiating one. The capture runs on a stream of its
// own, which no other thread's work can join (torch's default stream, the legacy one, cannot be
// captured at all); the graphs then run on the caller's stream.
constexpr int64_t kGraphSteps = 8;

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  ~StepGraphs() {  // at the thread's end; errors once the process is tearing CUDA down do not matter
    for (const cudaGraphExec_t exec : execs_) cudaGraphExecDestroy(exec);
    if (capture_ != nullptr) cudaStreamDestroy(capture_);
  }

  // step(i, stream) enqueues step i of `count` on `stream`, which is also the current stream then.
  template <typename Step>
  void run(c10::cuda::CUDAStream stream, int64_t count, Step&& step) {
    if (capture_ == nullptr) C10_CUDA_CHECK(cudaStreamCreateWithFlags(&capture_, cudaStreamNonBlocking));
    const c10::cuda::CUDAStreamGuard current(c10::cuda::getStreamFromExternal(capture_, stream.device_index()));
    cublas::handle();  // allocates torch's cuBLAS workspace for this stream now, not in a capture
    for (int64_t begin = 0, chunk = 0; begin < count; begin += kGraphSteps, ++chunk) {
      const Graph graph = record([&] {
        for (int64_t i = begin; i < std::min(begin + kGraphSteps, count); ++i) step(i, capture_);
      });
      if (chunk == static_cast<int64_t>(execs_.size())) execs_.push_back(nullptr);
      cudaGraphExec_t& exec = execs_[chunk];
      cudaGraphExecUpdateResultInfo info;
      if (exec == nullptr || cudaGraphExecUpdate(exec, graph.get(), &info) != cudaSuccess) {
        (void)cudaGetLastError();  // other nodes than last time: instantiate anew
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        exec = nullptr;
        C10_CUDA_CHECK(cudaGraphInstantiate(&exec, graph.get(), 0));
      }
      C10_CUDA_CHECK(cudaGraphLaunch(exec, stream.stream()));
    }
  }

 private:
  using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, cudaError_t (*)(cudaGraph_t)>;

  // The graph of what enqueue() launches on the capture stream. Relaxed: whatever it calls (a
  // lazily loaded kernel's module, an allocation) is allowed.
  template <typename Enqueue>
  Graph record(Enqueue&& enqueue) {
    C10_CUDA_CHECK(cudaStreamBeginCapture(capture_, cudaStreamCaptureModeRelaxed));
    cudaGraph_t recorded = nullptr;
    try {
      enqueue();
    } catch (...) {
      if (cudaStreamEndCapture(capture_, &recorded) == cudaSuccess && recorded != nullptr) cudaGraphDestroy(recorded);
      (void)cudaGetLastError();
      throw;
    }
    C10_CUDA_CHECK(cudaStreamEndCapture(capture_, &recorded));
    return Graph(recorded, cudaGraphDestroy);
  }

  cudaStream_t capture_ = nullptr;
  std::vector<cudaGraphExec_t> execs_;  // by chunk
};

// Runs step(i, stream) for i in [0, count), the step path of a direction: as StepGraphs where
// cuBLAS is loaded (ATen's products, the fallback, allocate) and the caller's stream is not being
// captured already; there (a CUDA graph of the caller's, torch.compile's cudagraphs) the steps
// join that capture as they are.
template <typename Step>
void run_steps(bool forward, int64_t count, Step&& step) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream.stream(), &capture));
  if (!cublas::available() || !step_graphs_allowed() || capture != cudaStreamCaptureStatusNone) {
    for (int64_t i = 0; i < count; ++i) step(i, stream.stream());
    return;
  }
  thread_local std::map<std::pair<bool, int>, StepGraphs> graphs;
  graphs[{forward, stream.device_index()}].run(stream, count, step);
}

// Steps' rows of input projection that one product of the step path's forward makes, in the
// half types (float32 and float64 project every step at once, into gates).
constexpr int64_t kProjectionRows = 2048;

void cuda_forward(ForwardRecurrence& r) {
  const c10::cuda::CUDAGuard guard(r.gates.device());
  const Tensor weights = r.weights.contiguous(), lengths = device_lengths(r, r.gates);
  cuda::ForwardParams p{sequence_params(r, weights, lengths)};
  p.h0 = data_or_null(r.h0);
  p.output = r.output.data_ptr();
  p.h_n = r.h_n.data_ptr();
  p.c_n = r.c_n.data_ptr();
  const auto dtype = r.gates.scalar_type();
  // The step path sums the pre-activations in the opmath type: in gates itself for float32 and
  // float64, for the half types in a float buffer of a few steps, which one product at a time fills
  // with those steps' input projection (the whole sequence's would double the forward's memory),
  // the step kernel adding the bias. The persistent kernels read the whole projection from gates.
  const auto math = at::toOpMathType(dtype);
  const bool in_gates = math == dtype;
  const bool persistent = use_persistent(p, dtype);
  if (persistent || in_gates) project_input(r);
  if (persistent && run_persistent(p, r.gates)) return;
  const int64_t S = r.sizes.state, B = r.sizes.batch, F = r.sizes.features, T = r.sizes.time;
  const Tensor w_h = weights.narrow(1, 0, S), w_x = weights.narrow(1, S, F);
  // Step t's pre-activations are row t % chunk of pre.
  const int64_t chunk = in_gates ? T : std::min(T, (kProjectionRows + B - 1) / std::max<int64_t>(B, 1));
  const Tensor pre = in_gates ? r.gates : r.gates.new_empty({chunk, B, 3 * S}, r.gates.options().dtype(math));
  const Tensor input = in_gates ? r.input : r.input.contiguous(), bias = in_gates ? Tensor() : r.bias.contiguous();
  // The step's state, and two buffers each that the steps' new state alternates between.
  Tensor h = state_or_zeros(r.h0, r.h_n, dtype), c = state_or_zeros(r.c0, r.c_n, math);
  const Tensor h_buffers[2] = {h.new_empty(h.sizes()), h.new_empty(h.sizes())};
  const Tensor c_buffers[2] = {c.new_empty(c.sizes()), c.new_empty(c.sizes())};
  run_steps(/*forward=*/true, T, [&](int64_t t, cudaStream_t stream) {
    if (!in_gates && t % chunk == 0) {
      const int64_t steps = std::min(chunk, T - t);
      product(pre.narrow(0, 0, steps).view({steps * B, 3 * S}), input.narrow(0, t, steps).reshape({steps * B, F}),
              w_x, /*accumulate=*/false);
    }
    const Tensor pre_t = pre.select(0, t % chunk);
    product(pre_t, h, w_h, /*accumulate=*/true);
    const Tensor& h_next = h_buffers[t % 2];
    const Tensor& c_next = c_buffers[t % 2];
    const cuda::StepState state{pre_t.const_data_ptr(), data_or_null(bias), h.const_data_ptr(), c.const_data_ptr(),
                                h_next.data_ptr(), c_next.data_ptr()};
    C10_CUDA_CHECK(cuda::launch_step_forward(p, t, state, kernel_dtype(dtype), stream));
    h = h_next;
    c = c_next;
  });
  r.h_n.copy_(h);
  r.c_n.copy_(c);
}

void cuda_backward(BackwardRecurrence& r) {
  const c10::cuda::CUDAGuard guard(r.gates.device());
  const Tensor weights = r.weights.contiguous(), lengths = device_lengths(r, r.gates);
  cuda::BackwardParams p{sequence_params(r, weights, lengths)};
  if (r.grad_output.defined()) {
    p.grad_output = r.grad_output.const_data_ptr();
    for (int d = 0; d < 3; ++d) p.grad_output_strides[d] = r.grad_output.stride(d);
  }
  p.grad_h_n = data_or_null(r.grad_h_n);
  p.grad_c_n = data_or_null(r.grad_c_n);
  p.d_h = r.d_h.data_ptr();
  p.d_c = r.d_c.data_ptr();
  const auto dtype = r.gates.scalar_type();
  if (use_persistent(p, dtype)) {
    // The kernel sums the bias gradient as it goes: no pass over the gate gradients after it.
    if (r.d_bias.defined()) p.d_bias = r.d_bias.data_ptr();
    if (run_persistent(p, r.gates)) {
      r.bias_summed = r.d_bias.defined();
      return;
    }
  }
  // The gradients carried between steps, in the opmath type.
  const auto math = at::toOpMathType(dtype);
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, math), d_c = carried_gradient(r.d_c, r.grad_c_n, math);
  const Tensor w_h_t = weights.narrow(1, 0, r.sizes.state).t();
  const int64_t T = r.sizes.time;
  run_steps(/*forward=*/false, T, [&](int64_t i, cudaStream_t stream) {
    const int64_t t = T - 1 - i;
    C10_CUDA_CHECK(cuda::launch_step_backward(p, t, d_h.data_ptr(), d_c.data_ptr(), kernel_dtype(dtype), stream));
    product(d_h, r.gates.select(0, t), w_h_t, /*accumulate=*/true);
  });
  r.d_h.copy_(d_h);
  r.d_c.copy_(d_c);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cuda::sequence_forward(
    const Tensor& input, const Tensor& weights, const Tensor& bias, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, std::optional<bool> for_backward) {
  return lltm::sequence_forward<cuda_forward>(input, weights, bias, h0, c0, lengths, for_backward);
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cuda::sequence_backward(
    const OptionalTensor& grad_output, const OptionalTensor& grad_h_n, const OptionalTensor& grad_c_n,
    const Tensor& input, const Tensor& weights, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, const Tensor& output, const Tensor& gates, const Tensor& cells,
    std::array<bool, 3> output_mask) {
  return lltm::sequence_backward<cuda_backward>(grad_output, grad_h_n, grad_c_n, input, weights, h0, c0, lengths,
                                                output, gates, cells, output_mask);
}

}  // namespace lltm
