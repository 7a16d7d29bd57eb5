// The bfloat16 products of cpu_bf16.h: the tile kernel of cpu_blas.cpp's float one, with each k
// step a pair of k and each FMA a vdpbf16ps.
#include "cpu_bf16.h"

#include "cpu_blas.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LLTM_HAS_BF16_KERNEL 1
#include <immintrin.h>
#else
#define LLTM_HAS_BF16_KERNEL 0
#endif

namespace lltm::cpu {

namespace {
bool has_bf16() {
#if LLTM_HAS_BF16_KERNEL
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}
}  // namespace

bool bf16_products() { return has_bf16() && recurrence_blas(false, 0) == Blas::kAvx512; }

void pack_pairs(const uint16_t* w, int64_t row, int64_t col, int64_t k, int64_t n, uint32_t* out, int64_t first,
                int64_t end) {
  for (int64_t p = first; p < end; ++p) {
    const uint16_t* even = w + 2 * p * row;
    const uint16_t* odd = 2 * p + 1 < k ? even + row : nullptr;
    uint32_t* pairs = out + p * n;
    for (int64_t j = 0; j < n; ++j) {
      pairs[j] = uint32_t{even[j * col]} | (odd != nullptr ? uint32_t{odd[j * col]} << 16 : 0u);
    }
  }
}

namespace {

// The plain loops below are the compiler's to vectorise; clones for AVX-512 and AVX2, chosen at
// load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LLTM_BF16_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LLTM_BF16_CLONES
#endif

LLTM_BF16_CLONES void round_rows(const float* x, uint16_t* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof bits);
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    y[i] = x[i] != x[i] ? uint16_t{0x7FC0} : static_cast<uint16_t>(rounded);
  }
}

LLTM_BF16_CLONES void widen_rows(const uint16_t* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = uint32_t{x[i]} << 16;
    std::memcpy(&y[i], &bits, sizeof bits);
  }
}

#if LLTM_HAS_BF16_KERNEL
#define LLTM_BF16 __attribute__((target("avx512f,avx512bf16")))

constexpr int kTileRows = 8, kLanes = 16, kPanel = 2 * kLanes;

LLTM_BF16 inline __m512bh pairs_of(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// C (rows x the block's columns, masked: lo and hi the two vectors') (+)= A (rows x k) B, B's
// pair row p at b + p * ldb. B's loads are masked in the last block only (`full` false), as in the
// float kernel.
template <int rows, bool full>
LLTM_BF16 void tile(const uint16_t* a, int64_t lda, const uint32_t* b, int64_t ldb, int64_t k, float* c,
                    int64_t ldc, __mmask16 lo, __mmask16 hi, bool accumulate) {
  __m512 c0[rows], c1[rows];
  for (int r = 0; r < rows; ++r) {
    c0[r] = accumulate ? _mm512_maskz_loadu_ps(lo, c + r * ldc) : _mm512_setzero_ps();
    c1[r] = accumulate ? _mm512_maskz_loadu_ps(hi, c + r * ldc + kLanes) : _mm512_setzero_ps();
  }
  const int64_t whole = k / 2;
  for (int64_t p = 0; p < whole; ++p) {
    const uint32_t* row = b + p * ldb;
    const __m512bh b0 = pairs_of(full ? _mm512_loadu_si512(row) : _mm512_maskz_loadu_epi32(lo, row));
    const __m512bh b1 =
        pairs_of(full ? _mm512_loadu_si512(row + kLanes) : _mm512_maskz_loadu_epi32(hi, row + kLanes));
    for (int r = 0; r < rows; ++r) {
      uint32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * p, sizeof pair);
      const __m512bh x = pairs_of(_mm512_set1_epi32(static_cast<int>(pair)));
      c0[r] = _mm512_dpbf16_ps(c0[r], x, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], x, b1);
    }
  }
  if (k % 2 != 0) {  // the last pair holds one value of A's row; its other half in B is zero
    const uint32_t* row = b + whole * ldb;
    const __m512bh b0 = pairs_of(_mm512_maskz_loadu_epi32(lo, row));
    const __m512bh b1 = pairs_of(_mm512_maskz_loadu_epi32(hi, row + kLanes));
    for (int r = 0; r < rows; ++r) {
      const __m512bh x = pairs_of(_mm512_set1_epi32(a[r * lda + k - 1]));
      c0[r] = _mm512_dpbf16_ps(c0[r], x, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], x, b1);
    }
  }
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, lo, c0[r]);
    _mm512_mask_storeu_ps(c + r * ldc + kLanes, hi, c1[r]);
  }
}

using Tile = void (*)(const uint16_t*, int64_t, const uint32_t*, int64_t, int64_t, float*, int64_t, __mmask16,
                      __mmask16, bool);
template <bool full>
constexpr Tile kTiles[kTileRows + 1] = {nullptr,           tile<1, full>, tile<2, full>, tile<3, full>, tile<4, full>,
                                        tile<5, full>,     tile<6, full>, tile<7, full>, tile<8, full>};

__mmask16 first_lanes(int64_t count) {
  return count >= kLanes ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}
#endif

}  // namespace

void bf16_product(const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c,
                  int64_t ldc, bool accumulate) {
#if LLTM_HAS_BF16_KERNEL
  for (int64_t first = 0; first < n; first += kPanel) {
    const int64_t columns = std::min<int64_t>(kPanel, n - first);
    const __mmask16 lo = first_lanes(columns), hi = first_lanes(columns - kLanes);
    const Tile* tiles = columns == kPanel ? kTiles<true> : kTiles<false>;
    for (int64_t r = 0; r < m; r += kTileRows) {
      tiles[std::min<int64_t>(kTileRows, m - r)](a + r * lda, lda, b + first, n, k, c + r * ldc + first, ldc, lo, hi,
                                                 accumulate);
    }
  }
#endif
}

void transpose_bf16(const uint16_t* src, int64_t rows, int64_t cols, int64_t first, int64_t end, uint16_t* dst) {
  // In blocks of 32 source rows: each destination row gets 64 contiguous bytes, while the 32 source
  // rows that the block reads stay in L1 (ATen's bfloat16 transposing copy took ~4x longer here).
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t i1 = std::min(rows, i0 + kBlock);
    for (int64_t j = first; j < end; ++j) {
      uint16_t* out = dst + (j - first) * rows;
      for (int64_t i = i0; i < i1; ++i) out[i] = src[i * cols + j];
    }
  }
}

void round_to_bf16(const float* x, uint16_t* y, int64_t count) { round_rows(x, y, count); }
void widen_bf16(const uint16_t* x, float* y, int64_t count) { widen_rows(x, y, count); }

}  // namespace lltm::cpu

bool lltm_jit_cpu_bf16() { return lltm::cpu::has_bf16(); }
