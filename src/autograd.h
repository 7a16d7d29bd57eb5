// What the operators' autograd (ops.cpp) builds on: finding the operator below autograd,
// making a Node, the Nodes' saved tensors (released at once, swapped in by compiled autograd), and
// refusing what the Nodes do not support.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include "namespace.h"

#include <initializer_list>
#include <memory>
#include <mutex>
#include <type_traits>

namespace lltm {

using at::Tensor;
using torch::autograd::CompiledNodeArgs;
using torch::autograd::Edge;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::SwapSavedVariables;
using torch::autograd::variable_list;

// The operator `name` of this library's namespace, for calls below autograd (CPU or CUDA).
template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(qualified(name).c_str(), "").typed<Signature>();
}

// Nodes are held by std::shared_ptr in torch 2.11 and by c10::intrusive_ptr from 2.13 on; Edge
// says which. deleteNode (shared_ptr only) frees a long chain of nodes, a long sequence's,
// without recursing once per node; it is found at instantiation, through the argument's base
// class.
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

// Makes `node`, which `owner` holds, the grad_fn of each of `outputs`, in order: its inputs'
// gradients are theirs.
inline void set_history(const NodePtr& owner, Node& node, std::initializer_list<Tensor> outputs) {
  for (const Tensor& output : outputs) {
    torch::autograd::impl::set_gradient_edge(output, Edge(owner, node.add_input_metadata(output)));
  }
}

// What the operators' Nodes share: their state is their saved tensors, which Derived::saved(node)
// lists, and the shape of the bias's gradient.
template <typename Derived>
struct SavingNode : Node {
  std::vector<c10::SymInt> bias_sizes;  // symbolic where traced, so that a graph need not fix the state size

  // Under the node's mutex, as node.h asks: two threads may run backward through one graph, and the
  // one that loses must find the saved variables released, not half-released.
  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable* saved : Derived::saved(static_cast<Derived&>(*this))) saved->reset_data();
  }

  // Compiled autograd (torch._dynamo.config.compiled_autograd) traces apply, whose operators
  // reach the traced graph through their fake kernels: compiled_args names the saved tensors (the
  // graph's inputs) and what else shapes the graph; apply_with_saved runs apply on the traced
  // tensors. Each saved tensor unpacks as an output would (with this node as its grad_fn where it
  // has none), as apply unpacks `output`; for the others that changes nothing.
  void compiled_args(CompiledNodeArgs& args) const override {
    for (const SavedVariable* saved : Derived::saved(static_cast<const Derived&>(*this))) {
      args.collect(*saved, /*is_output=*/true);
    }
    args.collect(bias_sizes);
  }

  variable_list apply_with_saved(const variable_list& inputs, SwapSavedVariables& swap) override {
    const auto all = Derived::saved(static_cast<Derived&>(*this));
    for (SavedVariable* saved : all) swap.before(*saved);
    swap.before(bias_sizes);
    variable_list grads = apply(variable_list(inputs));
    for (SavedVariable* saved : all) swap.after(*saved);
    swap.after(bias_sizes);
    return grads;
  }
};

// Whether any input requires a gradient. Refuses forward-mode AD, which would otherwise silently
// give the outputs a zero tangent.
inline bool any_requires_grad(const char* op, std::initializer_list<const Tensor*> inputs) {
  bool requires_grad = false;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    TORCH_CHECK_NOT_IMPLEMENTED(!t->_fw_grad(/*level=*/0).defined(),
                                std::string(op) + ": forward-mode AD is not supported");
    requires_grad = requires_grad || t->requires_grad();
  }
  return requires_grad && at::GradMode::is_enabled();
}

// Grad mode is on inside a backward only under create_graph: the backward operators have no
// autograd of their own, so a second derivative would silently come out wrong.
inline void refuse_double_backward(const char* op) {
  TORCH_CHECK(!at::GradMode::is_enabled(),
              std::string(op) + ": double backward (create_graph=True, as torch.func.grad, vjp and jacrev use) "
                                "is not supported");
}

}  // namespace lltm
