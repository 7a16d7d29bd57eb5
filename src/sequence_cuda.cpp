// The sequence operator's CUDA backend: the persistent kernels where W_h fits in the shared memory
// of one block or of a group of blocks, else a loop of one cuBLAS product and one fused kernel per
// step each way; no host synchronisation either way.
#include "sequence.h"
#include "cuda_blas.h"
#include "cuda_device.h"
#include "kernels.h"
#include "sequence_cuda.h"

#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace lltm {
namespace {

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.const_data_ptr() : nullptr;
}

// Whether environment variable `name` is set to `value` (the switches below read it at each call,
// for tests and A/B timing).
bool env_is(const char* name, const char* value) {
  const char* given = std::getenv(name);
  return given != nullptr && std::strcmp(given, value) == 0;
}

// LLTM_JIT_TENSOR_CORES=0 keeps the half types' persistent kernels on CUDA cores.
bool tensor_cores_allowed() { return !env_is("LLTM_JIT_TENSOR_CORES", "0"); }

// LLTM_JIT_CLUSTERS=N caps the persistent kernels' thread-block clusters at N blocks; 0 keeps
// their blocks out of clusters (their groups then exchange through L2 and wait at counters there).
int largest_cluster() {
  const char* given = std::getenv("LLTM_JIT_CLUSTERS");
  return given != nullptr && *given != '\0' ? std::max(0, std::min(std::atoi(given), cuda::kMaxCluster))
                                             : cuda::kMaxCluster;
}

// LLTM_JIT_MULTIPROCESSORS=N plans the persistent kernels' tilings for N multiprocessors rather
// than the device's (for tests of the fallback where the device cannot hold a tiling's blocks at
// once; read at each call).
int planned_multiprocessors() {
  const char* given = std::getenv("LLTM_JIT_MULTIPROCESSORS");
  return given != nullptr && std::atoi(given) > 0 ? std::atoi(given)
                                                  : cuda::device_attribute(cudaDevAttrMultiProcessorCount);
}

// What the persistent kernels' tilings are planned from: the sizes, the launches of them that run
// at once (paired: two), and the current device.
cuda::SequenceParams planning_params(int64_t batch, int64_t state, bool paired) {
  cuda::SequenceParams p{};
  p.batch = batch;
  p.state = state;
  p.copies = paired ? 2 : 1;
  p.multiprocessors = planned_multiprocessors();
  p.shared_memory_per_block = cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p.cooperative = cuda::device_attribute(cudaDevAttrCooperativeLaunch) != 0;
  p.tensor_cores = cuda::device_attribute(cudaDevAttrComputeCapabilityMajor) >= 8 && tensor_cores_allowed();
  cuda::plan_clusters(p, largest_cluster());
  return p;
}

// What both directions pass to the kernels. The kernels read W_h through a row stride, with unit
// column stride: `weights` is r.weights made contiguous, and `lengths` the device copy
// (device_lengths); the caller keeps both alive.
cuda::SequenceParams sequence_params(const Recurrence& r, const Tensor& weights, const Tensor& lengths) {
  cuda::SequenceParams p = planning_params(r.sizes.batch, r.sizes.state, r.paired);
  p.time = r.sizes.time;
  p.weights = weights.const_data_ptr();
  p.weights_ld = weights.stride(0);
  p.c0 = data_or_null(r.c0);
  p.gates = r.gates.data_ptr();
  p.cells = r.cells.defined() ? r.cells.data_ptr() : nullptr;
  p.lengths = lengths.defined() ? lengths.const_data_ptr<int64_t>() : nullptr;
  return p;
}

// LLTM_JIT_SEQUENCE_KERNEL=step takes the per-step loop even where the persistent kernels fit.
bool persistent_allowed() { return !env_is("LLTM_JIT_SEQUENCE_KERNEL", "step"); }

// Whether the persistent kernels run the call: both directions' fit (a persistent forward beside
// a per-step backward, or the reverse, was never measured against both per-step). A paired call
// for which no tiling for two exists (called alone, or at sizes sequences_at_once refuses) takes
// one launch's tiling rather than the per-step path.
bool use_persistent(cuda::SequenceParams& p, at::ScalarType dtype) {
  if (!persistent_allowed()) return false;
  if (cuda::persistent_fits(p, kernel_dtype(dtype))) return true;
  if (p.copies == 1) return false;
  p.copies = 1;
  return cuda::persistent_fits(p, kernel_dtype(dtype));
}

// Whether the forward runs persistent: as use_persistent, or on the streamed kernel (p.streamed),
// which LLTM_JIT_SEQUENCE_KERNEL=streamed takes wherever it fits and the default where no pair of
// persistent kernels does and streamed_by_default says so (the backward then runs per step).
bool use_persistent_forward(cuda::SequenceParams& p, at::ScalarType dtype) {
  if (!persistent_allowed()) return false;
  const bool forced = env_is("LLTM_JIT_SEQUENCE_KERNEL", "streamed");
  if (!forced && use_persistent(p, dtype)) return true;
  const int copies = p.copies;
  p.copies = 1;  // a streamed launch fills the device: those of a pair run one after the other
  p.streamed = cuda::streamed_fits(p, kernel_dtype(dtype), /*by_default=*/!forced);
  if (p.streamed) return true;
  p.copies = copies;  // forced where the streamed kernel does not fit: the pair's tiling, as unforced
  return forced && use_persistent(p, dtype);
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

// How cuBLAS reads a matrix (rows x columns) in place: row-major (unit column stride) or
// column-major, with its leading dimension. A dimension of size 1 leaves its stride free, which
// then need not be one cuBLAS accepts (at least the other dimension's size): any such works.
struct Layout {
  bool rows;
  int64_t ld;
};

std::optional<Layout> layout(const Tensor& t) {
  const int64_t m = t.size(0), n = t.size(1);
  if ((n == 1 || t.stride(1) == 1) && (m == 1 || t.stride(0) >= n)) return Layout{true, m == 1 ? n : t.stride(0)};
  if ((m == 1 || t.stride(0) == 1) && (n == 1 || t.stride(1) >= m)) return Layout{false, n == 1 ? m : t.stride(1)};
  return std::nullopt;
}

// t, or a contiguous copy where cuBLAS cannot read it in place (product's operands).
Tensor in_place_or_copy(const Tensor& t) { return layout(t) ? t : t.contiguous(); }

// out = a b^T, or out += a b^T where `accumulate`, for a (m, k) and b (n, k) of one dtype that
// cuBLAS reads in place (in_place_or_copy; a transposed view is read as it is), and out (m, n)
// row-major, of that dtype or its opmath type: cuBLAS where it is loaded, else ATen (in out's
// dtype). The column-major call computes out^T (n x m) = b (n x k) a^T (k x m), a row-major
// operand's column-major memory holding its transpose. An out of (parts, m, n) takes the product
// split over k (split-K): out[i] = a[:, K_i] b[:, K_i]^T for K_i the i-th of `parts` equal slices.
void product(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  const int64_t parts = out.dim() == 3 ? out.size(0) : 1, k = a.size(1) / parts;
  const Tensor first = out.dim() == 3 ? out.select(0, 0) : out;
  const std::optional<Layout> la = layout(a), lb = layout(b), lc = layout(first);
  TORCH_INTERNAL_ASSERT(la && lb && lc && lc->rows && k * parts == a.size(1),
                        "lltm_jit: a product's operands are not in cuBLAS's layouts");
  // cuBLAS takes int sizes and leading dimensions; past them, ATen's product (which takes int64)
  constexpr int64_t most = std::numeric_limits<int>::max();
  const bool fits = std::max({a.size(0), a.size(1), b.size(0), la->ld, lb->ld, lc->ld}) <= most;
  if (!cublas::available() || !fits) {
    for (int64_t i = 0; i < parts; ++i) {
      const Tensor a_out = a.narrow(1, i * k, k).to(out.scalar_type());
      const Tensor b_out = b.narrow(1, i * k, k).to(out.scalar_type()).t();
      aten_product_into(out.dim() == 3 ? out.select(0, i) : out, a_out, b_out, accumulate);
    }
    return;
  }
  // Slice i + 1 of an operand starts k columns after slice i: along a row-major operand's rows, or
  // k leading dimensions on in a column-major one.
  const auto slice = [k](const Layout& l) { return static_cast<long long>(l.rows ? k : k * l.ld); };
  const cublas::Batch batch{static_cast<int>(parts), slice(*lb), slice(*la), parts > 1 ? out.stride(0) : 0};
  cublas::gemm(a.scalar_type(), out.scalar_type(), lb->rows ? cublas::T : cublas::N, la->rows ? cublas::N : cublas::T,
               b.size(0), a.size(0), k, b.const_data_ptr(), lb->ld, a.const_data_ptr(), la->ld, out.data_ptr(), lc->ld,
               accumulate, batch);
}

// out = a b, or out += a b where `accumulate`, through `product` (sequence.h's ProductInto), each
// operand read in place where cuBLAS can.
void cuda_product_into(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  product(out, in_place_or_copy(a), in_place_or_copy(b).t(), accumulate);
}

// The products after the recurrence (sequence.h's SequenceProducts) through `product`: cuBLAS
// called directly costs the host a fraction of ATen's dispatch, which bounds small sequences'
// backward (benchmarks/NOTES.md, "Session 27"). The same products as aten_sequence_products.
std::pair<Tensor, Tensor> cuda_sequence_products(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                                 const Tensor& weights, const Tensor& h0, const Tensor& output,
                                                 bool want_input, bool want_weights) {
  const int64_t rows = s.time * s.batch;
  if (!cublas::available() || rows == 0) {  // cuBLAS leaves a product over k = 0 undefined
    return aten_sequence_products(s, d_gates, input, weights, h0, output, want_input, want_weights);
  }
  // The backward operator runs on whichever device is current (the dispatcher sets none), and
  // torch's cuBLAS handle is the current device's, on its current stream.
  const c10::cuda::CUDAGuard guard(d_gates.device());
  Tensor d_input, d_weights;
  if (want_input) {  // d_gates W_x
    d_input = input.new_empty({s.time, s.batch, s.features});
    cuda_product_into(d_input.view({rows, s.features}), d_gates, weights.narrow(1, s.state, s.features),
                      /*accumulate=*/false);
  }
  if (want_weights) d_weights = sequence_weights_gradient<cuda_product_into>(s, d_gates, input, h0, output);
  return {d_input, d_weights};
}

// LLTM_JIT_STEP_GRAPHS=0 launches the step path's steps one by one rather than as a CUDA graph.
bool step_graphs_allowed() { return !env_is("LLTM_JIT_STEP_GRAPHS", "0"); }

// The step path's loop as replays of one CUDA graph. A step is a cuBLAS product (one or two
// kernels) and our step kernel, launches that cost the host more than the device's work at these
// sizes (benchmarks/NOTES.md, "Session 15"). Every pointer a step's launches take is the same from
// one period of steps to the next (state buffers that alternate with the step's parity, buffers of
// the products that each period reuses), so a stream capture records the first period's launches
// once, and each period replays that graph with only our kernels' time step changed. The capture
// runs on a stream of the thread's own, which no other thread's work can join (torch's default
// stream, the legacy one, cannot be captured at all); the graph runs on the caller's stream.
struct StepLoop {
  int64_t count;            // steps
  int64_t period;           // steps a graph holds: even
  int64_t t_stride;         // 1: step i is time step i; -1: time step count - 1 - i
  cuda::StepKernel kernel;  // our step kernel, whose argument 1 is the time step
};

// This thread's capture stream for graphs that run on `caller`: one a caller's stream, since the
// graphs' cuBLAS products use torch's workspace of the capture stream, and graphs on two streams
// may run at once.
cudaStream_t capture_stream(const c10::cuda::CUDAStream& caller) {
  struct Streams {
    std::map<std::pair<c10::DeviceIndex, cudaStream_t>, cudaStream_t> by_caller;
    ~Streams() {  // at the thread's end; errors once the process is tearing CUDA down do not matter
      for (const auto& [caller, stream] : by_caller) cudaStreamDestroy(stream);
    }
  };
  thread_local Streams streams;
  cudaStream_t& stream = streams.by_caller[{caller.device_index(), caller.stream()}];
  if (stream == nullptr) C10_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, cudaError_t (*)(cudaGraph_t)>;
// Destroyed while launched, it is freed once those launches are done.
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, cudaError_t (*)(cudaGraphExec_t)>;

// The graph of what enqueue() launches on `capture`. Relaxed: whatever it calls (a lazily loaded
// kernel's module, an allocation) is allowed.
template <typename Enqueue>
Graph record(cudaStream_t capture, Enqueue&& enqueue) {
  C10_CUDA_CHECK(cudaStreamBeginCapture(capture, cudaStreamCaptureModeRelaxed));
  cudaGraph_t recorded = nullptr;
  try {
    enqueue();
  } catch (...) {
    if (cudaStreamEndCapture(capture, &recorded) == cudaSuccess && recorded != nullptr) cudaGraphDestroy(recorded);
    (void)cudaGetLastError();
    throw;
  }
  C10_CUDA_CHECK(cudaStreamEndCapture(capture, &recorded));
  return Graph(recorded, cudaGraphDestroy);
}

// The graph's launches of `kernel`, with their parameters and time steps.
struct KernelNode {
  cudaGraphNode_t node;
  cudaKernelNodeParams params;
  int64_t t;
};

std::vector<KernelNode> kernel_nodes(cudaGraph_t graph, const void* kernel) {
  size_t count = 0;
  C10_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  C10_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::vector<KernelNode> found;
  for (const cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    C10_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    cudaKernelNodeParams params{};
    if (type != cudaGraphNodeTypeKernel || cudaGraphKernelNodeGetParams(node, &params) != cudaSuccess) {
      (void)cudaGetLastError();  // not a kernel, or cuBLAS's, launched through the driver
      continue;
    }
    if (params.func == kernel) found.push_back({node, params, *static_cast<const int64_t*>(params.kernelParams[1])});
  }
  return found;
}

// The loop's whole periods as replays (see StepLoop); returns how many steps they hold.
template <typename Prepare, typename Step>
int64_t replay_periods(const StepLoop& loop, c10::cuda::CUDAStream stream, Prepare& prepare, Step& step) {
  const cudaStream_t capture = capture_stream(stream);
  Graph graph(nullptr, cudaGraphDestroy);
  {
    const c10::cuda::CUDAStreamGuard current(c10::cuda::getStreamFromExternal(capture, stream.device_index()));
    cublas::handle();  // allocates torch's cuBLAS workspace for this stream now, not in the capture
    graph = record(capture, [&] {
      for (int64_t i = 0; i < loop.period; ++i) step(i, capture);
    });
  }
  cudaGraphExec_t instantiated = nullptr;
  C10_CUDA_CHECK(cudaGraphInstantiate(&instantiated, graph.get(), 0));
  const GraphExec exec(instantiated, cudaGraphExecDestroy);
  const std::vector<KernelNode> ours = kernel_nodes(graph.get(), loop.kernel.function);
  // Where our launches cannot be told apart, the graph runs once and the other periods step by step.
  const int64_t periods = static_cast<int64_t>(ours.size()) == loop.period ? loop.count / loop.period : 1;
  std::vector<void*> args(loop.kernel.arguments);
  for (int64_t k = 0; k < periods; ++k) {
    if (k > 0) {  // the first period runs as recorded
      for (const KernelNode& n : ours) {
        int64_t t = n.t + k * loop.period * loop.t_stride;
        std::copy(n.params.kernelParams, n.params.kernelParams + args.size(), args.begin());
        args[1] = &t;  // the call copies the arguments
        cudaKernelNodeParams params = n.params;
        params.kernelParams = args.data();
        C10_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec.get(), n.node, &params));
      }
    }
    prepare(k * loop.period, loop.period, stream.stream());
    C10_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream.stream()));
  }
  return periods * loop.period;
}

// Runs the loop: before the steps of each period, prepare(i, n, stream) enqueues what steps
// [i, i + n) need that is not in the graph; step(i, stream) enqueues step i. As replays of a graph
// where cuBLAS is loaded (ATen's products, the fallback, allocate), the steps fill a period, and
// the caller's stream is not being captured already; there (a CUDA graph of the caller's,
// torch.compile's cudagraphs) the steps join that capture as they are. The steps past the last
// whole period run one by one.
template <typename Prepare, typename Step>
void run_steps(const StepLoop& loop, Prepare&& prepare, Step&& step) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream.stream(), &capture));
  int64_t i = 0;
  if (cublas::available() && step_graphs_allowed() && capture == cudaStreamCaptureStatusNone &&
      loop.count >= loop.period) {
    i = replay_periods(loop, stream, prepare, step);
  }
  for (; i < loop.count; i += loop.period) {
    const int64_t n = std::min(loop.period, loop.count - i);
    prepare(i, n, stream.stream());
    for (int64_t k = i; k < i + n; ++k) step(k, stream.stream());
  }
}

// The steps a graph holds (and, in the half types' forward, whose input projection one product
// makes): at most kGraphSteps, and an even number of at most kProjectionRows rows where the batch
// allows it.
constexpr int64_t kGraphSteps = 8;
constexpr int64_t kProjectionRows = 2048;

int64_t step_period(int64_t batch) {
  return std::clamp<int64_t>(kProjectionRows / std::max<int64_t>(batch, 1) / 2 * 2, 2, kGraphSteps);
}

// At most `parts` slices of a product's k that cuBLAS takes at once: each of at least 256, each
// keeping 16-byte alignment; one where cuBLAS is not loaded (ATen's products, one by one).
int64_t split_parts(int64_t parts, int64_t k) {
  if (!cublas::available()) return 1;
  while (parts > 1 && (k % (8 * parts) != 0 || k / parts < 256)) parts /= 2;
  return parts;
}

// The forward's h W_h^T (batch x state, state x 3 state) in 2 parts: float32 and float64 without
// TF32, at most 2^20 outputs, where the parts measured faster (NOTES "Sessions 49" and "52");
// TF32 and the half types, whose forward sums onto the input projection, gained nothing.
int64_t forward_parts(at::ScalarType dtype, int64_t batch, int64_t state) {
  if (batch == 0 || at::isReducedFloatingType(dtype) || cublas::tf32(dtype) || batch * 3 * state > (1 << 20)) return 1;
  return split_parts(2, state);
}

void cuda_forward(ForwardRecurrence& r) {
  const c10::cuda::CUDAGuard guard(r.gates.device());
  const Tensor weights = r.weights.contiguous(), lengths = device_lengths(r, r.gates);
  cuda::ForwardParams p{sequence_params(r, weights, lengths)};
  // The streamed forward copies h0 16 bytes at a time: a view that starts between them goes through
  // an aligned copy.
  const Tensor h0 = r.h0.defined() && reinterpret_cast<uintptr_t>(r.h0.data_ptr()) % 16 != 0 ? r.h0.clone() : r.h0;
  p.h0 = data_or_null(h0);
  p.output = r.output.data_ptr();
  p.h_n = r.h_n.data_ptr();
  p.c_n = r.c_n.data_ptr();
  const auto dtype = r.gates.scalar_type();
  // The step path sums the pre-activations in the opmath type. float32 and float64 project every
  // step's input at once, into gates (as the persistent kernels need it), and the step kernel adds
  // gates[t] to the step's product h W_h^T. The half types sum in a float buffer of a period's
  // steps, which one product fills with their input projection (the whole sequence's would double
  // the forward's memory) and each step's product adds to, the step kernel adding the bias. The
  // step kernel writes the pre-activations to gates for the backward. The persistent kernels
  // read every step's projection, bias included, from gates in the storage type: a float copy
  // would take twice the saved pre-activations' memory, and their half-type gradients over long
  // sequences drift further from the exact ones for it (benchmarks/NOTES.md, "Session 44").
  const auto math = at::toOpMathType(dtype);
  const bool in_gates = math == dtype;
  const bool persistent = use_persistent_forward(p, dtype);
  if (persistent || in_gates) project_input(r);
  if (persistent && run_persistent(p, r.gates)) return;
  const int64_t S = r.sizes.state, B = r.sizes.batch, F = r.sizes.features, T = r.sizes.time;
  const int64_t period = step_period(B);
  const Tensor w_h = weights.narrow(1, 0, S), w_x = weights.narrow(1, S, F);
  // float32 and float64: the step's product, in parts where forward_parts splits it; the half
  // types: the period's steps, one part each
  const int64_t parts = in_gates ? forward_parts(dtype, B, S) : 1;
  const Tensor pre = r.gates.new_empty({in_gates ? parts : period, B, 3 * S}, r.gates.options().dtype(math));
  const Tensor input = in_gates ? r.input : r.input.contiguous(), bias = in_gates ? r.bias : r.bias.contiguous();
  // Two buffers each of h and the cell state, step t reading those of t + 1's parity and writing
  // those of t's: the initial state goes to those of parity 1.
  Tensor h_buffers[2], c_buffers[2];
  for (int parity : {0, 1}) {
    h_buffers[parity] = r.h_n.new_empty(r.h_n.sizes());
    c_buffers[parity] = r.c_n.new_empty(r.c_n.sizes(), r.c_n.options().dtype(math));
  }
  r.h0.defined() ? h_buffers[1].copy_(r.h0) : h_buffers[1].zero_();
  r.c0.defined() ? c_buffers[1].copy_(r.c0) : c_buffers[1].zero_();
  const auto project = [&](int64_t t, int64_t steps, cudaStream_t) {
    if (in_gates) return;
    product(pre.narrow(0, 0, steps).view({steps * B, 3 * S}), input.narrow(0, t, steps).reshape({steps * B, F}), w_x,
            /*accumulate=*/false);
  };
  const auto kind = kernel_dtype(dtype);
  const auto step = [&](int64_t t, cudaStream_t stream) {
    const Tensor pre_t = parts > 1 ? pre : pre.select(0, in_gates ? 0 : t % period);
    const Tensor &h = h_buffers[(t + 1) % 2], &c = c_buffers[(t + 1) % 2];
    product(pre_t, h, w_h, /*accumulate=*/!in_gates);
    cuda::StepState state{};
    state.pre = pre_t.const_data_ptr();
    state.bias = in_gates ? nullptr : bias.const_data_ptr();
    state.add_gates = in_gates;
    state.h_prev = h.const_data_ptr();
    state.c_prev = c.const_data_ptr();
    state.h_next = h_buffers[t % 2].data_ptr();
    state.c_next = c_buffers[t % 2].data_ptr();
    const cuda::StepParts more{state.pre, static_cast<int>(parts), B * 3 * S};
    C10_CUDA_CHECK(cuda::launch_step_forward(p, t, state, more, kind, stream));
  };
  run_steps(StepLoop{T, period, 1, cuda::step_kernel(kind, /*forward=*/true, parts > 1)}, project, step);
  r.h_n.copy_(h_buffers[(T + 1) % 2]);
  r.c_n.copy_(c_buffers[(T + 1) % 2]);
}

// The parts of the backward step's product d_gates W_h (batch x 3 state, 3 state x state), split
// over its k (split-K): at a small batch its output is a few of cuBLAS's tiles, which leave most
// multiprocessors idle, and the parts fill more of them; the step kernel reads every part. Up to
// batch 256 the half types ask for 4 and float32 for 8; each doubling of the batch past it doubles
// the tiles and halves the count asked for, and TF32, whose parts there were no faster, takes one
// (NOTES "Sessions 49" and "53"). (float64 splits as float32 does, which lets the tests check the
// parts exactly.)
int64_t backward_parts(at::ScalarType dtype, int64_t batch, int64_t state) {
  if (batch == 0 || (batch > 256 && cublas::tf32(dtype))) return 1;
  int64_t parts = at::isReducedFloatingType(dtype) ? 4 : 8;
  for (int64_t rows = 256; rows < batch && parts > 1; rows *= 2) parts /= 2;
  return split_parts(parts, 3 * state);
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
  // The gradients carried between steps, in the opmath type: the cell state's in d_c, h's in the
  // parts of the product d_gates W_h of the step after (whose sum the step kernel takes), and in
  // d_h where no step ran after (grad_h_n, passed on past a sequence's end); the step's gate
  // gradients, which the step kernel also writes to gates, in a buffer of their own that every
  // step's product reads (the pointers the same at every step: see StepLoop).
  const auto math = at::toOpMathType(dtype);
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, math), d_c = carried_gradient(r.d_c, r.grad_c_n, math);
  const int64_t B = r.sizes.batch, S = r.sizes.state;
  const Tensor parts = d_h.new_empty({backward_parts(dtype, B, S), B, S});
  const cuda::StepParts step_parts{parts.const_data_ptr(), static_cast<int>(parts.size(0)), B * S};
  const Tensor d_gates = r.gates.new_empty({B, 3 * S});
  // W_h^T, which every step's product reads. With TF32 products, a row-major copy made once a
  // call: cuBLAS reads W_h transposed in place through a slower kernel there, an sm80 one
  // (benchmarks/NOTES.md, "Session 17"). Without TF32 the copy does not pay.
  const Tensor w_h_t = weights.narrow(1, 0, S).t();
  const Tensor w_h_rows = cublas::tf32(dtype) ? w_h_t.contiguous() : w_h_t;
  const int64_t T = r.sizes.time;
  const auto kind = kernel_dtype(dtype);
  const auto step = [&](int64_t i, cudaStream_t stream) {
    C10_CUDA_CHECK(cuda::launch_step_backward(p, T - 1 - i, d_h.const_data_ptr(), d_c.data_ptr(),
                                              d_gates.data_ptr(), step_parts, kind, stream));
    product(parts, d_gates, w_h_rows, /*accumulate=*/false);
  };
  run_steps(StepLoop{T, step_period(B), -1, cuda::step_kernel(kind, /*forward=*/false)},
            [](int64_t, int64_t, cudaStream_t) {}, step);
  // h0's gradient: the first step's product where that step ran, else what was carried
  if (T > 0) {
    Tensor summed = parts.size(0) > 1 ? parts.sum(0) : parts.select(0, 0);
    if (lengths.defined()) summed = summed.where(lengths.gt(0).unsqueeze(1), d_h);
    r.d_h.copy_(summed);
  } else {
    r.d_h.copy_(d_h);
  }
  r.d_c.copy_(d_c);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cuda::sequence_forward(
    const Tensor& input, const Tensor& weights, const Tensor& bias, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, std::optional<bool> for_backward, bool paired) {
  return lltm::sequence_forward<cuda_forward>(input, weights, bias, h0, c0, lengths, for_backward, paired);
}

bool cuda::sequences_at_once(const Tensor& input, const Tensor& weights) {
  if (env_is("LLTM_JIT_SEQUENCES_AT_ONCE", "0") || input.size(1) == 0) return false;
  // The step path's products fill the device, or nearly, at the sizes it runs.
  if (!persistent_allowed()) return false;
  const c10::cuda::CUDAGuard guard(input.device());
  return cuda::persistent_fits(planning_params(input.size(1), weights.size(0) / 3, /*paired=*/true),
                               kernel_dtype(input.scalar_type()), /*copies=*/2);
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cuda::sequence_backward(
    const OptionalTensor& grad_output, const OptionalTensor& grad_h_n, const OptionalTensor& grad_c_n,
    const Tensor& input, const Tensor& weights, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, const Tensor& output, const Tensor& gates, const Tensor& cells,
    std::array<bool, 3> output_mask, bool paired) {
  return lltm::sequence_backward<cuda_backward, cuda_sequence_products>(grad_output, grad_h_n, grad_c_n, input, weights,
                                                                        h0, c0, lengths, output, gates, cells,
                                                                        output_mask, paired);
}

}  // namespace lltm
