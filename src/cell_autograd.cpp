// Autograd of the cell's forward operator, as a plain autograd Node (what PyTorch's generated code
// builds for its own operators): one node per step, and no Python on the backward's path.
#include "autograd.h"

#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <array>
#include <mutex>

namespace lltm {
namespace {

const auto& forward_op() {
  static const auto op = find_op<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                     const Tensor&, const Tensor&)>(LLTM_OP("forward"));
  return op;
}

const auto& backward_op() {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         const Tensor&, const Tensor&, const Tensor&,
                                                         std::array<bool, 3>)>(LLTM_OP("backward"));
  return op;
}

// Its inputs' gradients from those of new_h and new_cell. Keeps old_cell rather than new_cell
// (the backward recomputes new_cell), so that the caller may change the returned state in place,
// as sequence code does to reset it at sequence ends.
struct LLTMBackward final : SavingNode<LLTMBackward> {
  SavedVariable input, weights, old_h, gates, old_cell;

  template <typename Self>
  static auto saved(Self& node) {
    return std::array{&node.input, &node.weights, &node.old_h, &node.gates, &node.old_cell};
  }

  std::string name() const override { return "LLTMBackward"; }

  // Under the node's mutex, as release_variables.
  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_double_backward("lltm");
    const Tensor x = input.unpack(), w = weights.unpack(), h = old_h.unpack(), c = old_cell.unpack();
    // Undefined when only one of new_h and new_cell was used.
    const Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(c);
    const Tensor grad_cell = grads[1].defined() ? grads[1] : at::zeros_like(c);
    // Only the gradients this backward pass needs: an input that requires none, or that
    // autograd.grad was not asked for, spares its product. d_[old_h, input] is one product.
    const bool want_input = task_should_compute_output(0), want_old_h = task_should_compute_output(3);
    const bool want_bias = task_should_compute_output(2);
    auto [d_old_h_input, d_weights, d_bias, d_old_cell] = backward_op().call(
        grad_h, grad_cell, x, w, h, gates.unpack(), c, {want_input || want_old_h, task_should_compute_output(1), want_bias});
    const int64_t state = h.size(1);
    return {want_input ? d_old_h_input.narrow(1, state, x.size(1)) : Tensor(), d_weights,
            want_bias ? d_bias.view(bias_sizes) : Tensor(), want_old_h ? d_old_h_input.narrow(1, 0, state) : Tensor(),
            d_old_cell};
  }
};

std::tuple<Tensor, Tensor, Tensor> forward_autograd(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                    const Tensor& old_h, const Tensor& old_cell) {
  const bool requires_grad = any_requires_grad("lltm", {&input, &weights, &bias, &old_h, &old_cell});
  auto out = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_op().call(input, weights, bias, old_h, old_cell);
  }();
  if (!requires_grad) return out;
  LLTMBackward* node = nullptr;
  const NodePtr owner = make_node(node);
  node->set_next_edges(torch::autograd::collect_next_edges(input, weights, bias, old_h, old_cell));
  node->input = SavedVariable(input, false);
  node->weights = SavedVariable(weights, false);
  node->old_h = SavedVariable(old_h, false);
  node->old_cell = SavedVariable(old_cell, false);
  node->gates = SavedVariable(std::get<2>(out), false);  // not differentiable: no history of its own
  node->bias_sizes = bias.sizes().vec();
  for (const Tensor& differentiable : {std::get<0>(out), std::get<1>(out)}) {
    torch::autograd::impl::set_gradient_edge(differentiable, Edge(owner, node->add_input_metadata(differentiable)));
  }
  return out;
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, Autograd, m) {
  m.impl("forward", TORCH_FN(lltm::forward_autograd));
}
