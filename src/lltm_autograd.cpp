// Autograd of the forward operator, in C++: a Python autograd kernel (torch.library's
// register_autograd) cost about 90 us of the 230 us of a forward + backward step at the
// tutorial's size on a 2-core CPU, as much as the matrix products, and as much again on a GPU,
// where a small step is all host overhead.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <ATen/ops/zeros_like.h>

#define LLTM_STRINGIFY_(x) #x
#define LLTM_STRINGIFY(x) LLTM_STRINGIFY_(x)

namespace lltm {
namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
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

struct LLTMFunction : public torch::autograd::Function<LLTMFunction> {
  static variable_list forward(AutogradContext* ctx, const Tensor& input, const Tensor& weights,
                               const Tensor& bias, const Tensor& old_h, const Tensor& old_cell) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [new_h, new_cell, gates] = forward_op().call(input, weights, bias, old_h, old_cell);
    ctx->save_for_backward({input, weights, old_h, gates, new_cell});
    ctx->saved_data["bias_sizes"] = bias.sizes();
    ctx->mark_non_differentiable({gates});
    ctx->set_materialize_grads(false);  // no zero gradient for gates, never used
    return {new_h, new_cell, gates};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // Grad mode is on here only under create_graph: the backward operator has no autograd of
    // its own, so a second derivative would silently come out wrong.
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "lltm: double backward (create_graph=True) is not supported");
    const auto saved = ctx->get_saved_variables();
    const Tensor &input = saved[0], &weights = saved[1], &old_h = saved[2], &new_cell = saved[4];
    // Undefined when only one of new_h and new_cell was used.
    const Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(new_cell);
    const Tensor grad_cell = grads[1].defined() ? grads[1] : at::zeros_like(new_cell);
    auto [d_old_h_input, d_weights, d_bias, d_old_cell] =
        backward_op().call(grad_h, grad_cell, input, weights, old_h, saved[3], new_cell);
    const int64_t state = old_h.size(1);
    return {d_old_h_input.narrow(1, state, input.size(1)), d_weights,
            d_bias.view(ctx->saved_data["bias_sizes"].toIntVector()),
            d_old_h_input.narrow(1, 0, state), d_old_cell};
  }
};

std::tuple<Tensor, Tensor, Tensor> forward_autograd(const Tensor& input, const Tensor& weights,
                                                    const Tensor& bias, const Tensor& old_h,
                                                    const Tensor& old_cell) {
  const auto out = LLTMFunction::apply(input, weights, bias, old_h, old_cell);
  return {out[0], out[1], out[2]};
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, Autograd, m) {
  m.impl("forward", TORCH_FN(lltm::forward_autograd));
}
