// bfloat16 products on the CPU's dot-product instruction (AVX512-BF16, vdpbf16ps): two bfloat16
// products summed into a float a lane, twice fp32's FMA rate. For the sequence's recurrence and
// its products after it in bfloat16 (sequence_cpu.cpp), where MKL's bfloat16 GEMM runs slower than
// its float one on CPUs without AMX. bfloat16 values travel as their bits (uint16_t, the layout of
// c10::BFloat16); includes no torch header.
#pragma once

#include <cstdint>

namespace lltm::cpu {

// Whether this CPU has AVX512-BF16 (and AVX-512), and LLTM_JIT_CPU_RECURRENCE leaves the choice at
// our kernels (cpu_blas.h's recurrence_blas): the products below run only where it says so.
bool bf16_products();

// B (k x n) packed for bf16_product: word p * n + j holds B(2p, j) in its low half and B(2p + 1, j)
// in its high half (zero past k), for the pairs [first, end) of (k + 1) / 2, B(i, j) being
// w[i * row + j * col]. A range, so that a large B packs over the threads.
void pack_pairs(const uint16_t* w, int64_t row, int64_t col, int64_t k, int64_t n, uint32_t* out, int64_t first,
                int64_t end);

// C (m x n float, ldc) = A B (+ C where accumulate), sums in float: A (m x k) bfloat16 row-major
// with lda, B packed by pack_pairs. Where bf16_products() says so only.
void bf16_product(const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c,
                  int64_t ldc, bool accumulate);

// The same with A (m x k) given as A^T (k x m) packed by pack_pairs into pair rows of lda words:
// A's pair (r, p) is word p * lda + r. For an A stored k-minor (d_gates^T): packing its rows runs
// at a copy's speed, a transposing copy of bfloat16 several times slower.
void bf16_product_pairs(const uint32_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c,
                        int64_t ldc, bool accumulate);

// float to bfloat16 as c10::BFloat16 rounds (to nearest even; NaN to a quiet NaN), and back.
void round_to_bf16(const float* x, uint16_t* y, int64_t count);
void widen_bf16(const uint16_t* x, float* y, int64_t count);

}  // namespace lltm::cpu

// For tests and bench records: whether bfloat16 runs through the kernel above by default here (the
// CPU has AVX512-BF16).
extern "C" bool lltm_jit_cpu_bf16();
