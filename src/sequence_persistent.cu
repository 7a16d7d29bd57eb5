// The persistent sequence kernels as sequence_cuda.h declares them: whether they fit, their
// workspace, and their launch for the dtype at hand: the tensor-core kernels (tensor_core_*.cu)
// for the half types where they fit and p.tensor_cores allows them, else the CUDA-core ones
// (persistent_*.cu).
#include "persistent.cuh"
#include "tensor_core.cuh"

namespace lltm::cuda {
namespace {

// A direction's kernels for the storage type at hand: their tiling (rows == 0: none fits), and
// whether they are the tensor-core ones.
struct Choice {
  Tiling tiling;
  bool tensor_cores;
};

template <typename scalar_t>
Choice choose(const SequenceParams& p, bool forward) {
  if constexpr (has_tensor_cores<scalar_t>) {
    if (p.tensor_cores) {
      if (const Tiling t = tensor_core_tiling(p, forward); t.rows > 0) return {t, true};
    }
  }
  return {persistent_tiling<opmath_t<scalar_t>>(p, forward), false};
}

// f(tag, choice) with the scalar type's tag of `dtype` and the direction's choice.
template <typename F>
void with_choice(const SequenceParams& p, DType dtype, bool forward, F&& f) {
  dispatch(dtype, [&](auto tag) { f(tag, choose<decltype(tag)>(p, forward)); });
}

template <typename Params>
cudaError_t launch(const Params& p, DType dtype, cudaStream_t stream) {
  if (p.batch == 0) {  // no rows: nothing to run, and a bias gradient of zeros
    if constexpr (!is_forward<Params>) {
      if (p.d_bias != nullptr) return cudaMemsetAsync(p.d_bias, 0, 3 * p.state * element_size(dtype), stream);
    }
    return cudaSuccess;
  }
  cudaError_t error = cudaErrorNotSupported;  // no such dtype
  with_choice(p, dtype, is_forward<Params>, [&](auto tag, const Choice& choice) {
    using scalar_t = decltype(tag);
    if constexpr (has_tensor_cores<scalar_t>) {
      if (choice.tensor_cores) {
        error = launch_tensor_core_typed<scalar_t>(p, choice.tiling, stream);
        return;
      }
    }
    error = launch_persistent_typed<scalar_t>(p, choice.tiling, stream);
  });
  return error;
}

template <typename Params>
size_t workspace_bytes_of(const Params& p, DType dtype) {
  size_t bytes = 0;
  with_choice(p, dtype, is_forward<Params>, [&](auto tag, const Choice& c) {
    bytes = workspace_bytes<opmath_t<decltype(tag)>>(p, c.tiling);
  });
  return bytes;
}

}  // namespace

bool persistent_fits(const SequenceParams& p, DType dtype) {
  bool fits = true;
  for (const bool forward : {true, false}) {
    with_choice(p, dtype, forward, [&](auto, const Choice& c) { fits = fits && c.tiling.rows > 0; });
  }
  return fits;
}

size_t persistent_workspace_bytes(const ForwardParams& p, DType dtype) { return workspace_bytes_of(p, dtype); }
size_t persistent_workspace_bytes(const BackwardParams& p, DType dtype) { return workspace_bytes_of(p, dtype); }

cudaError_t launch_persistent(const ForwardParams& p, DType dtype, cudaStream_t stream) {
  return launch(p, dtype, stream);
}

cudaError_t launch_persistent(const BackwardParams& p, DType dtype, cudaStream_t stream) {
  return launch(p, dtype, stream);
}

}  // namespace lltm::cuda
