// The backends' implementations of the operators, as ops.cpp registers them. Declared here,
// defined in the backend files, so that only ops.cpp includes torch's registration and autograd
// headers, which cost each file that includes them seconds of compile time. The schemas in ops.cpp
// document the arguments.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace lltm {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;

using StepForward = std::tuple<Tensor, Tensor, Tensor>(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                       const Tensor& old_h, const Tensor& old_cell);
using StepBackward = std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor& grad_h, const Tensor& grad_cell,
                                                                const Tensor& input, const Tensor& weights,
                                                                const Tensor& old_h, const Tensor& gates,
                                                                const Tensor& old_cell, std::array<bool, 3> output_mask);
using SequenceForward = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
    const Tensor& input, const Tensor& weights, const Tensor& bias, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, std::optional<bool> for_backward, bool paired);
using SequenceBackward = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
    const OptionalTensor& grad_output, const OptionalTensor& grad_h_n, const OptionalTensor& grad_c_n,
    const Tensor& input, const Tensor& weights, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, const Tensor& output, const Tensor& gates, const Tensor& cells,
    std::array<bool, 3> output_mask, bool paired);

// The sequences_at_once operator (its schema in ops.cpp says when), on checked arguments.
using SequencesAtOnce = bool(const Tensor& input, const Tensor& weights);

namespace cpu {
StepForward step_forward;              // cell_cpu.cpp
StepBackward step_backward;            // cell_cpu.cpp
SequenceForward sequence_forward;      // sequence_cpu.cpp
SequenceBackward sequence_backward;    // sequence_cpu.cpp
}  // namespace cpu

namespace cuda {
StepForward step_forward;              // cell_cuda.cpp
StepBackward step_backward;            // cell_cuda.cpp
SequenceForward sequence_forward;      // sequence_cuda.cpp
SequenceBackward sequence_backward;    // sequence_cuda.cpp
SequencesAtOnce sequences_at_once;     // sequence_cuda.cpp
}  // namespace cuda

}  // namespace lltm
