// The dtypes the kernels support, as the kernel files see them: storage types, their math types,
// and a dtype tag that the host passes in place of torch's ScalarType. Includes only c10's half
// types: c10/core/ScalarType.h (and ATen/OpMathType.h, which includes it) cost a CUDA file seconds
// of its compile time (benchmarks/NOTES.md, "The build"). dtypes.h maps ScalarType to these.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstddef>
#include <tuple>

namespace lltm {

// The list, written once: dtypes.h derives the host's checks and dispatch from it.
using SupportedTypes = std::tuple<double, float, c10::Half, c10::BFloat16>;

// A supported dtype: its index in SupportedTypes.
enum class DType : int {};

// Math runs in the math type: float for the half types' storage.
template <typename scalar_t>
struct OpMath {
  using type = scalar_t;
};
template <>
struct OpMath<c10::Half> {
  using type = float;
};
template <>
struct OpMath<c10::BFloat16> {
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
