// The CPU recurrence's products on raw pointers, through the BLAS that torch's libtorch_cpu carries,
// looked up at run time (dlsym): torch exports no C++ API for it, and builds differ in what they
// carry. The x86 wheels (MKL inside) have MKL's packed GEMM (cblas_sgemm_pack / _compute), which
// packs W_h once for all the steps of a call, and the Fortran sgemm_ / dgemm_; other builds (ARM,
// OpenBLAS) may have neither, and the sequence op then keeps its ATen path. Includes no torch
// header: only the sequence's CPU backend uses it.
#pragma once

#include <cstdint>

namespace lltm::cpu {

// What the recurrence's products run through, best first.
enum class Blas : int { kPacked, kGemm, kNone };

// The best this process has for float or double (is_double), lowered where
// LLTM_JIT_CPU_RECURRENCE asks for a lesser one ("packed", "gemm" or "aten"; read at each call,
// for tests and benchmarks), and kNone where a dimension exceeds the 32-bit BLAS interface.
Blas recurrence_blas(bool is_double, int64_t largest_dimension);

// C (m x n) = A (m x k) op(W) (+ C where accumulate), all row-major with leading dimensions:
// op(W) = W^T for W (n x k) where transposed, else W (k x n). W is prepared once (packed, for
// kPacked) and read by every call, from any thread, for any m. blas: kPacked or kGemm; kPacked is for float only. (MKL
// advises packing with as many threads as compute; that is for speed, and setting it here through
// mkl_set_num_threads_local is not possible: torch's build exports that name as the Fortran entry.)
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
  int ld_, n_, k_;
  bool transposed_;
  void* packed_ = nullptr;  // kPacked: MKL's packed copy of op(W)
};

}  // namespace lltm::cpu

// For tests and bench records: "mkl-packed", "sgemm" or "none", what float32 gets here by default.
extern "C" const char* lltm_jit_cpu_blas();
