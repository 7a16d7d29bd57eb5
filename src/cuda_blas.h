// cuBLAS products called directly, for the sequence's per-step products: through ATen each costs
// the host more in dispatch and checks than the device's work for a small step, which then bounds a
// whole sequence (benchmarks/NOTES.md, "Numbers behind the sources' comments"). The functions come
// from the libraries that torch has loaded (dlopen with RTLD_NOLOAD), declared here by their
// signatures, so that building needs no cuBLAS header or library (a minimal CUDA toolkit has
// neither). Where they cannot be found, `available()` is false and the caller uses ATen. The
// handle is torch's own: its pool hands each thread one per device, set to the current stream and
// torch's workspace, and takes it back when the thread ends.
#pragma once

#include <ATen/Context.h>
#include <c10/core/ScalarType.h>
#include <cuda_runtime.h>
#include <library_types.h>

#include <dlfcn.h>

#include <string>

namespace lltm::cublas {

// The documented values of cublasOperation_t, cublasComputeType_t and cublasGemmAlgo_t.
enum Op : int { N = 0, T = 1 };
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70, kGemmDefault = -1;

// at::cuda::getCurrentCUDABlasHandle (ATen/cuda/CUDAContextLight.h), by its mangled names: torch
// 2.11 declares it with no argument, later versions with `bool setup` (true: set the stream and
// workspace, as the call without it does).
constexpr const char* kHandleSetup = "_ZN2at4cuda24getCurrentCUDABlasHandleEb";
constexpr const char* kHandle = "_ZN2at4cuda24getCurrentCUDABlasHandleEv";

struct Api {
  void* (*handle_setup)(bool setup);
  void* (*handle)();
  int (*gemm)(void* handle, int transa, int transb, int m, int n, int k, const void* alpha, const void* a,
              cudaDataType a_type, int lda, const void* b, cudaDataType b_type, int ldb, const void* beta, void* c,
              cudaDataType c_type, int ldc, int compute_type, int algo);
  int (*gemm_batched)(void* handle, int transa, int transb, int m, int n, int k, const void* alpha, const void* a,
                      cudaDataType a_type, int lda, long long stride_a, const void* b, cudaDataType b_type, int ldb,
                      long long stride_b, const void* beta, void* c, cudaDataType c_type, int ldc, long long stride_c,
                      int batch, int compute_type, int algo);
};

inline const Api* api() {
  static const Api* loaded = []() -> const Api* {
    const std::string name = "libcublas.so." + std::to_string(CUDART_VERSION / 1000);
    void* cublas = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
    void* torch_cuda = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD);
    if (cublas == nullptr || torch_cuda == nullptr) return nullptr;
    static Api functions;
    functions.handle_setup = reinterpret_cast<decltype(Api::handle_setup)>(dlsym(torch_cuda, kHandleSetup));
    functions.handle = reinterpret_cast<decltype(Api::handle)>(dlsym(torch_cuda, kHandle));
    functions.gemm = reinterpret_cast<decltype(Api::gemm)>(dlsym(cublas, "cublasGemmEx"));
    functions.gemm_batched = reinterpret_cast<decltype(Api::gemm_batched)>(dlsym(cublas, "cublasGemmStridedBatchedEx"));
    const bool found = functions.gemm && functions.gemm_batched && (functions.handle_setup || functions.handle);
    return found ? &functions : nullptr;
  }();
  return loaded;
}

inline bool available() { return api() != nullptr; }

// torch's handle for this thread, set to the current stream and given torch's workspace for it
// (allocated on the first call for a stream).
inline void* handle() { return api()->handle_setup ? api()->handle_setup(/*setup=*/true) : api()->handle(); }

inline cudaDataType data_type(at::ScalarType dtype) {
  return dtype == at::kDouble  ? CUDA_R_64F
         : dtype == at::kFloat ? CUDA_R_32F
         : dtype == at::kHalf  ? CUDA_R_16F
                               : CUDA_R_16BF;
}

// Whether a product of `dtype` runs in TF32: float32 where torch allows it for cuBLAS, as torch's
// matmul does.
inline bool tf32(at::ScalarType dtype) { return dtype == at::kFloat && at::globalContext().allowTF32CuBLAS(); }

// `count` products, each matrix `stride` elements after its predecessor.
struct Batch {
  int count = 1;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
};

// C = op(A) op(B), or C += op(A) op(B) where `accumulate`, in cuBLAS's column-major terms, A and
// B of `dtype`, C of `c_dtype` (dtype, or float for the half types); the math in float for the
// half types and, as torch's matmul, in TF32 for float32 only where torch allows it; a `batch` of
// such products in one call.
inline void gemm(at::ScalarType dtype, at::ScalarType c_dtype, Op transa, Op transb, int m, int n, int k,
                 const void* a, int lda, const void* b, int ldb, void* c, int ldc, bool accumulate, Batch batch = {}) {
  const double one_double = 1.0, zero_double = 0.0;
  const float one_float = 1.0f, zero_float = 0.0f;
  const bool doubles = dtype == at::kDouble;
  const void* one = doubles ? static_cast<const void*>(&one_double) : &one_float;
  const void* beta = accumulate ? one : doubles ? static_cast<const void*>(&zero_double) : &zero_float;
  const int compute = dtype == at::kDouble ? kCompute64F : tf32(dtype) ? kCompute32FFastTF32 : kCompute32F;
  const cudaDataType type = data_type(dtype), c_type = data_type(c_dtype);
  const int status = batch.count == 1
                         ? api()->gemm(handle(), transa, transb, m, n, k, one, a, type, lda, b, type, ldb, beta, c, c_type,
                                       ldc, compute, kGemmDefault)
                         : api()->gemm_batched(handle(), transa, transb, m, n, k, one, a, type, lda, batch.stride_a, b,
                                               type, ldb, batch.stride_b, beta, c, c_type, ldc, batch.stride_c,
                                               batch.count, compute, kGemmDefault);
  TORCH_CHECK(status == 0, "lltm_sequence: a cuBLAS product failed with status " + std::to_string(status));
}

}  // namespace lltm::cublas
