// Autograd of the sequence's forward operator: one Node for the whole sequence.
#include "autograd.h"

#include <torch/library.h>

#include <array>
#include <mutex>
#include <optional>

namespace lltm {
namespace {

using OptionalTensor = std::optional<Tensor>;

const auto& forward_op() {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
          const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&, const OptionalTensor&,
          const OptionalTensor&, std::optional<bool>)>(LLTM_OP("sequence_forward"));
  return op;
}

const auto& backward_op() {
  static const auto op = find_op<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
      const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, const Tensor&, const Tensor&,
      const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, const Tensor&, const Tensor&, const Tensor&,
      std::array<bool, 3>)>(LLTM_OP("sequence_backward"));
  return op;
}

OptionalTensor defined_or_none(const Tensor& t) {
  return t.defined() ? OptionalTensor(t) : std::nullopt;
}

// The gradients of input, weights, bias, h0 and c0 from those of output, h_n and c_n.
struct LLTMSequenceBackward final : SavingNode<LLTMSequenceBackward> {
  SavedVariable input, weights, h0, c0, lengths, output, gates, cells;
  // Set when the engine will release the saved variables after this backward: the backward may
  // then overwrite the saved pre-activations with their gradients instead of copying them first,
  // where nothing else can see them.
  bool last_use = false;

  std::string name() const override { return "LLTMSequenceBackward"; }

  void will_release_variables() override { last_use = true; }

  template <typename Self>
  static auto saved(Self& node) {
    return std::array{&node.input, &node.weights, &node.h0, &node.c0, &node.lengths, &node.output, &node.gates,
                      &node.cells};
  }

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    refuse_double_backward("lltm_sequence");
    const Tensor saved_gates = gates.unpack();
    // Traced (torch.compile, opcheck) tensors carry the Python or Functionalize key: a traced graph
    // must not write into a tensor its forward saved, so they get a copy too.
    const bool traced = saved_gates.key_set().has_any(
        c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::Functionalize}));
    // The caller got an alias of the pre-activations (forward_autograd): while it or a view of it
    // lives, another tensor shares their storage.
    const bool shared = saved_gates.storage().use_count() > 1;
    const Tensor workspace = last_use && !traced && !shared ? saved_gates : saved_gates.clone();
    // Only the products this backward pass needs (see LLTMBackward).
    const std::array<bool, 3> output_mask{task_should_compute_output(0), task_should_compute_output(1),
                                          task_should_compute_output(2)};
    auto [d_input, d_weights, d_bias, d_h0, d_c0] = backward_op().call(
        defined_or_none(grads[0]), defined_or_none(grads[1]), defined_or_none(grads[2]), input.unpack(),
        weights.unpack(), defined_or_none(h0.unpack()), defined_or_none(c0.unpack()),
        defined_or_none(lengths.unpack()), output.unpack(getptr()), workspace, cells.unpack(), output_mask);
    // Not for an initial state that was not given (zeros): there is no edge to take them.
    return {d_input, d_weights, d_bias.defined() ? d_bias.view(bias_sizes) : d_bias,
            task_should_compute_output(3) ? d_h0 : Tensor(), task_should_compute_output(4) ? d_c0 : Tensor()};
  }
};

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> forward_autograd(const Tensor& input, const Tensor& weights,
                                                                    const Tensor& bias, const OptionalTensor& given_h0,
                                                                    const OptionalTensor& given_c0,
                                                                    const OptionalTensor& lengths,
                                                                    std::optional<bool> for_backward) {
  const Tensor h0 = given_h0.value_or(Tensor()), c0 = given_c0.value_or(Tensor());
  const bool requires_grad = any_requires_grad("lltm_sequence", {&input, &weights, &bias, &h0, &c0});
  TORCH_CHECK(for_backward.value_or(true) || !requires_grad,
              "lltm_sequence: for_backward=False leaves out what the backward needs, but an input requires a "
              "gradient (set for_backward=None to let autograd decide)");
  auto out = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    // Without a backward to come, the cell states of every step are not written; a caller that
    // runs the backward operator itself (a traced graph, a test) asks for them explicitly.
    return forward_op().call(input, weights, bias, given_h0, given_c0, lengths, for_backward.value_or(requires_grad));
  }();
  if (!requires_grad) return out;
  auto& [output, h_n, c_n, gates, cells] = out;
  LLTMSequenceBackward* node = nullptr;
  const NodePtr owner = make_node(node);
  node->set_next_edges(torch::autograd::collect_next_edges(input, weights, bias, h0, c0));
  node->input = SavedVariable(input, false);
  node->weights = SavedVariable(weights, false);
  node->h0 = SavedVariable(h0, false);
  node->c0 = SavedVariable(c0, false);
  node->lengths = SavedVariable(lengths.value_or(Tensor()), false);
  node->gates = SavedVariable(gates, false);  // not differentiable: no history of their own
  {
    // The caller gets an alias, a tensor of its own, so that the backward can tell whether anything
    // outside the node still sees the pre-activations (most callers drop them).
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    Tensor alias = gates.alias();
    // One version counter, so that changing the alias in place before the backward raises
    // autograd's error, as for any saved tensor.
    torch::autograd::impl::set_version_counter(alias, torch::autograd::impl::version_counter(gates));
    gates = alias;
  }
  node->cells = SavedVariable(cells, false);
  node->bias_sizes = bias.sizes().vec();
  for (const Tensor& differentiable : {output, h_n, c_n}) {
    torch::autograd::impl::set_gradient_edge(differentiable, Edge(owner, node->add_input_metadata(differentiable)));
  }
  node->output = SavedVariable(output, true);  // an output of this node: saved after its edge is set
  return out;
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, Autograd, m) {
  m.impl("sequence_forward", TORCH_FN(lltm::forward_autograd));
}
