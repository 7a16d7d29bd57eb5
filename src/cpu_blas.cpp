// The recurrence's products of cpu_blas.h: an AVX-512 kernel of our own for the few rows a thread
// holds, and the BLAS symbols found once per process in the libraries this one links
// (libtorch_cpu).
#include "cpu_blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LLTM_HAS_AVX512_KERNEL 1
#include <immintrin.h>
#else
#define LLTM_HAS_AVX512_KERNEL 0
#endif

namespace lltm::cpu {
namespace {

#if LLTM_HAS_AVX512_KERNEL
// Why a kernel of our own: with the batch split over the threads, each product has a few rows,
// where MKL's sgemm and packed GEMM run well below this kernel's rate (benchmarks/NOTES.md, "The
// CPU path against nn.LSTM").
//
// A tile of up to 8 rows of C by 32 floats (16 doubles) stays in 16 of the 32 vector registers
// through the whole k loop: two loads of B's row and 8 broadcasts of A per k for 16 FMAs. Columns
// outside, rows inside: a column block of B (k x 128 bytes) stays in L1/L2 for every row. B is read
// in place by avx512_product (the step's weights and state, d_weights' [h, x]); RecurrentProduct
// copies op(W) once per call into panels (panel_product).
#define LLTM_AVX512 __attribute__((target("avx512f,fma")))

template <typename T>
using Vec = std::conditional_t<std::is_same_v<T, float>, __m512, __m512d>;
template <typename T>
using Mask = std::conditional_t<std::is_same_v<T, float>, __mmask16, __mmask8>;
template <typename T>
constexpr int kLanes = 64 / sizeof(T);
template <typename T>
constexpr int kPanel = 2 * kLanes<T>;
constexpr int kTileRows = 8;

LLTM_AVX512 inline __m512 zero_vec(float) { return _mm512_setzero_ps(); }
LLTM_AVX512 inline __m512d zero_vec(double) { return _mm512_setzero_pd(); }
LLTM_AVX512 inline __m512 load(const float* p, __mmask16 k) { return _mm512_maskz_loadu_ps(k, p); }
LLTM_AVX512 inline __m512d load(const double* p, __mmask8 k) { return _mm512_maskz_loadu_pd(k, p); }
LLTM_AVX512 inline __m512 load(const float* p) { return _mm512_loadu_ps(p); }
LLTM_AVX512 inline __m512d load(const double* p) { return _mm512_loadu_pd(p); }
LLTM_AVX512 inline void store(float* p, __mmask16 k, __m512 v) { _mm512_mask_storeu_ps(p, k, v); }
LLTM_AVX512 inline void store(double* p, __mmask8 k, __m512d v) { _mm512_mask_storeu_pd(p, k, v); }
LLTM_AVX512 inline __m512 broadcast(float x) { return _mm512_set1_ps(x); }
LLTM_AVX512 inline __m512d broadcast(double x) { return _mm512_set1_pd(x); }
LLTM_AVX512 inline __m512 fma(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
LLTM_AVX512 inline __m512d fma(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }

// C (rows x the block's columns, masked: lo and hi the two vectors') (+)= A (rows x k) B, where A's
// element (r, i) is a[r * a_row + i * a_col] and B's row i starts at b + i * ldb. B's loads are
// masked in the last block only (`full` false): masked loads made the kernel 2.6x slower here.
template <int rows, bool full, typename T>
LLTM_AVX512 void tile(const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t ldb, int64_t k, T* c,
                      int64_t ldc, Mask<T> lo, Mask<T> hi, bool accumulate) {
  Vec<T> c0[rows], c1[rows];
  for (int r = 0; r < rows; ++r) {
    c0[r] = accumulate ? load(c + r * ldc, lo) : zero_vec(T());
    c1[r] = accumulate ? load(c + r * ldc + kLanes<T>, hi) : zero_vec(T());
  }
  for (int64_t i = 0; i < k; ++i) {
    const Vec<T> b0 = full ? load(b + i * ldb) : load(b + i * ldb, lo);
    const Vec<T> b1 = full ? load(b + i * ldb + kLanes<T>) : load(b + i * ldb + kLanes<T>, hi);
    for (int r = 0; r < rows; ++r) {
      const Vec<T> x = broadcast(a[r * a_row + i * a_col]);
      c0[r] = fma(x, b0, c0[r]);
      c1[r] = fma(x, b1, c1[r]);
    }
  }
  for (int r = 0; r < rows; ++r) {
    store(c + r * ldc, lo, c0[r]);
    store(c + r * ldc + kLanes<T>, hi, c1[r]);
  }
}

template <typename T>
using Tile = void (*)(const T*, int64_t, int64_t, const T*, int64_t, int64_t, T*, int64_t, Mask<T>, Mask<T>, bool);
template <bool full, typename T>
constexpr Tile<T> kTiles[kTileRows + 1] = {nullptr,
                                           tile<1, full, T>,
                                           tile<2, full, T>,
                                           tile<3, full, T>,
                                           tile<4, full, T>,
                                           tile<5, full, T>,
                                           tile<6, full, T>,
                                           tile<7, full, T>,
                                           tile<8, full, T>};

template <typename T>
Mask<T> first_lanes(int64_t count) {
  return count >= kLanes<T> ? Mask<T>(~Mask<T>(0)) : count <= 0 ? Mask<T>(0) : Mask<T>((1u << count) - 1);
}

bool has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// C (m x n) (+)= A B with B in panels (RecurrentProduct's layout): panel p holds columns 32p..32p+31
// (doubles: 16) of every row of B, k x 32 contiguous, the last zero-padded, so that B's loads need no
// mask and a panel's rows, 128 bytes apart, fall in every cache set. Read in place, B's rows lie a
// whole row of B apart, in a few of L1's sets, and the kernel runs well below its rate
// (benchmarks/NOTES.md, "Session 11").
template <typename T>
void panel_product(const T* a, int64_t lda, int64_t m, const T* panels, int64_t n, int64_t k, T* c, int64_t ldc,
                   bool accumulate) {
  for (int64_t first = 0; first < n; first += kPanel<T>) {
    const int64_t columns = std::min<int64_t>(kPanel<T>, n - first);
    const Mask<T> lo = first_lanes<T>(columns), hi = first_lanes<T>(columns - kLanes<T>);
    const T* b = panels + first * k;
    for (int64_t r = 0; r < m; r += kTileRows) {
      kTiles<true, T>[std::min<int64_t>(kTileRows, m - r)](a + r * lda, lda, 1, b, kPanel<T>, k, c + r * ldc + first,
                                                           ldc, lo, hi, accumulate);
    }
  }
}
#else
bool has_avx512() { return false; }
#endif

}  // namespace

template <typename T>
void avx512_product(const T* a, int64_t a_row, int64_t a_col, int64_t m, const T* b, int64_t ldb, int64_t n,
                    int64_t k, T* c, int64_t ldc, bool accumulate) {
#if LLTM_HAS_AVX512_KERNEL
  for (int64_t first = 0; first < n; first += kPanel<T>) {
    const int64_t columns = std::min<int64_t>(kPanel<T>, n - first);
    const Mask<T> lo = first_lanes<T>(columns), hi = first_lanes<T>(columns - kLanes<T>);
    for (int64_t r = 0; r < m; r += kTileRows) {
      const Tile<T>* tiles = columns == kPanel<T> ? kTiles<true, T> : kTiles<false, T>;
      tiles[std::min<int64_t>(kTileRows, m - r)](a + r * a_row, a_row, a_col, b + first, ldb, k,
                                                     c + r * ldc + first, ldc, lo, hi, accumulate);
    }
  }
#endif
}

template void avx512_product(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t, int64_t,
                             float*, int64_t, bool);
template void avx512_product(const double*, int64_t, int64_t, int64_t, const double*, int64_t, int64_t, int64_t,
                             double*, int64_t, bool);

namespace {

// CBLAS's enumerations, as mkl_cblas.h numbers them (torch ships no MKL header).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112, kPackedOperand = 151, kBMatrix = 162;

// MKL's LP64 interface (MKL_INT is int), the one that exports the unsuffixed names.
using PackGetSize = size_t (*)(int identifier, int m, int n, int k);
using Pack = void (*)(int layout, int identifier, int trans, int m, int n, int k, float alpha, const float* src,
                      int ld, float* dest);
using Compute = void (*)(int layout, int transa, int transb, int m, int n, int k, const float* a, int lda,
                         const float* b, int ldb, float beta, float* c, int ldc);
template <typename T>
using Gemm = void (*)(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                      const T* alpha, const T* a, const int* lda, const T* b, const int* ldb, const T* beta, T* c,
                      const int* ldc);

struct Symbols {
  PackGetSize pack_get_size;
  Pack pack;
  Compute compute;
  Gemm<float> sgemm;
  Gemm<double> dgemm;

  bool has_packed() const { return pack_get_size && pack && compute; }
};

template <typename F>
F find(const char* name) {
  // RTLD_DEFAULT from a library searches its own lookup scope, which holds the libraries it links
  // (libtorch_cpu) also where Python loaded it with RTLD_LOCAL.
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

const Symbols& symbols() {
  static const Symbols found{find<PackGetSize>("cblas_sgemm_pack_get_size"), find<Pack>("cblas_sgemm_pack"),
                             find<Compute>("cblas_sgemm_compute"), find<Gemm<float>>("sgemm_"),
                             find<Gemm<double>>("dgemm_")};
  return found;
}

// Whether this process can run `blas` for float or double, with dimensions up to `largest`.
bool available(Blas blas, bool is_double, int64_t largest) {
  const Symbols& s = symbols();
  const bool fits = largest <= INT_MAX;  // the BLAS's 32-bit interface
  switch (blas) {
    case Blas::kAmx: return false;  // no float or double products on AMX
    case Blas::kAvx512: return has_avx512();
    case Blas::kPacked: return fits && !is_double && s.has_packed();
    case Blas::kGemm: return fits && (is_double ? s.dgemm != nullptr : s.sgemm != nullptr);
    case Blas::kNone: return true;
  }
  return false;
}

// The best available at or below `from`.
Blas first_available(Blas from, bool is_double, int64_t largest) {
  int blas = static_cast<int>(from);
  while (!available(static_cast<Blas>(blas), is_double, largest)) ++blas;
  return static_cast<Blas>(blas);
}

}  // namespace

Blas allowed_blas() {
  const char* asked = std::getenv("LLTM_JIT_CPU_RECURRENCE");
  if (asked == nullptr || *asked == '\0') return Blas::kAmx;
  constexpr std::pair<const char*, Blas> kNames[] = {{"amx", Blas::kAmx},     {"avx512", Blas::kAvx512},
                                                     {"packed", Blas::kPacked}, {"gemm", Blas::kGemm},
                                                     {"aten", Blas::kNone}};
  for (const auto& [name, blas] : kNames) {
    if (std::strcmp(asked, name) == 0) return blas;
  }
  // A typo must not pass for the default.
  throw std::invalid_argument(std::string("LLTM_JIT_CPU_RECURRENCE=") + asked +
                              ": expected amx, avx512, packed, gemm or aten");
}

Blas recurrence_blas(bool is_double, int64_t largest_dimension) {
  return first_available(allowed_blas(), is_double, largest_dimension);
}

template <typename T>
RecurrentProduct<T>::RecurrentProduct(Blas blas, const T* w, int64_t ld, bool transposed, int64_t n, int64_t k)
    : blas_(blas), w_(w), ld_(ld), n_(n), k_(k), transposed_(transposed) {
  if (blas_ == Blas::kAvx512) {
#if LLTM_HAS_AVX512_KERNEL
    // op(W) (k x n) in panels (panel_product); a panel's element (i, j) is op(W)(i, first + j). W is
    // read along its rows either way (down its columns, W^T's copy took about as long as the first
    // few steps).
    const int64_t panels = (n + kPanel<T> - 1) / kPanel<T>;
    const size_t bytes = panels * kPanel<T> * k * sizeof(T);
    T* out = static_cast<T*>(packed_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (out == nullptr) throw std::bad_alloc();
    for (int64_t p = 0; p < panels; ++p) {
      T* panel = out + p * kPanel<T> * k;
      const int64_t first = p * kPanel<T>, columns = std::min<int64_t>(kPanel<T>, n - first);
      if (columns < kPanel<T>) std::fill_n(panel, kPanel<T> * k, T(0));
      if (transposed) {  // W (n x k): its row `first + j` is the panel's column j, 16 of k at a time
        for (int64_t i0 = 0; i0 < k; i0 += 16) {
          const int64_t i1 = std::min<int64_t>(k, i0 + 16);
          for (int64_t j = 0; j < columns; ++j) {
            for (int64_t i = i0; i < i1; ++i) panel[i * kPanel<T> + j] = w[(first + j) * ld + i];
          }
        }
      } else {
        for (int64_t i = 0; i < k; ++i) std::copy_n(w + i * ld + first, columns, panel + i * kPanel<T>);
      }
    }
#endif
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (blas_ != Blas::kPacked) return;
    const Symbols& s = symbols();
    // m (1 here) does not enter a packed B: one packing serves every row count.
    const size_t bytes = s.pack_get_size(kBMatrix, 1, n, k);
    packed_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (packed_ == nullptr) throw std::bad_alloc();
    s.pack(kRowMajor, kBMatrix, transposed_ ? kTrans : kNoTrans, 1, n, k, 1.0f, w_, ld, static_cast<float*>(packed_));
  }
}

template <typename T>
RecurrentProduct<T>::~RecurrentProduct() {
  std::free(packed_);
}

template <typename T>
void RecurrentProduct<T>::operator()(const T* a, int64_t lda, int64_t m, T* c, int64_t ldc, bool accumulate) const {
  if (m == 0 || n_ == 0) return;
  if (blas_ == Blas::kAvx512) {
#if LLTM_HAS_AVX512_KERNEL
    panel_product(a, lda, m, static_cast<const T*>(packed_), n_, k_, c, ldc, accumulate);
#endif
    return;
  }
  const int rows = static_cast<int>(m), n = static_cast<int>(n_), k = static_cast<int>(k_);
  const int ld = static_cast<int>(ld_), a_ld = static_cast<int>(lda), c_ld = static_cast<int>(ldc);
  const T beta = accumulate ? T(1) : T(0);
  if constexpr (std::is_same_v<T, float>) {
    if (blas_ == Blas::kPacked) {
      symbols().compute(kRowMajor, kNoTrans, kPackedOperand, rows, n, k, a, a_ld, static_cast<const float*>(packed_),
                        n, beta, c, c_ld);
      return;
    }
  }
  // Column-major, the Fortran interface's view: C^T (n x m) = op(W)^T A^T, where the row-major W
  // read column-major is W^T and A is A^T.
  const T one = 1;
  const char* trans_w = transposed_ ? "T" : "N";
  if constexpr (std::is_same_v<T, float>) {
    symbols().sgemm(trans_w, "N", &n, &rows, &k, &one, w_, &ld, a, &a_ld, &beta, c, &c_ld);
  } else {
    symbols().dgemm(trans_w, "N", &n, &rows, &k, &one, w_, &ld, a, &a_ld, &beta, c, &c_ld);
  }
}

template class RecurrentProduct<float>;
template class RecurrentProduct<double>;

}  // namespace lltm::cpu

namespace lltm::cpu {
bool own_products(bool is_double, int64_t flops, int64_t most_flops) {
  return flops <= most_flops && recurrence_blas(is_double, 0) == Blas::kAvx512;
}
}  // namespace lltm::cpu

const char* lltm_jit_cpu_recurrence() {
  switch (lltm::cpu::first_available(lltm::cpu::Blas::kAvx512, false, 0)) {
    case lltm::cpu::Blas::kAvx512: return "avx512";
    case lltm::cpu::Blas::kPacked: return "mkl-packed";
    case lltm::cpu::Blas::kGemm: return "sgemm";
    default: return "aten";
  }
}
