// The dtypes every operator supports (listed once, in kernel_dtype.h) as the host code sees them:
// `dispatch` runs a function for the one at hand, `is_supported` answers the argument checks, and
// `kernel_dtype` names a tensor's dtype for the CUDA kernels. Host code sees c10's types (HostTypes:
// c10::Half and c10::BFloat16 where the kernels store half_t and bfloat16_t); math runs in
// at::opmath_type<scalar_t> (float for the half types).
#pragma once

#include "kernel_dtype.h"

#include <ATen/OpMathType.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <array>
#include <string>
#include <tuple>
#include <utility>

namespace lltm {

// A storage type of kernel_dtype.h as host code and torch name it.
template <typename T>
struct HostType {
  using type = T;
};
template <>
struct HostType<half_t> {
  using type = c10::Half;
};
template <>
struct HostType<bfloat16_t> {
  using type = c10::BFloat16;
};
static_assert(sizeof(c10::Half) == sizeof(half_t) && sizeof(c10::BFloat16) == sizeof(bfloat16_t));

template <typename... T>
std::tuple<typename HostType<T>::type...> host_types(std::tuple<T...>);
// SupportedTypes, in its order, as host code names them.
using HostTypes = decltype(host_types(SupportedTypes{}));

inline bool is_supported(at::ScalarType type) {
  return std::apply([&](auto... tags) { return ((c10::CppTypeToScalarType<decltype(tags)>::value == type) || ...); },
                    HostTypes{});
}

// Calls f(scalar_t{}) with scalar_t the C++ type of `type`, e.g.
//   dispatch(t.scalar_type(), "lltm_forward_cpu", [&](auto tag) { using scalar_t = decltype(tag); ... });
template <typename F>
void dispatch(at::ScalarType type, const char* name, F&& f) {
  const bool ran = std::apply(
      [&](auto... tags) {
        return ((c10::CppTypeToScalarType<decltype(tags)>::value == type ? (f(tags), true) : false) || ...);
      },
      HostTypes{});
  TORCH_CHECK_NOT_IMPLEMENTED(ran, std::string(name) + ": not implemented for " + c10::toString(type));
}

// `type` as the kernels name it (kernel_dtype.h): its index in SupportedTypes.
template <typename... T>
constexpr std::array<at::ScalarType, sizeof...(T)> scalar_types(std::tuple<T...>) {
  return {c10::CppTypeToScalarType<T>::value...};
}

inline DType kernel_dtype(at::ScalarType type) {
  constexpr auto types = scalar_types(HostTypes{});
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == type) return static_cast<DType>(i);
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, std::string("lltm: no kernel for ") + c10::toString(type));
}

}  // namespace lltm
