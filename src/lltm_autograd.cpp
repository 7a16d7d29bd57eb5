// Autograd of the forward operator, in C++, as a plain autograd Node (what PyTorch's generated
// code builds for its own operators). A Python autograd kernel (torch.library's
// register_autograd) cost about 90 us of the 230 us of a forward + backward step at the
// tutorial's size on a 2-core CPU, and a small GPU step is all host overhead. The Node rather
// than torch::autograd::Function: that header and its templates made this file the build's
// critical path (13.5 s against 10 s here).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <ATen/ops/zeros_like.h>

#include <memory>
#include <mutex>
#include <type_traits>

#define LLTM_STRINGIFY_(x) #x
#define LLTM_STRINGIFY(x) LLTM_STRINGIFY_(x)

namespace lltm {
namespace {

using at::Tensor;
using torch::autograd::Edge;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// The operators' implementations below autograd (CPU or CUDA), found once.
const auto& forward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(LLTM_STRINGIFY(LLTM_JIT_NAMESPACE) "::forward", "")
                             .typed<std::tuple<Tensor, Tensor, Tensor>(
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>();
  return op;
}

const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow(LLTM_STRINGIFY(LLTM_JIT_NAMESPACE) "::backward", "")
                             .typed<std::tuple<Tensor, Tensor, Tensor, Tensor>(
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, const Tensor&, const Tensor&)>();
  return op;
}

// Its inputs' gradients from those of new_h and new_cell. Keeps old_cell rather than new_cell
// (the backward recomputes new_cell), so that the caller may change the returned state in place,
// as sequence code does to reset it at sequence ends.
struct LLTMBackward final : Node {
  SavedVariable input, weights, old_h, gates, old_cell;
  std::vector<int64_t> bias_sizes;

  std::string name() const override { return "LLTMBackward"; }

  // Both under the node's mutex, as node.h asks: two threads may run backward through one graph,
  // and the one that loses must find the saved variables released, not half-released.
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable* saved : {&input, &weights, &old_h, &gates, &old_cell}) saved->reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    // Grad mode is on here only under create_graph: the backward operator has no autograd of
    // its own, so a second derivative would silently come out wrong.
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "lltm: double backward (create_graph=True, as torch.func.grad, vjp and jacrev use) "
                "is not supported");
    const Tensor x = input.unpack(), w = weights.unpack(), h = old_h.unpack(), c = old_cell.unpack();
    // Undefined when only one of new_h and new_cell was used.
    const Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(c);
    const Tensor grad_cell = grads[1].defined() ? grads[1] : at::zeros_like(c);
    auto [d_old_h_input, d_weights, d_bias, d_old_cell] =
        backward_op().call(grad_h, grad_cell, x, w, h, gates.unpack(), c);
    const int64_t state = h.size(1);
    return {d_old_h_input.narrow(1, state, x.size(1)), d_weights, d_bias.view(bias_sizes),
            d_old_h_input.narrow(1, 0, state), d_old_cell};
  }
};

// Nodes are held by std::shared_ptr in torch 2.11 (and before) and by c10::intrusive_ptr in 2.13
// (and after); Edge says which. deleteNode (shared_ptr only) frees a long chain of nodes, a long
// sequence's, without recursing once per node; it is found at instantiation, through the
// argument's base class.
using NodePtr = decltype(Edge::function);

template <typename T>
NodePtr make_node(T*& node) {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>) {
    node = new T();
    return NodePtr(node, [](Node* n) { deleteNode(static_cast<T*>(n)); });
  } else {
    auto owner = c10::make_intrusive<T>();
    node = owner.get();
    return owner;
  }
}

std::tuple<Tensor, Tensor, Tensor> forward_autograd(const Tensor& input, const Tensor& weights,
                                                    const Tensor& bias, const Tensor& old_h,
                                                    const Tensor& old_cell) {
  bool requires_grad = false;
  for (const Tensor* t : {&input, &weights, &bias, &old_h, &old_cell}) {
    // Without this, forward-mode AD (torch.autograd.forward_ad, torch.func.jvp) would silently
    // give the outputs a zero tangent.
    TORCH_CHECK_NOT_IMPLEMENTED(!t->_fw_grad(/*level=*/0).defined(), "lltm: forward-mode AD is not supported");
    requires_grad = requires_grad || t->requires_grad();
  }
  auto out = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_op().call(input, weights, bias, old_h, old_cell);
  }();
  if (!requires_grad || !at::GradMode::is_enabled()) return out;
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
    torch::autograd::impl::set_gradient_edge(differentiable,
                                             Edge(owner, node->add_input_metadata(differentiable)));
  }
  return out;
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, Autograd, m) {
  m.impl("forward", TORCH_FN(lltm::forward_autograd));
}
