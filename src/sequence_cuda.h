// The sequence operator's CUDA kernels, as the host code sees them (see cell_cuda.h).
#pragma once

#include "kernel_dtype.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace lltm::cuda {

// The largest thread-block cluster the persistent kernels plan for: the most blocks that sm_90 lets
// a launch opt in to (8 without opting in).
constexpr int kMaxCluster = 16;

// A sequence's tensors, each contiguous and of the dtype the launch names, except grad_output.
// Row b of step t of a (time, batch, n) tensor starts at (t * batch + b) * n. The base holds what
// both directions read; ForwardParams and BackwardParams add what each alone reads or writes, so
// that a kernel of one direction cannot be handed the other's.
struct SequenceParams {
  int64_t time, batch, state;
  int multiprocessors;     // what the persistent kernels' tilings plan for
  int copies;              // launches of these sizes that run at once, each on a stream of its own
                           // (2: a bidirectional layer's directions, where sequences_at_once said
                           // so): the CUDA-core kernels' tiling leaves the device room for all
  size_t shared_memory_per_block;  // the most a block may opt in to
  bool cooperative;        // the device runs cooperative launches (blocks that wait for each other)
  bool tensor_cores;       // the half types' persistent kernels may run on tensor cores (sm_80
                           // and later, and LLTM_JIT_TENSOR_CORES is not 0)
  bool streamed;           // the forward runs the streamed kernel (the host's choice: streamed_fits)
  int resident_clusters[kMaxCluster + 1];  // [n]: how many clusters of n blocks, a block a
                           // multiprocessor, the device holds at once (plan_clusters); 0 where the
                           // kernels may not run as clusters
  const int64_t* lengths;  // (batch,) on the device; nullptr: every sequence is `time` steps long
  const void* weights;     // (3 * state, ld); the recurrent block W_h is its first `state` columns
  int64_t weights_ld;
  const void* c0;          // (batch, state); nullptr: zeros
  void* gates;             // (time, batch, 3 * state): the pre-activations; the backward overwrites
                           // them with their gradients
  void* cells;             // (time, batch, state): the cell state after each step; in the forward
                           // nullptr where no backward follows, and the forward then writes neither
                           // it nor, in the persistent kernel, the pre-activations back to gates
  void* workspace;         // persistent_workspace_bytes of the launch's direction
};

struct ForwardParams : SequenceParams {
  const void* h0;          // (batch, state); nullptr: zeros
  void* output;            // (time, batch, state)
  void* h_n;               // (batch, state)
  void* c_n;
};

struct BackwardParams : SequenceParams {
  const void* grad_output;          // nullptr: zero
  int64_t grad_output_strides[3];   // of (time, batch, state), in elements
  const void* grad_h_n;    // (batch, state): the gradient of h_n; nullptr: zero
  const void* grad_c_n;    // likewise of c_n
  void* d_h;               // (batch, state): receives the gradient of h0
  void* d_c;               // likewise of c0
  void* d_bias;            // (3 * state,): where given, the persistent backward writes the bias
                           // gradient, summed over the steps as they go
};

// Fills p.resident_clusters for the current device, for clusters of at most `largest` blocks
// (sm_90 and later; zeros before it), asking the runtime once per device.
void plan_clusters(SequenceParams& p, int largest);

// The persistent kernels run every step in one launch, with W_h in the shared memory of one block
// or split over several: whether they can for these sizes and dtype on the current device (on
// tensor cores, or else on CUDA cores, for each direction, as tiled for p.copies launches); with
// copies > 1, whether that many launches of each direction's kernel (sequences of the same sizes
// on streams of their own) fit on the device together, every block on a multiprocessor of its own.
bool persistent_fits(const SequenceParams& p, DType dtype, int copies = 1);

// Whether the half types' streamed forward (p.streamed: tensor_core_streamed.cuh, the forward alone)
// fits these sizes and dtype on the current device, one launch; with `by_default`, only where it
// also runs unasked (streamed_by_default).
bool streamed_fits(const SequenceParams& p, DType dtype, bool by_default);

// The device memory a persistent launch of that direction needs beside the tensors (what its
// blocks exchange where W_h is split over several, the groups' d_bias sums where there are
// several groups of rows, and their counters): p.workspace, of the launch's stream.
size_t persistent_workspace_bytes(const ForwardParams& p, DType dtype);
size_t persistent_workspace_bytes(const BackwardParams& p, DType dtype);

// Forward of every step: `gates` holds the input projection (input W_x^T + bias) and, where cells
// is given, receives the pre-activations; writes output, cells (where given), h_n and c_n.
// Backward of every step, from grad_h_n and grad_c_n: leaves the gate gradients in `gates`, the
// gradients of h0 and c0 in d_h and d_c, and where d_bias is given the bias gradient in it.
// Either returns cudaErrorCooperativeLaunchTooLarge, having launched nothing, where the tiling's
// blocks must all be resident at once and the device (shared, or with fewer multiprocessors than
// p.multiprocessors) cannot hold them: the caller then runs the per-step path.
cudaError_t launch_persistent(const ForwardParams& p, DType dtype, cudaStream_t stream);
cudaError_t launch_persistent(const BackwardParams& p, DType dtype, cudaStream_t stream);

// The step path runs in the dtype's opmath type (float for the half types): the pre-activations
// are summed, and the cell state and both gradients carried between steps are kept, in it; h is
// rounded to the dtype, as the next step's product reads it and the output holds it.

// A step's product in `count` parts that the step kernel sums (opmath, `stride` elements apart),
// which the host splits over k where that fills more of the GPU (split-K).
struct StepParts {
  const void* sums;
  int count;
  int64_t stride;
};

// Around forward step t: its pre-activations' sums so far (opmath, (batch, 3 * state)), to which
// the step adds the bias (the dtype, (3 * state,)) where given and gates[t] where add_gates, h and
// the cell state (opmath) before it, and where it writes them (past a sequence's end, copies of
// those).
struct StepState {
  const void* pre;
  const void* bias;
  bool add_gates;
  const void* h_prev;
  const void* c_prev;
  void* h_next;
  void* c_next;
};

// Forward step t alone: the cell update, written to output[t], h_next, c_next and, when given,
// cells[t] and (the pre-activations in the dtype, for the backward) gates[t]. Where `parts` has
// more than one (float32 and float64), state.pre is their first, and the step adds the others.
cudaError_t launch_step_forward(const ForwardParams& p, int64_t t, const StepState& state, StepParts parts,
                                DType dtype, cudaStream_t stream);

// Backward step t alone, with the gradient of the cell state after it in d_c and of h in `parts`
// (step t + 1's d_gates W_h, (batch, state) a part) where step t + 1 ran for the row, else in d_h
// (opmath, (batch, state): what was carried past the row's last step): gates[t] becomes its
// gradient, as does d_gates (the dtype, (batch, 3 * state)), and d_c that of the cell before step
// t, for the host to make the parts of d_gates W_h.
cudaError_t launch_step_backward(const BackwardParams& p, int64_t t, const void* d_h, void* d_c, void* d_gates,
                                 StepParts parts, DType dtype, cudaStream_t stream);

// The kernel that launch_step_forward (forward; with `parts`: of more than one) or
// launch_step_backward launches for `dtype`, whose argument 1 is the time step, and its number of
// arguments: the host finds its launches in a CUDA graph by it and sets their arguments.
struct StepKernel {
  const void* function;
  int arguments;
};
StepKernel step_kernel(DType dtype, bool forward, bool parts = false);

}  // namespace lltm::cuda
