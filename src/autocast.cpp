// Autocast of the forward operators, as aten's lower_precision_fp ops (mm, addmm) have it: under
// torch.autocast every floating-point tensor argument on the autocast device, float64 aside, is cast
// to the autocast dtype, and the operator runs in it. The casts are aten's own (cached_cast): they
// are differentiable, so float32 parameters receive float32 gradients, and a parameter is cast once
// per autocast region however many steps use it. Integer tensors (lengths) pass unchanged.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace lltm {
namespace {

// One boxed kernel for every operator: casting does not depend on the signature.
template <c10::DeviceType device_type>
void autocast(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // The operator runs below autocast, as aten's autocast kernels run theirs: an operator it calls
  // must not be cast again.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(at::autocast::get_autocast_dispatch_key_from_device_type(device_type));
  const at::ScalarType dtype = at::autocast::get_autocast_dtype(device_type);
  const size_t arguments = op.schema().arguments().size();
  for (auto it = stack->end() - arguments; it != stack->end(); ++it) {
    if (it->isTensor()) *it = at::autocast::cached_cast(dtype, it->toTensor(), device_type);
  }
  op.callBoxed(stack);
}

}  // namespace
}  // namespace lltm

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, AutocastCPU, m) {
  m.impl("forward", torch::CppFunction::makeFromBoxedFunction<&lltm::autocast<c10::DeviceType::CPU>>());
  m.impl("sequence_forward", torch::CppFunction::makeFromBoxedFunction<&lltm::autocast<c10::DeviceType::CPU>>());
}

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, AutocastCUDA, m) {
  m.impl("forward", torch::CppFunction::makeFromBoxedFunction<&lltm::autocast<c10::DeviceType::CUDA>>());
  m.impl("sequence_forward", torch::CppFunction::makeFromBoxedFunction<&lltm::autocast<c10::DeviceType::CUDA>>());
}
