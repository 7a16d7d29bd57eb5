// bfloat16 products on the CPU's matrix engines: AMX's tiles (TDPBF16PS, a 16 x 16 float tile of
// sums of 32 products an instruction) where the CPU and the kernel allow them, else the AVX512-BF16
// dot-product instruction (vdpbf16ps: two bfloat16 products summed into a float a lane, twice
// fp32's FMA rate). For the sequence's recurrence and its products after it in bfloat16
// (sequence_cpu.cpp), where each step's product has a few rows: MKL's bfloat16 GEMM runs slower
// than its float one on CPUs without AMX, and ATen's dispatch a step costs more than the product
// at small sizes. bfloat16 values travel as their bits (uint16_t, the layout of c10::BFloat16);
// includes no torch header.
#pragma once

#include <cstdint>

namespace lltm::cpu {

// Which kernel runs bfloat16's products, best first, at or below cpu_blas.h's allowed_blas()
// ("amx" allows both, "avx512" the second only, anything lower neither): kNone leaves them to
// the float path or to ATen (native_half_products).
enum class Bf16Kernel { kAmx, kAvx512, kNone };
Bf16Kernel bf16_kernel();

// Whether bfloat16's (else float16's) products may run in that type, through torch's own CPU
// products: on x86, where the CPU has the type's dot products (AVX512-BF16; AVX512-FP16), elsewhere
// always. Without them torch's products of the type are at best float's speed (a library that
// takes them widens them to float) and, without AVX-512, ATen's reference loops, 4-200x slower
// (benchmarks/NOTES.md, "Session 41"); so the callers run them in float and round each result
// once, as torch's own products of these types sum in float. Never where LLTM_JIT_CPU_RECURRENCE
// lowers the choice below our AVX-512 kernels: the way to run the float path on any CPU.
bool native_half_products(bool bfloat16);

// B (k x n) packed in pairs of its rows, the layout both kernels read: pair (p, j) holds B(2p, j)
// in its low half and B(2p + 1, j) in its high half (AMX's "VNNI" B), B(i, j) being
// w[i * row + j * col], in panels of kPairPanel = 32 columns, each pair_panel(k) words (pair_rows(k)
// rows of 32, one after the other): word (j / 32) * pair_panel(k) + 32 p + j % 32, zero past B. A
// panel streams in order, where a row of B (a whole row of B apart) fell in a few of L1's sets, and
// AMX's tiles (16 pair rows of 16) need no edge of their own. packed_words(k, n) words in all.
constexpr int64_t kPairPanel = 32;
int64_t pair_rows(int64_t k);
int64_t pair_panel(int64_t k);
int64_t packed_words(int64_t k, int64_t n);
// Pair rows [first, end) of that in every panel (a range, so that a large B packs over the
// threads); rows at and past (k + 1) / 2 and columns past n come out zero.
void pack_pairs(const uint16_t* w, int64_t row, int64_t col, int64_t k, int64_t n, uint32_t* out, int64_t first,
                int64_t end);

// C (m x n float, ldc) = A B (+ C where accumulate), sums in float: A (m x k) bfloat16 row-major
// with lda, B packed by pack_pairs. kernel: bf16_kernel()'s answer, not kNone.
void bf16_product(Bf16Kernel kernel, const uint16_t* a, int64_t lda, int64_t m, const uint32_t* b, int64_t n,
                  int64_t k, float* c, int64_t ldc, bool accumulate);

// The same on AVX512-BF16 with A (m x k) given as A^T (k x m) packed by pack_pairs: A's pair (r, p)
// is its pair (p, r). For an A stored k-minor (d_gates^T): packing its rows runs at a copy's speed,
// a transposing copy of bfloat16 several times slower.
void bf16_product_pairs(const uint32_t* a, int64_t m, const uint32_t* b, int64_t n, int64_t k, float* c, int64_t ldc,
                        bool accumulate);

// float to bfloat16 as c10::BFloat16 rounds (to nearest even; NaN to a quiet NaN), and back.
void round_to_bf16(const float* x, uint16_t* y, int64_t count);
void widen_bf16(const uint16_t* x, float* y, int64_t count);

}  // namespace lltm::cpu

// For tests and bench records: what bfloat16's products run through by default here, "amx",
// "avx512-bf16", "float" (widened to float, through float's path) or "aten"; float16's, "float"
// or "aten"; and whether AMX is "available", else why not ("not on this CPU",
// "refused by the kernel: <reason>", "not in this build (...)").
extern "C" const char* lltm_jit_cpu_bf16();
extern "C" const char* lltm_jit_cpu_fp16();
extern "C" const char* lltm_jit_cpu_amx();
