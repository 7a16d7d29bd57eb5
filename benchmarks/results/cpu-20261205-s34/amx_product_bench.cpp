#include "cpu_bf16.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace lltm::cpu;
int main(int argc, char** argv) {
  if (bf16_kernel() != Bf16Kernel::kAmx) return 1;
  int m = atoi(argv[1]), k = atoi(argv[2]), n = atoi(argv[3]);
  std::vector<uint16_t> a(m * k), w(k * n);
  for (auto& x : a) x = 0x3f80 + rand() % 64;
  for (auto& x : w) x = 0x3f00 + rand() % 64;
  std::vector<uint32_t> b(packed_words(k, n));
  pack_pairs(w.data(), n, 1, k, n, b.data(), 0, pair_rows(k));
  std::vector<float> c(m * n);
  for (auto kern : {Bf16Kernel::kAmx, Bf16Kernel::kAvx512}) {
    for (int i = 0; i < 20; ++i) bf16_product(kern, a.data(), k, m, b.data(), n, k, c.data(), n, true);
    int reps = 2000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) bf16_product(kern, a.data(), k, m, b.data(), n, k, c.data(), n, true);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    printf("%s m%d k%d n%d: %.1f us, %.2f TFLOP/s\n", kern == Bf16Kernel::kAmx ? "amx" : "avx512", m, k, n, dt * 1e6,
           2.0 * m * k * n / dt / 1e12);
  }
}
