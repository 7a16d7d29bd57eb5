// The persistent sequence kernels as sequence_cuda.h declares them: whether they fit, their
// workspace, and their launch for the dtype at hand: the tensor-core kernels (tensor_core_*.cu)
// for the half types where they fit and p.tensor_cores allows them, else the CUDA-core ones
// (persistent_*.cu).
#include "persistent.cuh"
#include "tensor_core.cuh"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

namespace lltm::cuda {
namespace {

using ClusterCounts = std::array<int, kMaxCluster + 1>;

// A kernel of the persistent kernels' block that does nothing: with the most shared memory a block
// may have, a multiprocessor holds one, as it holds one of theirs.
__global__ void __launch_bounds__(kPersistentThreads) cluster_probe() {}

// How many clusters of n such blocks `device` holds at once, for each n up to kMaxCluster: zeros
// before sm_90, and where this build's code for the device is older than sm_90's (an arch list of
// 8.0+PTX run on an H200: there the cluster instructions compile to a trap); up to 8 where the
// device refuses larger clusters; zeros where the runtime does not say (its error is cleared:
// nothing depends on it).
ClusterCounts probe_clusters(int device, int shared_bytes) {
  ClusterCounts counts{};
  int major = 0;
  cudaFuncAttributes built{};
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess || major < 9 ||
      cudaFuncGetAttributes(&built, cluster_probe) != cudaSuccess || built.ptxVersion < 90 ||
      cudaFuncSetAttribute(cluster_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return counts;
  }
  int largest = kMaxCluster;
  if (cudaFuncSetAttribute(cluster_probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    largest = 8;  // the portable size
  }
  for (int n = 2; n <= largest; ++n) {
    cudaLaunchAttribute attribute = cluster_dimension(n);
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(n));
    config.blockDim = dim3(kPersistentThreads);
    config.dynamicSmemBytes = static_cast<size_t>(shared_bytes);
    config.attrs = &attribute;
    config.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&counts[n], cluster_probe, &config) != cudaSuccess) {
      (void)cudaGetLastError();
      counts[n] = 0;
    }
  }
  return counts;
}

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
      if (forward && p.streamed) return {streamed_tiling(p), true};
      if (const Tiling t = tensor_core_tiling(p, forward); t.rows > 0) return {t, true};
    }
  }
  return {persistent_tiling<scalar_t>(p, forward), false};
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
        if constexpr (is_forward<Params>) {
          if (choice.tiling.streamed) {
            error = launch_streamed_forward<scalar_t>(p, choice.tiling, stream);
            return;
          }
        }
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

void plan_clusters(SequenceParams& p, int largest) {
  std::fill(std::begin(p.resident_clusters), std::end(p.resident_clusters), 0);
  if (largest < 2) return;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  static std::mutex mutex;
  static std::map<int, ClusterCounts> known;  // by device
  const std::lock_guard<std::mutex> lock(mutex);
  auto [at, added] = known.try_emplace(device);
  if (added) at->second = probe_clusters(device, static_cast<int>(p.shared_memory_per_block));
  std::copy(at->second.begin(), at->second.begin() + largest + 1, std::begin(p.resident_clusters));
}

bool persistent_fits(const SequenceParams& p, DType dtype, int copies) {
  bool fits = true;
  for (const bool forward : {true, false}) {
    with_choice(p, dtype, forward, [&](auto, const Choice& c) {
      fits = fits && c.tiling.rows > 0 && (copies == 1 || resident(p, c.tiling, copies));
    });
  }
  return fits;
}

bool streamed_fits(const SequenceParams& p, DType dtype, bool by_default) {
  bool fits = false;
  dispatch(dtype, [&](auto tag) {
    if constexpr (has_tensor_cores<decltype(tag)>) {
      const Tiling t = p.tensor_cores ? streamed_tiling(p) : Tiling{};
      fits = t.rows > 0 && (!by_default || streamed_by_default(p, t));
    }
  });
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
