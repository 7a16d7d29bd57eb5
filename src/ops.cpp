// The operators as torch sees them: their schemas (the one place they are declared), their
// autograd, their autocast, and the registration of these and of the backends' implementations
// (kernels.h), under the namespace this build was given at load time (namespace.h); and the C++
// API on them (lltm_jit.h), which calls them as Python does.
//
// The autograd is plain autograd Nodes, what PyTorch's generated code builds for its own
// operators, so that no Python runs on the backward's path: one Node per step of the cell, one for
// a whole sequence.
//
// The one file of the build that includes torch's dispatcher and autograd headers, whose parsing
// costs it most of its compile time: they are parsed once here rather than once per file
// (benchmarks/NOTES.md, "The build").
#include "autograd.h"
#include "checks.h"
#include "kernels.h"
#include "lltm_jit.h"
#include "namespace.h"

#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <array>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// The two functions of ATen's autocast that the autocast kernel uses, as ATen/autocast_mode.h
// declares them (in libtorch_cpu since torch 2.4). That header includes all of ATen's native
// functions, which would make this the slowest file of the build.
namespace at::autocast {
TORCH_API at::ScalarType get_autocast_dtype(at::DeviceType device_type);
TORCH_API Tensor cached_cast(at::ScalarType to_type, const Tensor& arg, c10::DeviceType device_type);
}  // namespace at::autocast

namespace lltm {
namespace {

// ---------------------------------------------------------------------------------------------
// Schemas

void define(torch::Library& m) {
  // One step. `gates` are the gate pre-activations (batch, 3 * state_size): what the backward
  // needs besides the forward's inputs. The backward's output_mask says which of d_old_h_input,
  // d_weights and d_bias to compute (each a matrix product or a sum over the batch); the others
  // come back undefined (None in Python), as ATen's native_layer_norm_backward does. d_old_cell
  // comes out of the elementwise pass that every gradient needs, so it is always computed.
  m.def("forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell)"
        " -> (Tensor new_h, Tensor new_cell, Tensor gates)");
  m.def("backward(Tensor grad_h, Tensor grad_cell, Tensor input, Tensor weights, Tensor old_h,"
        " Tensor gates, Tensor old_cell, bool[3] output_mask)"
        " -> (Tensor d_old_h_input, Tensor d_weights, Tensor d_bias, Tensor d_old_cell)");
  // A whole sequence: input (time, batch, input_features), the cell's weights and bias, the initial
  // state (h0 and c0, each None for zeros), and optional lengths (batch,): past its length a
  // sequence's state stays as it is and its output is zero. `gates` (the pre-activations) and
  // `cells` (the cell state after each step) are what the backward needs besides the inputs and
  // the output; the backward overwrites `gates` with their gradients. for_backward says whether a
  // backward may follow: when false, `gates` and `cells` come back empty (shape (0,)) and no cell
  // states are written, whatever the inputs' requires_grad (a backward that autograd then runs
  // through it raises); None lets autograd decide (true when an input requires a gradient and
  // grad mode is on), and means true below autograd. The backward's output_mask says which of
  // d_input, d_weights and d_bias to compute (the products and the sum after the recurrence); the
  // others come back undefined. d_h0 and d_c0 come out of the recurrence, which every gradient
  // needs: they come back also where h0 and c0 were None. paired says that another call of the
  // same sizes runs at the same time on another stream (a bidirectional layer's other direction,
  // where sequences_at_once says so): the CUDA kernels then take a tiling that leaves the GPU room
  // for both. It changes no result; autograd's backward takes the forward's.
  m.def("sequence_forward(Tensor input, Tensor weights, Tensor bias, Tensor? h0, Tensor? c0, Tensor? lengths,"
        " bool? for_backward=None, bool paired=False)"
        " -> (Tensor output, Tensor h_n, Tensor c_n, Tensor gates, Tensor cells)");
  m.def("sequence_backward(Tensor? grad_output, Tensor? grad_h_n, Tensor? grad_c_n, Tensor input,"
        " Tensor weights, Tensor? h0, Tensor? c0, Tensor? lengths, Tensor output, Tensor(a!) gates, Tensor cells,"
        " bool[3] output_mask, bool paired=False)"
        " -> (Tensor d_input, Tensor d_weights, Tensor d_bias, Tensor d_h0, Tensor d_c0)");
  // Whether two sequences of input's sizes (time, batch, input_features) through the cell of
  // `weights` (the two directions of a bidirectional layer) run at once, each on a stream of its
  // own and called with paired=True: on CUDA where both directions' persistent kernels of the
  // two, paired, fit on the device together, every block on a multiprocessor of its own and every
  // cluster resident, so that the launches overlap rather than queue, and
  // LLTM_JIT_SEQUENCES_AT_ONCE is not 0; false on the per-step path
  // and on the CPU, whose op uses every core already. Under autocast, for the dtype the sequences
  // run in. Reads input's batch, weights' rows, the dtype and the device.
  m.def("sequences_at_once(Tensor input, Tensor weights) -> bool");
}

// ---------------------------------------------------------------------------------------------
// Autograd of the cell: one Node per step

const auto& step_forward_op() {
  static const auto op = find_op<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                     const Tensor&, const Tensor&)>("forward");
  return op;
}

const auto& step_backward_op() {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         const Tensor&, const Tensor&, const Tensor&,
                                                         std::array<bool, 3>)>("backward");
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
    // Undefined when only one of new_h and new_cell was used. Sizes here are symbolic (sym_*), as
    // bias_sizes: a traced graph of this backward (compiled autograd) serves every size.
    const Tensor grad_h = grads[0].defined() ? grads[0] : c.new_zeros_symint(c.sym_sizes());
    const Tensor grad_cell = grads[1].defined() ? grads[1] : c.new_zeros_symint(c.sym_sizes());
    // Only the gradients this backward pass needs: an input that requires none, or that
    // autograd.grad was not asked for, spares its product. d_[old_h, input] is one product.
    const bool want_input = task_should_compute_output(0), want_old_h = task_should_compute_output(3);
    const bool want_bias = task_should_compute_output(2);
    auto [d_old_h_input, d_weights, d_bias, d_old_cell] = step_backward_op().call(
        grad_h, grad_cell, x, w, h, gates.unpack(), c, {want_input || want_old_h, task_should_compute_output(1), want_bias});
    const c10::SymInt state = h.sym_size(1);
    return {want_input ? d_old_h_input.narrow_symint(1, state, x.sym_size(1)) : Tensor(), d_weights,
            want_bias ? d_bias.view_symint(bias_sizes) : Tensor(),
            want_old_h ? d_old_h_input.narrow_symint(1, 0, state) : Tensor(), d_old_cell};
  }
};

std::tuple<Tensor, Tensor, Tensor> step_forward_autograd(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                         const Tensor& old_h, const Tensor& old_cell) {
  const bool requires_grad = any_requires_grad("lltm", {&input, &weights, &bias, &old_h, &old_cell});
  auto out = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return step_forward_op().call(input, weights, bias, old_h, old_cell);
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
  node->bias_sizes = bias.sym_sizes().vec();
  set_history(owner, *node, {std::get<0>(out), std::get<1>(out)});
  return out;
}

// ---------------------------------------------------------------------------------------------
// Autograd of the sequence: one Node for the whole sequence

const auto& sequence_forward_op() {
  static const auto op =
      find_op<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
          const Tensor&, const Tensor&, const Tensor&, const OptionalTensor&, const OptionalTensor&,
          const OptionalTensor&, std::optional<bool>, bool)>("sequence_forward");
  return op;
}

const auto& sequence_backward_op() {
  static const auto op = find_op<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor>(
      const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, const Tensor&, const Tensor&,
      const OptionalTensor&, const OptionalTensor&, const OptionalTensor&, const Tensor&, const Tensor&, const Tensor&,
      std::array<bool, 3>, bool)>("sequence_backward");
  return op;
}

OptionalTensor defined_or_none(const Tensor& t) {
  return t.defined() ? OptionalTensor(t) : std::nullopt;
}

// The gradients of input, weights, bias, h0 and c0 from those of output, h_n and c_n.
struct LLTMSequenceBackward final : SavingNode<LLTMSequenceBackward> {
  SavedVariable input, weights, h0, c0, lengths, output, gates, cells;
  bool paired = false;  // the forward's
  // Set when the engine will release the saved variables after this backward (and cleared by
  // it): the backward may then overwrite the saved pre-activations with their gradients instead
  // of copying them first, where nothing else can see them.
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
    // lives, another tensor shares their storage. A saved-tensor hook may keep the tensor itself,
    // which nothing here can tell from one that keeps nothing: under any hook (checkpointing,
    // save_on_cpu too) the backward works in a copy, one more tensor of their size at its peak.
    const bool shared = saved_gates.storage().use_count() > 1 || gates.has_hooks();
    const bool in_place = std::exchange(last_use, false) && !traced && !shared;
    // Overwritten, they are released now, under the mutex: another apply of this node (a backward
    // retried after a hook raised, another thread's backward through the same graph) then raises
    // autograd's error for a second backward instead of reading gradients as pre-activations.
    if (in_place) gates.reset_data();
    const Tensor workspace = in_place ? saved_gates : saved_gates.clone();
    // Only the products this backward pass needs (see LLTMBackward).
    const std::array<bool, 3> output_mask{task_should_compute_output(0), task_should_compute_output(1),
                                          task_should_compute_output(2)};
    auto [d_input, d_weights, d_bias, d_h0, d_c0] = sequence_backward_op().call(
        defined_or_none(grads[0]), defined_or_none(grads[1]), defined_or_none(grads[2]), input.unpack(),
        weights.unpack(), defined_or_none(h0.unpack()), defined_or_none(c0.unpack()),
        defined_or_none(lengths.unpack()), output.unpack(getptr()), workspace, cells.unpack(), output_mask, paired);
    // Not for an initial state that was not given (zeros): there is no edge to take them.
    return {d_input, d_weights, d_bias.defined() ? d_bias.view_symint(bias_sizes) : d_bias,
            task_should_compute_output(3) ? d_h0 : Tensor(), task_should_compute_output(4) ? d_c0 : Tensor()};
  }
};

// The Node of a forward that was asked to keep nothing for a backward (for_backward=False) while
// an input requires a gradient: autograd alone knows whether a backward runs through it (an
// exported or AOTInductor-compiled graph asks for none, yet its parameters require gradients), so
// the forward succeeds and a backward that does reach it raises, rather than the forward refusing
// or the outputs silently taking no gradient. It holds no tensors.
struct LLTMSequenceNothingKept final : Node {
  std::string name() const override { return "LLTMSequenceNothingKept"; }

  variable_list apply(variable_list&& grads) override {
    TORCH_CHECK(false, "lltm_sequence: the forward ran with for_backward=False, which keeps nothing for a "
                       "backward; call it with for_backward=None (autograd decides) to differentiate it");
  }
};

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> sequence_forward_autograd(const Tensor& input, const Tensor& weights,
                                                                    const Tensor& bias, const OptionalTensor& given_h0,
                                                                    const OptionalTensor& given_c0,
                                                                    const OptionalTensor& lengths,
                                                                    std::optional<bool> for_backward,
                                                                    bool paired) {
  const Tensor h0 = given_h0.value_or(Tensor()), c0 = given_c0.value_or(Tensor());
  const bool requires_grad = any_requires_grad("lltm_sequence", {&input, &weights, &bias, &h0, &c0});
  const bool keep = for_backward.value_or(requires_grad);
  auto out = [&] {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    // Without a backward to come, the cell states of every step are not written; a caller that
    // runs the backward operator itself (a traced graph, a test) asks for them explicitly.
    return sequence_forward_op().call(input, weights, bias, given_h0, given_c0, lengths, keep, paired);
  }();
  if (!requires_grad) return out;
  auto& [output, h_n, c_n, gates, cells] = out;
  if (!keep) {
    LLTMSequenceNothingKept* refusing = nullptr;
    const NodePtr owner = make_node(refusing);
    refusing->set_next_edges(torch::autograd::collect_next_edges(input, weights, bias, h0, c0));
    set_history(owner, *refusing, {output, h_n, c_n});
    return out;
  }
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
  node->paired = paired;
  node->bias_sizes = bias.sym_sizes().vec();
  set_history(owner, *node, {output, h_n, c_n});
  node->output = SavedVariable(output, true);  // an output of this node: saved after its edge is set
  return out;
}

// ---------------------------------------------------------------------------------------------
// Autocast

// Autocast of the forward operators (and of sequences_at_once, which then answers for the dtype
// they run in), as aten's lower_precision_fp ops (mm, addmm) have it: under
// torch.autocast every floating-point tensor argument on the autocast device, float64 aside, is cast
// to the autocast dtype, and the operator runs in it. The casts are aten's own (cached_cast): they
// are differentiable, so float32 parameters receive float32 gradients, and a parameter is cast once
// per autocast region however many steps use it. Integer tensors (lengths) pass unchanged. One
// boxed kernel serves every operator: casting does not depend on the signature.
template <c10::DeviceType device_type, c10::DispatchKey autocast_key>
void autocast(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // The operator runs below autocast, as aten's autocast kernels run theirs: an operator it calls
  // must not be cast again.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(autocast_key);
  const at::ScalarType dtype = at::autocast::get_autocast_dtype(device_type);
  const size_t arguments = op.schema().arguments().size();
  for (auto it = stack->end() - arguments; it != stack->end(); ++it) {
    if (it->isTensor()) *it = at::autocast::cached_cast(dtype, it->toTensor(), device_type);
  }
  op.callBoxed(stack);
}

template <c10::DeviceType device_type, c10::DispatchKey autocast_key>
void register_autocast(torch::Library& m) {
  for (const char* name : {"forward", "sequence_forward", "sequences_at_once"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&autocast<device_type, autocast_key>>());
  }
}

// ---------------------------------------------------------------------------------------------
// Whether two sequences run at once (the schema says when), for every backend

bool sequences_at_once(const Tensor& input, const Tensor& weights) {
  constexpr const char* op = "lltm_sequences_at_once";
  check_same_kind(op, {{"input", &input}, {"weights", &weights}});
  check_rank(op, input, "input", 3, "(time, batch, input_features)");
  check_weight_rows(op, weights);
#ifdef LLTM_JIT_WITH_CUDA
  if (input.is_cuda()) return cuda::sequences_at_once(input, weights);
#endif
  return false;
}

// ---------------------------------------------------------------------------------------------
// Registration

// A torch::Library per registration, as TORCH_LIBRARY and TORCH_LIBRARY_IMPL make, whose namespace
// is a string rather than a macro argument.
struct Registrations {
  std::vector<torch::Library> libraries;

  void add(torch::Library::Kind kind, std::optional<c10::DispatchKey> key, void (*fill)(torch::Library&)) {
    fill(libraries.emplace_back(kind, kNamespace, key, __FILE__, __LINE__));
  }

  Registrations() {
    add(torch::Library::DEF, std::nullopt, define);
    add(torch::Library::IMPL, c10::DispatchKey::CPU, [](torch::Library& m) {
      m.impl("forward", TORCH_FN(cpu::step_forward));
      m.impl("backward", TORCH_FN(cpu::step_backward));
      m.impl("sequence_forward", TORCH_FN(cpu::sequence_forward));
      m.impl("sequence_backward", TORCH_FN(cpu::sequence_backward));
    });
#ifdef LLTM_JIT_WITH_CUDA
    add(torch::Library::IMPL, c10::DispatchKey::CUDA, [](torch::Library& m) {
      m.impl("forward", TORCH_FN(cuda::step_forward));
      m.impl("backward", TORCH_FN(cuda::step_backward));
      m.impl("sequence_forward", TORCH_FN(cuda::sequence_forward));
      m.impl("sequence_backward", TORCH_FN(cuda::sequence_backward));
    });
#endif
    add(torch::Library::IMPL, c10::DispatchKey::CompositeExplicitAutograd,
        [](torch::Library& m) { m.impl("sequences_at_once", TORCH_FN(sequences_at_once)); });
    add(torch::Library::IMPL, c10::DispatchKey::Autograd, [](torch::Library& m) {
      m.impl("forward", TORCH_FN(step_forward_autograd));
      m.impl("sequence_forward", TORCH_FN(sequence_forward_autograd));
    });
    add(torch::Library::IMPL, c10::DispatchKey::AutocastCPU,
        register_autocast<c10::DeviceType::CPU, c10::DispatchKey::AutocastCPU>);
    add(torch::Library::IMPL, c10::DispatchKey::AutocastCUDA,
        register_autocast<c10::DeviceType::CUDA, c10::DispatchKey::AutocastCUDA>);
  }
};

const Registrations registrations;

// ---------------------------------------------------------------------------------------------
// The C++ API (lltm_jit.h): the operators called from the top of the dispatcher, as
// torch.ops.<namespace>.* is from Python, so that autograd and autocast apply.

}  // namespace
}  // namespace lltm

namespace lltm_jit {

std::tuple<at::Tensor, at::Tensor> lltm(const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
                                        const at::Tensor& old_h, const at::Tensor& old_cell) {
  lltm::check_defined("lltm", {{"input", &input}, {"weights", &weights}, {"bias", &bias}, {"old_h", &old_h},
                               {"old_cell", &old_cell}});
  auto [new_h, new_cell, gates] = lltm::step_forward_op().call(input, weights, bias, old_h, old_cell);
  return {new_h, new_cell};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lltm_sequence(const at::Tensor& input, const at::Tensor& weights,
                                                             const at::Tensor& bias,
                                                             const std::optional<at::Tensor>& h0,
                                                             const std::optional<at::Tensor>& c0,
                                                             const std::optional<at::Tensor>& lengths) {
  lltm::check_defined("lltm_sequence", {{"input", &input}, {"weights", &weights}, {"bias", &bias}});
  // Inference mode skips the autograd kernel, which otherwise tells the op whether a backward
  // follows (the rule of lltm_jit.lltm_sequence in ops.py).
  const std::optional<bool> for_backward =
      c10::InferenceMode::is_enabled() ? std::optional<bool>(false) : std::nullopt;
  auto [output, h_n, c_n, gates, cells] =
      lltm::sequence_forward_op().call(input, weights, bias, h0, c0, lengths, for_backward, /*paired=*/false);
  return {output, h_n, c_n};
}

}  // namespace lltm_jit
