// What the CUDA kernels share: the math policy for each storage type and vector memory access.
#pragma once

#include "kernel_dtype.h"
#include "lltm_math.h"

#include <cstdint>
#include <type_traits>

namespace lltm::cuda {

// For half and bfloat16 storage: the hardware's approximations (ex2.approx, rcp.approx and
// tanh.approx, relative errors of about 2^-22, 2^-23 and 2^-11) in place of CUDA's accurate float
// functions, whose dozens of instructions each would make the fused passes instruction-bound
// rather than memory-bound. Their errors stay at or below the storage's rounding (2^-9 for
// bfloat16, 2^-11 for half). exp(x) - 1 loses relative precision near 0 but not absolute
// precision, which is what the candidate's uses (old_cell + candidate * input_gate, candidate + 1)
// need.
struct FastMath : StdMath {
  __device__ static float exp(float x) { return __expf(x); }
  __device__ static float expm1(float x) { return __expf(x) - 1.0f; }
  // __fdividef gives 0 for divisors above 2^126, whose reciprocals are subnormal: sigmoid(z) for z
  // in (-88.72, -87.33] would be 0 and turn a candidate of inf into NaN where eager PyTorch gives
  // inf. The divisor scaled by 1/4 stays below 2^126 for every x below 2^128 (sigmoid's x >= 1).
  __device__ static float reciprocal(float x) { return __fdividef(0.25f, 0.25f * x); }
  __device__ static float tanh(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return tanhf(x);
#endif
  }
};

// The functions the math of scalar_t storage uses.
template <typename scalar_t>
using MathFor = std::conditional_t<std::is_same_v<scalar_t, half_t> || std::is_same_v<scalar_t, bfloat16_t>,
                                   FastMath, StdMath>;

// VEC elements read or written with one access.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <int VEC, typename T>
__device__ __forceinline__ Pack<T, VEC> read_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, VEC>*>(p);
}

template <int VEC, typename T>
__device__ __forceinline__ void write_pack(T* p, const Pack<T, VEC>& pack) {
  *reinterpret_cast<Pack<T, VEC>*>(p) = pack;
}

// The first of the VEC adjacent state columns a thread of an elementwise pass takes: threads
// across the grid's x, VEC columns each.
template <int VEC>
__device__ __forceinline__ int64_t thread_column() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
}

LLTM_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
LLTM_HD int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace lltm::cuda
