// The C++ API of lltm_jit: the LLTM cell, one step or a whole sequence, on at::Tensors, for
// libtorch programs that run without Python. Link the built library (`python -m lltm_jit build`
// names it and the flags; docs/deployment.md shows a CMake project).
//
// Each function calls the library's registered operator through the dispatcher, as
// torch.ops.lltm_jit.* does from Python: the same CPU and CUDA kernels, the same argument checks
// and messages (a c10::Error), and the same C++ autograd, so the results are differentiable with
// libtorch's autograd (loss.backward(), torch::optim) and take torch::autocast's lower precision.
//
// The cell: [input gate, output gate, candidate] = [old_h, input] weights^T + bias, three of S
// each; new_cell = old_cell + elu(candidate) * sigmoid(input gate), new_h = tanh(new_cell) *
// sigmoid(output gate).
//
// Shapes, with B the batch, F the input features, S the state size, T the time steps:
//   input     [B,F] (step) or [T,B,F] (sequence), time-major
//   weights   [3*S,S+F], multiplying [old_h, input] (the first S columns multiply h)
//   bias      [3*S] or [1,3*S]
//   old_h, old_cell, h0, c0   [B,S]
//   lengths   [B], int64, values in [0,T], best on the CPU
// Every floating tensor on one device (CPU or CUDA) and of one dtype: float64, float32, float16 or
// bfloat16. No argument is written to, and the outputs are new tensors. An undefined tensor where
// one is required raises c10::TypeError (a c10::Error).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

#if defined(_WIN32)
#define LLTM_JIT_API __declspec(dllexport)
#else
#define LLTM_JIT_API __attribute__((visibility("default")))
#endif

namespace lltm_jit {

// One step of the cell, lltm_jit.lltm in Python.
//   input: [B,F] the input at this step.
//   weights: [3*S,S+F] the cell's weights.
//   bias: [3*S] or [1,3*S] the cell's bias.
//   old_h: [B,S] the hidden state before the step.
//   old_cell: [B,S] the cell state before the step.
// Returns (new_h, new_cell), each [B,S].
LLTM_JIT_API std::tuple<at::Tensor, at::Tensor> lltm(const at::Tensor& input, const at::Tensor& weights,
                                                     const at::Tensor& bias, const at::Tensor& old_h,
                                                     const at::Tensor& old_cell);

// A whole sequence of steps in one call, lltm_jit.lltm_sequence in Python: on CUDA, one kernel
// launch each way where the recurrent weights fit on chip.
//   input: [T,B,F] the inputs of every step (time-major; transpose a [B,T,F] batch first).
//   weights: [3*S,S+F] the cell's weights.
//   bias: [3*S] or [1,3*S] the cell's bias.
//   h0, c0: [B,S] the initial hidden and cell state; std::nullopt for zeros.
//   lengths: [B] int64 the length of each sequence, or std::nullopt for T each: past its length a
//     sequence's state stays as it is and its output is zero.
// Returns (output, h_n, c_n): output [T,B,S] the hidden state after every step, h_n and c_n [B,S]
// the state after each sequence's last step. Under c10::InferenceMode, or where no input requires
// a gradient, it keeps nothing for a backward.
LLTM_JIT_API std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_sequence(
    const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
    const std::optional<at::Tensor>& h0 = std::nullopt, const std::optional<at::Tensor>& c0 = std::nullopt,
    const std::optional<at::Tensor>& lengths = std::nullopt);

}  // namespace lltm_jit
