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

// B's rows contiguous (col 1) in a loop of their own: the compiler vectorises it as interleaving.
LLTM_BF16_CLONES void pack_rows(const uint16_t* even, const uint16_t* odd, int64_t n, uint32_t* pairs) {
  for (int64_t j = 0; j < n; ++j) pairs[j] = uint32_t{even[j]} | uint32_t{odd[j]} << 16;
}

LLTM_BF16_CLONES void widen_rows(const uint16_t* x, float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = uint32_t{x[i]} << 16;
    std::memcpy(&y[i], &bits, sizeof bits);
  }
}

// Where a tile finds A's pair (r, p): in A's row r (row-major bfloat16, k contiguous), or as word
// p * ld + r of A^T packed in pairs (pack_pairs' layout, read along the rows of A).
enum class Layout { kRows, kPairs };

#if LLTM_HAS_BF16_KERNEL
#define LLTM_BF16 __attribute__((target("avx512f,avx512bf16")))

constexpr int kTileRows = 8, kLanes = 16, kPanel = 2 * kLanes;

LLTM_BF16 inline __m512bh pairs_of(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// C (rows x the block's columns, masked: lo and hi the two vectors') (+)= A (rows x k) B, B's
// pair row p at b + p * ldb. B's loads are masked in the last block only (`full` false), as in the
// float kernel.
template <int rows, bool full, Layout layout>
LLTM_BF16 void tile(const void* a, int64_t lda, const uint32_t* b, int64_t ldb, int64_t k, float* c, int64_t ldc,
                    __mmask16 lo, __mmask16 hi, bool accumulate) {
  __m512 c0[rows], c1[rows];
  for (int r = 0; r < rows; ++r) {
    c0[r] = accumulate ? _mm512_maskz_loadu_ps(lo, c + r * ldc) : _mm512_setzero_ps();
    c1[r] = accumulate ? _mm512_maskz_loadu_ps(hi, c + r * ldc + kLanes) : _mm512_setzero_ps();
  }
  // Packed pairs end in a zero half where k is odd, as B's do; A's rows end at k.
  const int64_t whole = layout == Layout::kPairs ? (k + 1) / 2 : k / 2;
  for (int64_t p = 0; p < whole; ++p) {
    const uint32_t* row = b + p * ldb;
    const __m512bh b0 = pairs_of(full ? _mm512_loadu_si512(row) : _mm512_maskz_loadu_epi32(lo, row));
    const __m512bh b1 =
        pairs_of(full ? _mm512_loadu_si512(row + kLanes) : _mm512_maskz_loadu_epi32(hi, row + kLanes));
    for (int r = 0; r < rows; ++r) {
      uint32_t pair;
      if constexpr (layout == Layout::kPairs) {
        pair = static_cast<const uint32_t*>(a)[p * lda + r];
      } else {
        std::memcpy(&pair, static_cast<const uint16_t*>(a) + r * lda + 2 * p, sizeof pair);
      }
      const __m512bh x = pairs_of(_mm512_set1_epi32(static_cast<int>(pair)));
      c0[r] = _mm512_dpbf16_ps(c0[r], x, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], x, b1);
    }
  }
  if (layout == Layout::kRows && k % 2 != 0) {  // the last pair holds one value of A's row
    const uint32_t* row = b + whole * ldb;
    const __m512bh b0 = pairs_of(_mm512_maskz_loadu_epi32(lo, row));
    const __m512bh b1 = pairs_of(_mm512_maskz_loadu_epi32(hi, row + kLanes));
    for (int r = 0; r < rows; ++r) {
      const __m512bh x = pairs_of(_mm512_set1_epi32(static_cast<const uint16_t*>(a)[r * lda + k - 1]));
      c0[r] = _mm512_dpbf16_ps(c0[r], x, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], x, b1);
    }
  }
  for (int r = 0; r < rows; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, lo, c0[r]);
    _mm512_mask_storeu_ps(c + r * ldc + kLanes, hi, c1[r]);
  }
}

using Tile = void (*)(const void*, int64_t, const uint32_t*, int64_t, int64_t, float*, int64_t, __mmask16, __mmask16,
                      bool);
template <bool full, Layout layout>
constexpr Tile kTiles[kTileRows + 1] = {
    nullptr,                  tile<1, full, layout>, tile<2, full, layout>, tile<3, full, layout>,
    tile<4, full, layout>,    tile<5, full, layout>, tile<6, full, layout>, tile<7, full, layout>,
    tile<8, full, layout>};

__mmask16 first_lanes(int64_t count) {
  return count >= kLanes ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}
#endif

}  // namespace

namespace {

template <Layout layout>
void product(const void* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c, int64_t ldc,
             bool accumulate) {
#if LLTM_HAS_BF16_KERNEL
  // A's rows r..r+7 start at element r * lda of A (kRows) or at word r of each pair row (kPairs).
  const int64_t row_step = layout == Layout::kRows ? lda : 1;
  for (int64_t first = 0; first < n; first += kPanel) {
    const int64_t columns = std::min<int64_t>(kPanel, n - first);
    const __mmask16 lo = first_lanes(columns), hi = first_lanes(columns - kLanes);
    const Tile* tiles = columns == kPanel ? kTiles<true, layout> : kTiles<false, layout>;
    for (int64_t r = 0; r < m; r += kTileRows) {
      const void* rows = layout == Layout::kRows ? static_cast<const void*>(static_cast<const uint16_t*>(a) + r * row_step)
                                                 : static_cast<const void*>(static_cast<const uint32_t*>(a) + r);
      tiles[std::min<int64_t>(kTileRows, m - r)](rows, lda, b + first, n, k, c + r * ldc + first, ldc, lo, hi,
                                                 accumulate);
    }
  }
#endif
}

}  // namespace

void bf16_product(const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c,
                  int64_t ldc, bool accumulate) {
  product<Layout::kRows>(a, lda, m, b, n, k, c, ldc, accumulate);
}

void bf16_product_pairs(const uint32_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c,
                        int64_t ldc, bool accumulate) {
  product<Layout::kPairs>(a, lda, m, b, n, k, c, ldc, accumulate);
}

void pack_pairs(const uint16_t* w, int64_t row, int64_t col, int64_t k, int64_t n, uint32_t* out, int64_t first,
                int64_t end) {
  for (int64_t p = first; p < end; ++p) {
    const uint16_t* even = w + 2 * p * row;
    const uint16_t* odd = 2 * p + 1 < k ? even + row : nullptr;
    uint32_t* pairs = out + p * n;
    if (col == 1 && odd != nullptr) {
      pack_rows(even, odd, n, pairs);
      continue;
    }
    for (int64_t j = 0; j < n; ++j) {
      pairs[j] = uint32_t{even[j * col]} | (odd != nullptr ? uint32_t{odd[j * col]} << 16 : 0u);
    }
  }
}

void round_to_bf16(const float* x, uint16_t* y, int64_t count) { round_rows(x, y, count); }
void widen_bf16(const uint16_t* x, float* y, int64_t count) { widen_rows(x, y, count); }

}  // namespace lltm::cpu

bool lltm_jit_cpu_bf16() { return lltm::cpu::has_bf16(); }
