// The BLAS symbols of cpu_blas.h, found once per process in the libraries this one links
// (libtorch_cpu), and the products through them.
#include "cpu_blas.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace lltm::cpu {
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

Blas best(bool is_double) {
  const Symbols& s = symbols();
  if (!is_double && s.has_packed()) return Blas::kPacked;
  if (is_double ? s.dgemm != nullptr : s.sgemm != nullptr) return Blas::kGemm;
  return Blas::kNone;
}

}  // namespace

Blas recurrence_blas(bool is_double, int64_t largest_dimension) {
  if (largest_dimension > INT_MAX) return Blas::kNone;
  Blas blas = best(is_double);
  if (const char* asked = std::getenv("LLTM_JIT_CPU_RECURRENCE")) {
    const Blas wanted = std::strcmp(asked, "aten") == 0   ? Blas::kNone
                        : std::strcmp(asked, "gemm") == 0 ? Blas::kGemm
                                                          : Blas::kPacked;
    if (static_cast<int>(wanted) > static_cast<int>(blas)) blas = wanted;
  }
  return blas;
}

template <typename T>
RecurrentProduct<T>::RecurrentProduct(Blas blas, const T* w, int64_t ld, bool transposed, int64_t n, int64_t k)
    : blas_(blas), w_(w), ld_(static_cast<int>(ld)), n_(static_cast<int>(n)), k_(static_cast<int>(k)),
      transposed_(transposed) {
  if constexpr (std::is_same_v<T, float>) {
    if (blas_ != Blas::kPacked) return;
    const Symbols& s = symbols();
    // m (1 here) does not enter a packed B: one packing serves every row count.
    const size_t bytes = s.pack_get_size(kBMatrix, 1, n_, k_);
    packed_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (packed_ == nullptr) throw std::bad_alloc();
    s.pack(kRowMajor, kBMatrix, transposed_ ? kTrans : kNoTrans, 1, n_, k_, 1.0f, w_, ld_,
           static_cast<float*>(packed_));
  }
}

template <typename T>
RecurrentProduct<T>::~RecurrentProduct() {
  std::free(packed_);
}

template <typename T>
void RecurrentProduct<T>::operator()(const T* a, int64_t lda, int64_t m, T* c, int64_t ldc, bool accumulate) const {
  if (m == 0 || n_ == 0) return;
  const int rows = static_cast<int>(m), a_ld = static_cast<int>(lda), c_ld = static_cast<int>(ldc);
  const T beta = accumulate ? T(1) : T(0);
  if constexpr (std::is_same_v<T, float>) {
    if (blas_ == Blas::kPacked) {
      symbols().compute(kRowMajor, kNoTrans, kPackedOperand, rows, n_, k_, a, a_ld,
                        static_cast<const float*>(packed_), n_, beta, c, c_ld);
      return;
    }
  }
  // Column-major, the Fortran interface's view: C^T (n x m) = op(W)^T A^T, where the row-major W
  // read column-major is W^T and A is A^T.
  const T one = 1;
  const char* trans_w = transposed_ ? "T" : "N";
  if constexpr (std::is_same_v<T, float>) {
    symbols().sgemm(trans_w, "N", &n_, &rows, &k_, &one, w_, &ld_, a, &a_ld, &beta, c, &c_ld);
  } else {
    symbols().dgemm(trans_w, "N", &n_, &rows, &k_, &one, w_, &ld_, a, &a_ld, &beta, c, &c_ld);
  }
}

template class RecurrentProduct<float>;
template class RecurrentProduct<double>;

}  // namespace lltm::cpu

const char* lltm_jit_cpu_blas() {
  switch (lltm::cpu::best(false)) {
    case lltm::cpu::Blas::kPacked: return "mkl-packed";
    case lltm::cpu::Blas::kGemm: return "sgemm";
    default: return "none";
  }
}
