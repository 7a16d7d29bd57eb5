// The bfloat16 products of cpu_bf16.h: on AVX512-BF16, the tile kernel of cpu_blas.cpp's float one
// with each k step a pair of k and each FMA a vdpbf16ps; on AMX, C in tiles of 16 x 16 floats.
#include "cpu_bf16.h"

#include "cpu_blas.h"

#include <algorithm>
#include <cstring>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LLTM_HAS_BF16_KERNEL 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define LLTM_HAS_BF16_KERNEL 0
#endif
// AMX's intrinsics: GCC 11 (with binutils 2.36 for its inline assembly), clang 12; tiles need
// the kernel's leave (Linux 5.16: arch_prctl).
#if LLTM_HAS_BF16_KERNEL && defined(__linux__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define LLTM_HAS_AMX_KERNEL 1
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#else
#define LLTM_HAS_AMX_KERNEL 0
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

// AVX512-FP16 by CPUID (leaf 7, EDX bit 23), where the system keeps AVX-512's state (avx512f).
bool has_fp16() {
#if LLTM_HAS_BF16_KERNEL
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx512f") && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 23) & 1u);
  }();
  return has;
#else
  return false;
#endif
}

// Whether AMX runs here, and why not where it does not (lltm_jit_cpu_amx): AMX-TILE and AMX-BF16
// by CPUID (with AVX512-BF16, which the kernel's edges use), then the kernel's leave to use the
// tiles' state, asked once for the process (without it the first tile instruction faults; it is
// refused by kernels before Linux 5.16, and where the signal stack is too small for the state).
const std::string& amx_status() {
#if LLTM_HAS_AMX_KERNEL
  static const std::string status = []() -> std::string {
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool tiles = __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 24) & 1u) && ((d >> 22) & 1u);
    if (!tiles || !has_bf16()) return "not on this CPU";
    constexpr long kRequestPermission = 0x1023, kTileData = 18;  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
    if (syscall(SYS_arch_prctl, kRequestPermission, kTileData) != 0) {
      return "refused by the kernel: " + std::generic_category().message(errno);
    }
    return "available";
  }();
#else
  static const std::string status = "not in this build (it needs x86-64 Linux and GCC 11 or clang 12)";
#endif
  return status;
}

bool has_amx() {
  static const bool has = amx_status() == "available";
  return has;
}
}  // namespace

namespace {
Bf16Kernel best_bf16(Blas allowed) {
  if (allowed == Blas::kAmx && has_amx()) return Bf16Kernel::kAmx;
  if (allowed <= Blas::kAvx512 && has_bf16()) return Bf16Kernel::kAvx512;
  return Bf16Kernel::kNone;
}
}  // namespace

Bf16Kernel bf16_kernel() { return best_bf16(allowed_blas()); }

namespace {
bool native_at(Blas allowed, bool bfloat16) {
  if (allowed > Blas::kAvx512) return false;
#if LLTM_HAS_BF16_KERNEL
  return bfloat16 ? has_bf16() : has_fp16();
#else
  return true;
#endif
}
}  // namespace

bool native_half_products(bool bfloat16) { return native_at(allowed_blas(), bfloat16); }

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
// p * 32 + r % 32 of A^T's panel r / 32 (pack_pairs' layout, read along the rows of A).
enum class Layout { kRows, kPairs };

#if LLTM_HAS_BF16_KERNEL
#define LLTM_BF16 __attribute__((target("avx512f,avx512bf16")))

constexpr int kTileRows = 8, kLanes = 16, kPanel = 2 * kLanes;
static_assert(kPanel == kPairPanel, "a block of the tile's columns is a panel of B");

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

#if LLTM_HAS_AMX_KERNEL
#define LLTM_AMX __attribute__((target("amx-tile,amx-bf16,avx512f")))

// AMX's tiles as this kernel uses them: C in tiles 0-3 (a block of up to 32 rows by 32 columns:
// tile 2i + j holds rows 16i.. and columns 16j..), A's two tiles of rows in 4 and 5 (16 rows by 32
// bfloat16 of k), B's two of columns in 6 and 7 (16 pair rows by 16 columns). Each 32 of k costs up
// to 4 TDPBF16PS over 4 tile loads.
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// The tiles for a block whose two tiles of rows have rows0 and rows1 rows (rows1 may be 0: tiles 2,
// 3 and 5 then stay unconfigured and unused). Loading a configuration zeroes every tile.
LLTM_AMX void configure(int rows0, int rows1) {
  TileConfig config;
  const int rows[8] = {rows0, rows0, rows1, rows1, rows0, rows1, 16, 16};
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = static_cast<uint8_t>(rows[t]);
    config.bytes_per_row[t] = rows[t] > 0 ? 64 : 0;
  }
  _tile_loadconfig(&config);
}

// GCC's tile loads tell the compiler of no memory they read: before one reads what plain stores
// wrote here (the padded copies below), this keeps those stores in place.
inline void stores_before_tile_loads() { asm volatile("" ::: "memory"); }

// Where C's tile (rows x columns at c) loads from and stores to: c itself, or for a tile with
// columns past n, `edge` (16 x 16 floats, C's part copied in where accumulating, zeros beside it),
// since the tile's loads and stores cover whole rows of 16.
const float* c_source(const float* c, int64_t ldc, int rows, int columns, float* edge) {
  if (columns == 16) return c;
  for (int r = 0; r < rows; ++r) std::fill_n(std::copy_n(c + r * ldc, columns, edge + r * 16), 16 - columns, 0.0f);
  stores_before_tile_loads();
  return edge;
}

void edge_to_c(const float* edge, float* c, int64_t ldc, int rows, int columns) {
  for (int r = 0; r < rows; ++r) std::copy_n(edge + r * 16, columns, c + r * ldc);
}

// The tile instructions take the tile's number as a literal (GCC's macros paste it into the
// assembly), hence macros rather than a function of it.
#define LLTM_LOAD_C(tile, c, ldc, rows, columns, accumulate, edge)                                    \
  do {                                                                                               \
    if (!(accumulate)) {                                                                             \
      _tile_zero(tile);                                                                              \
    } else {                                                                                         \
      const float* from = c_source(c, ldc, rows, columns, edge);                                     \
      _tile_loadd(tile, from, (from == (c) ? (ldc) : 16) * sizeof(float));                          \
    }                                                                                                \
  } while (false)
#define LLTM_STORE_C(tile, c, ldc, rows, columns, edge)                                               \
  do {                                                                                               \
    if ((columns) == 16) {                                                                           \
      _tile_stored(tile, c, (ldc) * sizeof(float));                                                  \
    } else {                                                                                         \
      _tile_stored(tile, edge, 16 * sizeof(float));                                                  \
      edge_to_c(edge, c, ldc, rows, columns);                                                        \
    }                                                                                                \
  } while (false)

// C (m x n) (+)= A (m x k, row-major with lda) B (pack_pairs' panels): for each block of 32 rows,
// each panel of 32 columns, the whole depth in the tiles. A's last part of k
// (k % 32) goes through a copy padded with zeros (B's padding rows are zeros too), so that what lies
// past A's rows never enters a sum.
LLTM_AMX void amx_product(const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k,
                          float* c, int64_t ldc, bool accumulate) {
  const int64_t panel = pair_panel(k), whole = k / 32 * 32, rest = k - whole;
  alignas(64) uint16_t tail[32 * 32];
  alignas(64) float edge[4][16 * 16];
  int configured0 = -1, configured1 = -1;
  for (int64_t r = 0; r < m; r += 32) {
    const int rows0 = static_cast<int>(std::min<int64_t>(16, m - r));
    const int rows1 = static_cast<int>(std::min<int64_t>(16, std::max<int64_t>(0, m - r - 16)));
    if (rows0 != configured0 || rows1 != configured1) {
      configure(rows0, rows1);
      configured0 = rows0;
      configured1 = rows1;
    }
    const uint16_t* a0 = a + r * lda;
    const uint16_t* a1 = rows1 > 0 ? a0 + 16 * lda : nullptr;
    if (rest > 0) {
      std::fill_n(tail, 32 * 32, uint16_t{0});
      for (int i = 0; i < rows0 + rows1; ++i) std::copy_n(a0 + i * lda + whole, rest, tail + i * 32);
      stores_before_tile_loads();
    }
    for (int64_t j = 0; j < n; j += 32) {
      const int columns0 = static_cast<int>(std::min<int64_t>(16, n - j));
      const int columns1 = static_cast<int>(std::min<int64_t>(16, std::max<int64_t>(0, n - j - 16)));
      float* c0 = c + r * ldc + j;
      float* c1 = rows1 > 0 ? c0 + 16 * ldc : nullptr;
      LLTM_LOAD_C(0, c0, ldc, rows0, columns0, accumulate, edge[0]);
      if (columns1 > 0) LLTM_LOAD_C(1, c0 + 16, ldc, rows0, columns1, accumulate, edge[1]);
      if (rows1 > 0) {
        LLTM_LOAD_C(2, c1, ldc, rows1, columns0, accumulate, edge[2]);
        if (columns1 > 0) LLTM_LOAD_C(3, c1 + 16, ldc, rows1, columns1, accumulate, edge[3]);
      }
      for (int64_t i = 0; i < k; i += 32) {
        const bool padded = i == whole;  // the last, partial 32 of k
        const uint32_t* bi = b + j / kPairPanel * panel + i / 2 * kPairPanel;
        if (i + 32 < k) {  // B's next 32 of k (2 KB) into L1 meanwhile: a tile load from L2 stalls the tiles
          const char* next = reinterpret_cast<const char*>(bi + 16 * kPairPanel);
          for (int line = 0; line < 32; ++line) _mm_prefetch(next + 64 * line, _MM_HINT_T0);
        }
        if (padded) {
          _tile_loadd(4, tail, 64);
          if (rows1 > 0) _tile_loadd(5, tail + 16 * 32, 64);
        } else {
          _tile_loadd(4, a0 + i, lda * sizeof(uint16_t));
          if (rows1 > 0) _tile_loadd(5, a1 + i, lda * sizeof(uint16_t));
        }
        _tile_loadd(6, bi, kPairPanel * sizeof(uint32_t));
        _tile_dpbf16ps(0, 4, 6);
        if (rows1 > 0) _tile_dpbf16ps(2, 5, 6);
        if (columns1 > 0) {
          _tile_loadd(7, bi + 16, kPairPanel * sizeof(uint32_t));
          _tile_dpbf16ps(1, 4, 7);
          if (rows1 > 0) _tile_dpbf16ps(3, 5, 7);
        }
      }
      LLTM_STORE_C(0, c0, ldc, rows0, columns0, edge[0]);
      if (columns1 > 0) LLTM_STORE_C(1, c0 + 16, ldc, rows0, columns1, edge[1]);
      if (rows1 > 0) {
        LLTM_STORE_C(2, c1, ldc, rows1, columns0, edge[2]);
        if (columns1 > 0) LLTM_STORE_C(3, c1 + 16, ldc, rows1, columns1, edge[3]);
      }
    }
  }
  _tile_release();
}
#endif

// A (kRows: m x k row-major with lda; kPairs: A^T packed by pack_pairs) times B (pack_pairs'
// panels), a panel and 8 rows at a time.
template <Layout layout>
void product(const void* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c, int64_t ldc,
             bool accumulate) {
#if LLTM_HAS_BF16_KERNEL
  const int64_t panel = pair_panel(k);
  for (int64_t first = 0; first < n; first += kPanel) {
    const int64_t columns = std::min<int64_t>(kPanel, n - first);
    const __mmask16 lo = first_lanes(columns), hi = first_lanes(columns - kLanes);
    const Tile* tiles = columns == kPanel ? kTiles<true, layout> : kTiles<false, layout>;
    for (int64_t r = 0; r < m; r += kTileRows) {
      // Rows r..r+7: from element r * lda of A, or from word r % 32 of A^T's panel r / 32.
      const void* rows =
          layout == Layout::kRows
              ? static_cast<const void*>(static_cast<const uint16_t*>(a) + r * lda)
              : static_cast<const void*>(static_cast<const uint32_t*>(a) + r / kPairPanel * panel + r % kPairPanel);
      tiles[std::min<int64_t>(kTileRows, m - r)](rows, layout == Layout::kRows ? lda : kPairPanel,
                                                 b + first / kPairPanel * panel, kPairPanel, k, c + r * ldc + first,
                                                 ldc, lo, hi, accumulate);
    }
  }
#endif
}

}  // namespace

int64_t pair_rows(int64_t k) { return ((k + 1) / 2 + 15) / 16 * 16; }
int64_t pair_panel(int64_t k) { return pair_rows(k) * kPairPanel; }
int64_t packed_words(int64_t k, int64_t n) { return (n + kPairPanel - 1) / kPairPanel * pair_panel(k); }

void bf16_product([[maybe_unused]] Bf16Kernel kernel, const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b,
                  int64_t n, int64_t k, float* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
#if LLTM_HAS_AMX_KERNEL
  if (kernel == Bf16Kernel::kAmx) return amx_product(a, lda, m, b, n, k, c, ldc, accumulate);
#endif
  product<Layout::kRows>(a, lda, m, b, n, k, c, ldc, accumulate);
}

void bf16_product_pairs(const uint32_t* a, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c, int64_t ldc,
                        bool accumulate) {
  product<Layout::kPairs>(a, 0, m, b, n, k, c, ldc, accumulate);
}

void pack_pairs(const uint16_t* w, int64_t row, int64_t col, int64_t k, int64_t n, uint32_t* out, int64_t first,
                int64_t end) {
  const int64_t panel = pair_panel(k);
  for (int64_t p = first; p < end; ++p) {
    const uint16_t* even = 2 * p < k ? w + 2 * p * row : nullptr;
    const uint16_t* odd = 2 * p + 1 < k ? even + row : nullptr;
    for (int64_t j0 = 0; j0 < n; j0 += kPairPanel) {
      uint32_t* pairs = out + j0 / kPairPanel * panel + p * kPairPanel;
      const int64_t columns = std::min<int64_t>(kPairPanel, n - j0);
      std::fill(pairs + columns, pairs + kPairPanel, 0u);
      if (even == nullptr) {
        std::fill_n(pairs, columns, 0u);
      } else if (col == 1 && odd != nullptr) {
        pack_rows(even + j0, odd + j0, columns, pairs);
      } else {
        for (int64_t j = 0; j < columns; ++j) {
          const int64_t at = (j0 + j) * col;
          pairs[j] = uint32_t{even[at]} | (odd != nullptr ? uint32_t{odd[at]} << 16 : 0u);
        }
      }
    }
  }
}

void round_to_bf16(const float* x, uint16_t* y, int64_t count) { round_rows(x, y, count); }
void widen_bf16(const uint16_t* x, float* y, int64_t count) { widen_rows(x, y, count); }

}  // namespace lltm::cpu

const char* lltm_jit_cpu_amx() { return lltm::cpu::amx_status().c_str(); }

const char* lltm_jit_cpu_bf16() {
  switch (lltm::cpu::best_bf16(lltm::cpu::Blas::kAmx)) {
    case lltm::cpu::Bf16Kernel::kAmx: return "amx";
    case lltm::cpu::Bf16Kernel::kAvx512: return "avx512-bf16";
    default: return lltm::cpu::native_at(lltm::cpu::Blas::kAmx, /*bfloat16=*/true) ? "aten" : "float";
  }
}

const char* lltm_jit_cpu_fp16() {
  return lltm::cpu::native_at(lltm::cpu::Blas::kAmx, /*bfloat16=*/false) ? "aten" : "float";
}
