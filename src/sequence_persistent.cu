// The persistent sequence kernels as sequence_cuda.h declares them: whether they fit, their
// workspace, and their launch for the dtype at hand (the kernels are in persistent_*.cu).
#include "persistent.cuh"

namespace lltm::cuda {
namespace {

// The tiling of a direction for the dtype at hand, and f(tag, tiling) with its scalar type's tag.
template <typename F>
void with_tiling(const SequenceParams& p, DType dtype, bool forward, F&& f) {
  dispatch(dtype, [&](auto tag) { f(tag, persistent_tiling<opmath_t<decltype(tag)>>(p, forward)); });
}

template <bool kForward>
cudaError_t launch_persistent(const SequenceParams& p, DType dtype, cudaStream_t stream) {
  if (p.batch == 0) {  // no rows: nothing to run, and a bias gradient of zeros
    const bool bias = !kForward && p.d_bias != nullptr;
    return bias ? cudaMemsetAsync(p.d_bias, 0, 3 * p.state * element_size(dtype), stream) : cudaSuccess;
  }
  cudaError_t error = cudaErrorNotSupported;  // no such dtype
  with_tiling(p, dtype, kForward, [&](auto tag, const Tiling& tiling) {
    using scalar_t = decltype(tag);
    error = kForward ? launch_persistent_forward_typed<scalar_t>(p, tiling, stream)
                     : launch_persistent_backward_typed<scalar_t>(p, tiling, stream);
  });
  return error;
}

}  // namespace

bool persistent_fits(const SequenceParams& p, DType dtype) {
  bool fits = true;
  for (const bool forward : {true, false}) {
    with_tiling(p, dtype, forward, [&](auto, const Tiling& t) { fits = fits && t.rows > 0; });
  }
  return fits;
}

size_t persistent_workspace_bytes(const SequenceParams& p, DType dtype, bool forward) {
  size_t bytes = 0;
  with_tiling(p, dtype, forward, [&](auto tag, const Tiling& t) {
    bytes = workspace_bytes<opmath_t<decltype(tag)>>(p, t, forward);
  });
  return bytes;
}

cudaError_t launch_persistent_forward(const SequenceParams& p, DType dtype, cudaStream_t stream) {
  return launch_persistent<true>(p, dtype, stream);
}

cudaError_t launch_persistent_backward(const SequenceParams& p, DType dtype, cudaStream_t stream) {
  return launch_persistent<false>(p, dtype, stream);
}

}  // namespace lltm::cuda
