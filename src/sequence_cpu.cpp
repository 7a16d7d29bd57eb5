// The sequence operator's CPU backend: the recurrence as a loop in C++, one product and one fused
// pass (the cell's, cell_cpu.h) per step each way.
#include "cell_cpu.h"
#include "kernels.h"
#include "sequence.h"

namespace lltm {
namespace {

// Rows (batch, 1) that step t runs: those of sequences longer than t.
Tensor running(const Recurrence& r, int64_t t) {
  return r.lengths.gt(t).unsqueeze(1);
}

void cpu_forward(Recurrence& r) {
  const SequenceSizes& s = r.sizes;
  const Tensor w_h = r.weights.narrow(1, 0, s.state);
  project_input(r);
  // The state before the step; without cells (no backward follows), the new cell state goes to
  // two buffers in turn (the fused pass may not write over the state it reads).
  const auto dtype = r.h_n.scalar_type();
  Tensor h = state_or_zeros(r.h0, r.h_n, dtype), c = state_or_zeros(r.c0, r.c_n, dtype);
  const bool keep = r.cells.defined();
  const Tensor buffers[2] = {keep ? Tensor() : c.new_empty(c.sizes()), keep ? Tensor() : c.new_empty(c.sizes())};
  for (int64_t t = 0; t < s.time; ++t) {
    Tensor gates = r.gates.select(0, t), output = r.output.select(0, t);
    Tensor new_c = keep ? r.cells.select(0, t) : buffers[t % 2];
    gates.addmm_(h, w_h.t());
    cpu::forward(gates, c, output, new_c);
    if (r.lengths.defined()) {
      const Tensor run = running(r, t);
      h = output.where(run, h);
      new_c.copy_(new_c.where(run, c));
      output.masked_fill_(run.logical_not(), 0);
    } else {
      h = output;
    }
    c = new_c;
  }
  r.h_n.copy_(h);
  r.c_n.copy_(c);
}

void cpu_backward(Recurrence& r) {
  const SequenceSizes& s = r.sizes;
  const Tensor w_h = r.weights.narrow(1, 0, s.state);
  const auto dtype = r.d_h.scalar_type();
  // The gradients of h and of the cell state after the step at hand.
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, dtype), d_c = carried_gradient(r.d_c, r.grad_c_n, dtype);
  const Tensor c0 = state_or_zeros(r.c0, d_c, dtype);
  for (int64_t t = s.time - 1; t >= 0; --t) {
    Tensor gates = r.gates.select(0, t);
    const Tensor c_prev = t > 0 ? r.cells.select(0, t - 1) : c0;
    // d_h becomes the gradient of h after step t: from the steps after it and from the output.
    const Tensor d_h_next = r.lengths.defined() ? d_h.clone() : d_h;
    if (r.grad_output.defined()) d_h.add_(r.grad_output.select(0, t));
    // In place: each row's pre-activations become its gate gradients, and d_c that of c_prev.
    const Tensor d_c_next = r.lengths.defined() ? d_c.clone() : d_c;
    cpu::backward(d_h, d_c_next, gates, c_prev, gates, d_c, Tensor());
    if (r.lengths.defined()) {
      // Past a sequence's end the step did not run: no gate gradients, d_h and d_c pass through.
      const Tensor run = running(r, t);
      gates.masked_fill_(run.logical_not(), 0);
      d_c.copy_(d_c.where(run, d_c_next));
      d_h.copy_(d_h_next.masked_fill(run, 0)).addmm_(gates, w_h);
    } else {
      d_h.addmm_(gates, w_h, /*beta=*/0);
    }
  }
  r.d_h.copy_(d_h);
  r.d_c.copy_(d_c);
}

// Half types run `recurrence` in float: the state and its gradients are not rounded between
// steps, only what the op returns or saves is, once. Each pre-activation, for one, is rounded
// after its whole sum, as in the step op's (and eager's) one product over [h, input].
using Field = Tensor Recurrence::*;
constexpr Field kForwardWrites[] = {&Recurrence::gates, &Recurrence::output, &Recurrence::cells, &Recurrence::h_n,
                                    &Recurrence::c_n};
constexpr Field kBackwardWrites[] = {&Recurrence::gates, &Recurrence::d_h, &Recurrence::d_c};

template <void (*recurrence)(Recurrence&), const auto& writes>
void in_float(Recurrence& r) {
  if (!at::isReducedFloatingType(r.weights.scalar_type())) return recurrence(r);
  Recurrence f = r;
  for (Field field : {&Recurrence::weights, &Recurrence::h0, &Recurrence::c0, &Recurrence::input, &Recurrence::bias,
                      &Recurrence::gates, &Recurrence::output, &Recurrence::cells, &Recurrence::h_n, &Recurrence::c_n,
                      &Recurrence::grad_output, &Recurrence::grad_h_n, &Recurrence::grad_c_n, &Recurrence::d_h,
                      &Recurrence::d_c}) {
    if ((f.*field).defined()) f.*field = (f.*field).to(at::kFloat);
  }
  recurrence(f);
  for (Field field : writes) {
    if ((r.*field).defined()) (r.*field).copy_(f.*field);
  }
}

constexpr auto rounded_forward = in_float<cpu_forward, kForwardWrites>;
constexpr auto rounded_backward = in_float<cpu_backward, kBackwardWrites>;

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cpu::sequence_forward(
    const Tensor& input, const Tensor& weights, const Tensor& bias, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, std::optional<bool> for_backward) {
  return lltm::sequence_forward<rounded_forward>(input, weights, bias, h0, c0, lengths, for_backward);
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cpu::sequence_backward(
    const OptionalTensor& grad_output, const OptionalTensor& grad_h_n, const OptionalTensor& grad_c_n,
    const Tensor& input, const Tensor& weights, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, const Tensor& output, const Tensor& gates, const Tensor& cells,
    std::array<bool, 3> output_mask) {
  return lltm::sequence_backward<rounded_backward>(grad_output, grad_h_n, grad_c_n, input, weights, h0, c0, lengths,
                                                   output, gates, cells, output_mask);
}

}  // namespace lltm
