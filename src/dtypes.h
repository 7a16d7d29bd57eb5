// The dtypes every operator supports, listed once: `dispatch` runs a function for the one at hand
// and `is_supported` answers the argument checks. Math runs in at::opmath_type<scalar_t> (float
// for c10::Half and c10::BFloat16 storage). Includes only c10 headers, so that the CUDA kernel
// files can use it cheaply.
#pragma once

#include <ATen/OpMathType.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <string>
#include <tuple>
#include <utility>

namespace lltm {

using SupportedTypes = std::tuple<double, float, c10::Half, c10::BFloat16>;

inline bool is_supported(at::ScalarType type) {
  return std::apply([&](auto... tags) { return ((c10::CppTypeToScalarType<decltype(tags)>::value == type) || ...); },
                    SupportedTypes{});
}

// Calls f(scalar_t{}) with scalar_t the C++ type of `type`, e.g.
//   dispatch(t.scalar_type(), "lltm_forward_cpu", [&](auto tag) { using scalar_t = decltype(tag); ... });
template <typename F>
void dispatch(at::ScalarType type, const char* name, F&& f) {
  const bool ran = std::apply(
      [&](auto... tags) {
        return ((c10::CppTypeToScalarType<decltype(tags)>::value == type ? (f(tags), true) : false) || ...);
      },
      SupportedTypes{});
  TORCH_CHECK_NOT_IMPLEMENTED(ran, std::string(name) + ": not implemented for " + c10::toString(type));
}

}  // namespace lltm
