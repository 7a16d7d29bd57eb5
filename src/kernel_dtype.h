// The dtypes the kernels support, as the kernel files see them: storage types, their math types,
// and a dtype tag that the host passes in place of torch's ScalarType. Includes no torch header:
// c10's half types (and more so c10/core/ScalarType.h) cost a CUDA file a large share of its
// compile time (benchmarks/NOTES.md, "The build"), so the kernels store half and bfloat16 in types
// of their own, converted by CUDA's intrinsics as c10's types are on the device. dtypes.h maps
// them to ScalarType and to c10's types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace lltm {

// Half and bfloat16 storage in the kernels: the bits (c10::Half's and c10::BFloat16's layout),
// converted to and from float in CUDA code; host code converts c10's types instead.
struct alignas(2) half_t {
  uint16_t x;
  half_t() = default;
#if defined(__CUDACC__)
  __host__ __device__ __forceinline__ half_t(float v) : x(__half_as_ushort(__float2half(v))) {}
  __host__ __device__ __forceinline__ operator float() const { return __half2float(__ushort_as_half(x)); }
#endif
};

struct alignas(2) bfloat16_t {
  uint16_t x;
  bfloat16_t() = default;
#if defined(__CUDACC__)
  __host__ __device__ __forceinline__ bfloat16_t(float v) : x(__bfloat16_as_ushort(__float2bfloat16(v))) {}
  __host__ __device__ __forceinline__ operator float() const {
    return __bfloat162float(__ushort_as_bfloat16(x));
  }
#endif
};

// The list, written once: dtypes.h derives the host's checks and dispatch from it.
using SupportedTypes = std::tuple<double, float, half_t, bfloat16_t>;

// A supported dtype: its index in SupportedTypes.
enum class DType : int {};

// Math runs in the math type: float for the half types' storage.
template <typename scalar_t>
struct OpMath {
  using type = scalar_t;
};
template <>
struct OpMath<half_t> {
  using type = float;
};
template <>
struct OpMath<bfloat16_t> {
  using type = float;
};
template <typename scalar_t>
using opmath_t = typename OpMath<scalar_t>::type;

// Calls f(scalar_t{}) with scalar_t the storage type of `dtype`; false where `dtype` is none.
template <size_t I = 0, typename F>
bool dispatch(DType dtype, F&& f) {
  if constexpr (I < std::tuple_size_v<SupportedTypes>) {
    if (static_cast<size_t>(dtype) != I) return dispatch<I + 1>(dtype, f);
    f(std::tuple_element_t<I, SupportedTypes>{});
    return true;
  } else {
    return false;
  }
}

inline size_t element_size(DType dtype) {
  size_t size = 0;
  dispatch(dtype, [&](auto tag) { size = sizeof(tag); });
  return size;
}

}  // namespace lltm
