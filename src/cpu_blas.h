// The CPU recurrence's products on raw pointers: C = A op(W), A a thread's few rows of the batch,
// W one of the two blocks of W_h, prepared once per call for all the steps. Through an AVX-512
// kernel of our own where the CPU has AVX-512, else through the BLAS that torch's libtorch_cpu
// carries, looked up at run time (dlsym): torch exports no C++ API for it, and builds differ in
// what they carry. The x86 wheels (MKL inside) have MKL's packed GEMM (cblas_sgemm_pack /
// _compute) and the Fortran sgemm_ / dgemm_; other builds (ARM, OpenBLAS) may have neither, and
// the sequence op then keeps its ATen path. The kernel also serves the small products of the step
// backward and of the sequence after its recurrence (avx512_product). Includes no torch header.
#pragma once

#include <cstdint>

namespace lltm::cpu {

// What the recurrence's products run through, best first: AMX's tiles (bfloat16 only: cpu_bf16.h),
// our AVX-512 kernel, MKL's packed GEMM (float only), the BLAS's gemm, none (the ATen path).
enum class Blas : int { kAmx, kAvx512, kPacked, kGemm, kNone };

// The best that LLTM_JIT_CPU_RECURRENCE allows ("amx", "avx512", "packed", "gemm" or "aten"; kAmx
// where unset), read at each call, for tests and benchmarks; throws std::invalid_argument for
// another value.
Blas allowed_blas();

// The best this process has for float or double (is_double), at or below allowed_blas(); the BLAS
// only where every dimension fits its 32-bit interface.
Blas recurrence_blas(bool is_double, int64_t largest_dimension);

// C (m x n) = A (m x k) op(W) (+ C where accumulate), all row-major with leading dimensions:
// op(W) = W^T for W (n x k) where transposed, else W (k x n). W is prepared once (op(W) copied in
// panels of 32 columns for kAvx512, packed for kPacked) and read by every call, from any thread,
// for any m.
// blas: one that recurrence_blas returned. (MKL advises packing with as many threads as compute;
// that is for speed, and setting it here through mkl_set_num_threads_local is not possible:
// torch's build exports that name as the Fortran entry.)
template <typename T>
class RecurrentProduct {
 public:
  RecurrentProduct(Blas blas, const T* w, int64_t ld, bool transposed, int64_t n, int64_t k);
  ~RecurrentProduct();
  RecurrentProduct(const RecurrentProduct&) = delete;
  RecurrentProduct& operator=(const RecurrentProduct&) = delete;

  void operator()(const T* a, int64_t lda, int64_t m, T* c, int64_t ldc, bool accumulate) const;

 private:
  Blas blas_;
  const T* w_;
  int64_t ld_, n_, k_;
  bool transposed_;
  void* packed_ = nullptr;  // kAvx512: op(W) in panels; kPacked: MKL's packed copy of it
};

// Whether a product of float or double (is_double) of `flops` runs through avx512_product: where
// the recurrence may use the kernel (recurrence_blas), and only up to `most_flops`, since the
// kernel does not block the depth for the caches and larger products run faster in MKL.
bool own_products(bool is_double, int64_t flops, int64_t most_flops);

// Our AVX-512 kernel on its own: C (m x n, ldc) = A B (+ C where accumulate), with A's element
// (r, i) at a[r * a_row + i * a_col] (a_col > 1: A stored transposed) and B (k x n) row-major
// with ldb. Where own_products() says so only.
template <typename T>
void avx512_product(const T* a, int64_t a_row, int64_t a_col, int64_t m, const T* b, int64_t ldb, int64_t n,
                    int64_t k, T* c, int64_t ldc, bool accumulate);

}  // namespace lltm::cpu

// For tests and bench records: what float32 runs through here by default, "avx512", "mkl-packed",
// "sgemm" or "aten".
extern "C" const char* lltm_jit_cpu_recurrence();
