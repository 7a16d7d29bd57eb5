// The cell's CPU backend: fused elementwise passes, parallel over the batch.
#include "cell.h"
#include "cell_cpu.h"
#include "cpu_bf16.h"
#include "cpu_blas.h"
#include "kernels.h"
#include "lltm_math.h"

#include <ATen/Parallel.h>
#include <c10/util/bit_cast.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace lltm::cpu {
namespace {

// float exp, expm1 and tanh as straight-line arithmetic (no calls, no branches), so that the
// compiler vectorises the row loops below; within a few ulp of the C library's. The C library's
// scalar calls made the forward pass slower than eager PyTorch's vectorised kernels.
struct VectorisableMath : StdMath {
  static float exp(float x) {
    // Clamped to where 2^(n - 1) below is a normal float; NaN stays NaN: both compare false.
    x = std::min(std::max(x, -86.5f), 89.0f);
    // x = n ln2 + r, |r| <= ln2 / 2; the magic constant rounds to nearest without a call.
    const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 split in two (Cody-Waite)
    float p = 1.9875691500e-4f;  // Cephes' minimax polynomial for exp(r) - 1 - r
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // p 2^n as (p 2^(n - 1)) 2: the last product overflows to inf exactly where exp does, from
    // x = 88.7228..., as the C library's (sigmoid(z) is then 0 for z <= -88.7228, and 0 * inf NaN,
    // as in eager PyTorch), with no select.
    return p * c10::bit_cast<float>((static_cast<int32_t>(n) + 126) << 23) * 2.0f;
  }
  static float expm1(float x) {
    // exp(x) - 1 loses relative precision near 0: there, the Taylor series (error < 1e-7 for |x| < 0.5).
    const float series =
        x + x * x * (0.5f + x * (1 / 6.0f + x * (1 / 24.0f + x * (1 / 120.0f + x * (1 / 720.0f + x * (1 / 5040.0f))))));
    const float direct = exp(x) - 1.0f;
    return std::abs(x) < 0.5f ? series : direct;
  }
  static float tanh(float x) {
    const float a = std::min(std::abs(x), 9.0f);  // tanh(9) rounds to 1 in float
    const float e = expm1(2.0f * a);
    return std::copysign(e / (e + 2.0f), x);
  }
};

// The math type and the functions it uses: float with the vectorisable functions for float, half
// and bfloat16 storage; double with the C library's.
template <typename scalar_t>
using MathFor = std::conditional_t<std::is_same_v<at::opmath_type<scalar_t>, float>, VectorisableMath, StdMath>;

// Inlined into each target clone below, so that each clone's copy is compiled for its target.
template <typename scalar_t>
C10_ALWAYS_INLINE void forward_row(const scalar_t* __restrict__ gates, const scalar_t* __restrict__ old_cell,
                                   scalar_t* __restrict__ new_h, scalar_t* __restrict__ new_cell,
                                   int64_t state) {
  using T = at::opmath_type<scalar_t>;
  for (int64_t s = 0; s < state; ++s) {
    const auto o = forward_point<T, MathFor<scalar_t>>(gates[s], gates[state + s], gates[2 * state + s], old_cell[s]);
    new_cell[s] = o.new_cell;
    new_h[s] = o.new_h;
  }
}

// In two loops over chunks of the row, each of which the compiler vectorises: the activations
// (the forward's math), then the gradients from them. As one loop, GCC kept it scalar (benchmarks/
// NOTES.md, "Numbers behind the sources' comments").
// d_gates may be gates and d_old_cell grad_cell (the sequence's backward works in place): every
// element is read before the gradients computed from it are written.
template <typename scalar_t>
C10_ALWAYS_INLINE void backward_row(const scalar_t* __restrict__ grad_h, const scalar_t* grad_cell,
                                    const scalar_t* gates, const scalar_t* __restrict__ old_cell,
                                    scalar_t* d_gates, scalar_t* d_old_cell, int64_t state) {
  using T = at::opmath_type<scalar_t>;
  using Math = MathFor<scalar_t>;
  constexpr int64_t kChunk = 256;
  T input[kChunk], output[kChunk], candidate[kChunk], tanh_cell[kChunk];
  for (int64_t begin = 0; begin < state; begin += kChunk) {
    const int64_t n = std::min(kChunk, state - begin);
    const scalar_t* z = gates + begin;
    for (int64_t s = 0; s < n; ++s) {
      const auto g = activate<T, Math>(z[s], z[state + s], z[2 * state + s]);
      input[s] = g.input;
      output[s] = g.output;
      candidate[s] = g.candidate;
      tanh_cell[s] = Math::tanh(new_cell_from<T>(old_cell[begin + s], g));
    }
    for (int64_t s = 0; s < n; ++s) {
      const int64_t j = begin + s;
      const auto o = backward_from_activations<T>(grad_h[j], grad_cell[j], {input[s], output[s], candidate[s]},
                                                  tanh_cell[s]);
      d_gates[j] = o.d_input_gate;
      d_gates[state + j] = o.d_output_gate;
      d_gates[2 * state + j] = o.d_candidate;
      d_old_cell[j] = o.d_old_cell;
    }
  }
}

// float rows also get AVX-512 and AVX2 + FMA builds, chosen at load time where the CPU has them;
// overload resolution picks these for float. The AVX-512 build is the faster of the two where both
// run (benchmarks/NOTES.md, "The CPU path against nn.LSTM").
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LLTM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LLTM_CPU_CLONES
#endif

LLTM_CPU_CLONES void forward_row(const float* gates, const float* old_cell, float* new_h,
                                 float* new_cell, int64_t state) {
  forward_row<float>(gates, old_cell, new_h, new_cell, state);
}

LLTM_CPU_CLONES void backward_row(const float* grad_h, const float* grad_cell,
                                  const float* gates, const float* old_cell, float* d_gates,
                                  float* d_old_cell, int64_t state) {
  backward_row<float>(grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell, state);
}

// A block of contiguous rows, one after the other.
template <typename scalar_t>
void forward_block(const scalar_t* gates, const scalar_t* old_cell, scalar_t* new_h, scalar_t* new_cell,
                   int64_t rows, int64_t state) {
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t row = b * state;
    forward_row(gates + 3 * row, old_cell + row, new_h + row, new_cell + row, state);
  }
}

template <typename scalar_t>
void backward_block(const scalar_t* grad_h, const scalar_t* grad_cell, const scalar_t* gates,
                    const scalar_t* old_cell, scalar_t* d_gates, scalar_t* d_old_cell, int64_t rows, int64_t state) {
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t row = b * state;
    backward_row(grad_h + row, grad_cell + row, gates + 3 * row, old_cell + row, d_gates + 3 * row,
                 d_old_cell + row, state);
  }
}

// Rows per parallel chunk: enough elements that a thread's share outweighs waking it.
int64_t grain_rows(int64_t state) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(state, 1));
}

}  // namespace

void forward(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h, const Tensor& new_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  dispatch(gates.scalar_type(), "lltm_forward_cpu", [&](auto tag) {
    using scalar_t = decltype(tag);
    const scalar_t* g = gates.const_data_ptr<scalar_t>();
    const scalar_t* c = old_cell.const_data_ptr<scalar_t>();
    scalar_t* h_out = new_h.data_ptr<scalar_t>();
    scalar_t* c_out = new_cell.data_ptr<scalar_t>();
    at::parallel_for(0, batch, grain_rows(state), [&](int64_t begin, int64_t end) {
      const int64_t row = begin * state;
      forward_block(g + 3 * row, c + row, h_out + row, c_out + row, end - begin, state);
    });
  });
}

void backward(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates, const Tensor& old_cell,
              const Tensor& d_gates, const Tensor& d_old_cell, const Tensor& d_bias) {
  const int64_t batch = grad_h.size(0), state = grad_h.size(1);
  dispatch(gates.scalar_type(), "lltm_backward_cpu", [&](auto tag) {
    using scalar_t = decltype(tag);
    const scalar_t* gh = grad_h.const_data_ptr<scalar_t>();
    const scalar_t* gc = grad_cell.const_data_ptr<scalar_t>();
    const scalar_t* g = gates.const_data_ptr<scalar_t>();
    const scalar_t* c = old_cell.const_data_ptr<scalar_t>();
    scalar_t* dg = d_gates.data_ptr<scalar_t>();
    scalar_t* dc = d_old_cell.data_ptr<scalar_t>();
    at::parallel_for(0, batch, grain_rows(state), [&](int64_t begin, int64_t end) {
      const int64_t row = begin * state;
      backward_block(gh + row, gc + row, g + 3 * row, c + row, dg + 3 * row, dc + row, end - begin, state);
    });
  });
  if (!d_bias.defined()) return;
  if (d_gates.scalar_type() != at::kFloat && d_gates.scalar_type() != at::kDouble) {
    Tensor out = d_bias;  // a handle for sum_out, same storage
    aten::sum_out(out, d_gates, 0);
    return;
  }
  // The columns' sums on raw pointers, split over the threads by columns: at::sum's dispatch and
  // setup cost a small step's backward more than the sums themselves.
  dispatch(gates.scalar_type(), "lltm_backward_cpu", [&](auto tag) {
    using scalar_t = decltype(tag);
    if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
      const scalar_t* dg = d_gates.const_data_ptr<scalar_t>();
      scalar_t* out = d_bias.data_ptr<scalar_t>();
      const int64_t width = 3 * state;
      at::parallel_for(0, width, std::max<int64_t>(64, 16384 / std::max<int64_t>(batch, 1)),
                       [&](int64_t begin, int64_t end) {
                         std::fill(out + begin, out + end, scalar_t(0));
                         for (int64_t b = 0; b < batch; ++b) {
                           const scalar_t* row = dg + b * width;
                           for (int64_t j = begin; j < end; ++j) out[j] += row[j];
                         }
                       });
    }
  });
}

bool products_in_float(at::ScalarType type) {
  return (type == at::kBFloat16 || type == at::kHalf) && !native_half_products(type == at::kBFloat16);
}

Tensor in_type(const Tensor& t, at::ScalarType type) { return t.defined() ? t.to(type) : t; }

void forward_rows(const float* gates, const float* old_cell, float* new_h, float* new_cell, int64_t rows,
                  int64_t state) {
  forward_block(gates, old_cell, new_h, new_cell, rows, state);
}

void forward_rows(const double* gates, const double* old_cell, double* new_h, double* new_cell, int64_t rows,
                  int64_t state) {
  forward_block(gates, old_cell, new_h, new_cell, rows, state);
}

void backward_rows(const float* grad_h, const float* grad_cell, const float* gates, const float* old_cell,
                   float* d_gates, float* d_old_cell, int64_t rows, int64_t state) {
  backward_block(grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell, rows, state);
}

void backward_rows(const double* grad_h, const double* grad_cell, const double* gates, const double* old_cell,
                   double* d_gates, double* d_old_cell, int64_t rows, int64_t state) {
  backward_block(grad_h, grad_cell, gates, old_cell, d_gates, d_old_cell, rows, state);
}

namespace {

// [old_h, input] (cell.h's Join) by rows of bytes: as fast as at::cat at a step's sizes, where two
// copy_ calls cost more (benchmarks/NOTES.md, "Session 26"), and no at::cat in the CPU build.
Tensor join_rows(const Tensor& old_h, const Tensor& input) {
  const Tensor h = old_h.contiguous(), x = input.contiguous();
  const int64_t rows = h.size(0), h_bytes = h.size(1) * h.element_size(), x_bytes = x.size(1) * x.element_size();
  Tensor both = h.new_empty({rows, h.size(1) + x.size(1)});
  auto* to = static_cast<char*>(both.data_ptr());
  const auto* from_h = static_cast<const char*>(h.const_data_ptr());
  const auto* from_x = static_cast<const char*>(x.const_data_ptr());
  const int64_t row_bytes = h_bytes + x_bytes;
  at::parallel_for(0, rows, grain_rows(h.size(1) + x.size(1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      std::memcpy(to + r * row_bytes, from_h + r * h_bytes, h_bytes);
      std::memcpy(to + r * row_bytes + h_bytes, from_x + r * x_bytes, x_bytes);
    }
  });
  return both;
}

Tensor gates_product(const Tensor& bias, const Tensor& joined, const Tensor& weights) {
  const auto type = bias.scalar_type();
  if (!products_in_float(type)) return aten_gates(bias, joined, weights);
  return aten_gates(bias.to(at::kFloat), joined.to(at::kFloat), weights.to(at::kFloat)).to(type);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> step_forward(const Tensor& input, const Tensor& weights, const Tensor& bias,
                                                const Tensor& old_h, const Tensor& old_cell) {
  return cell_forward<forward, join_rows, gates_product>(input, weights, bias, old_h, old_cell);
}

namespace {

// The step backward's products through our AVX-512 kernel (cpu_blas.h), split over the threads by
// rows of d_weights and by columns of d_[old_h, input]. At small sizes ATen's two mm (d_weights'
// depth is the batch) were most of the step's backward. Half types in float where
// products_in_float says so, as the forward's product (gates_product).
std::pair<Tensor, Tensor> step_products(const Tensor& d_gates, const Tensor& old_h, const Tensor& input,
                                        const Tensor& weights, bool want_weights, bool want_old_h_input) {
  const auto type = d_gates.scalar_type();
  if (products_in_float(type)) {
    const auto f = [](const Tensor& t) { return t.to(at::kFloat); };
    const auto [d_weights, d_old_h_input] =
        step_products(f(d_gates), f(old_h), f(input), f(weights), want_weights, want_old_h_input);
    return {in_type(d_weights, type), in_type(d_old_h_input, type)};
  }
  // Large products stay with MKL's blocked GEMM (as fast at 256 x 512 x 1024; this kernel does not
  // block the depth for the caches).
  const int64_t flops = 2 * d_gates.numel() * weights.size(1);
  const bool ours =
      (type == at::kFloat || type == at::kDouble) && own_products(type == at::kDouble, flops, int64_t{1} << 27);
  if (!ours) return aten_step_products<join_rows>(d_gates, old_h, input, weights, want_weights, want_old_h_input);
  const int64_t batch = d_gates.size(0), gates = d_gates.size(1), state = old_h.size(1), features = input.size(1);
  const int64_t width = state + features;
  Tensor d_weights = want_weights ? d_gates.new_empty({gates, width}) : Tensor();
  Tensor d_old_h_input = want_old_h_input ? d_gates.new_empty({batch, width}) : Tensor();
  const Tensor h = old_h.contiguous(), x = input.contiguous(), w = weights.contiguous();
  dispatch(type, "lltm_backward_cpu", [&](auto tag) {
    using scalar_t = decltype(tag);
    if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>) {
      const scalar_t* dg = d_gates.const_data_ptr<scalar_t>();
      if (want_weights) {
        // d_weights = d_gates^T [old_h, input]: A is d_gates read transposed.
        scalar_t* out = d_weights.data_ptr<scalar_t>();
        const scalar_t* hp = h.const_data_ptr<scalar_t>();
        const scalar_t* xp = x.const_data_ptr<scalar_t>();
        at::parallel_for(0, gates, 64, [&](int64_t begin, int64_t end) {
          avx512_product(dg + begin, 1, gates, end - begin, hp, state, state, batch, out + begin * width, width,
                         false);
          avx512_product(dg + begin, 1, gates, end - begin, xp, features, features, batch,
                         out + begin * width + state, width, false);
        });
      }
      if (want_old_h_input) {
        scalar_t* out = d_old_h_input.data_ptr<scalar_t>();
        const scalar_t* wp = w.const_data_ptr<scalar_t>();
        at::parallel_for(0, (width + 31) / 32, 1, [&](int64_t begin, int64_t end) {
          const int64_t first = begin * 32, columns = std::min(end * 32, width) - first;
          avx512_product(dg, gates, 1, batch, wp + first, width, columns, gates, out + first, width, false);
        });
      }
    }
  });
  return {d_weights, d_old_h_input};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> step_backward(const Tensor& grad_h, const Tensor& grad_cell,
                                                         const Tensor& input, const Tensor& weights,
                                                         const Tensor& old_h, const Tensor& gates,
                                                         const Tensor& old_cell, std::array<bool, 3> output_mask) {
  return cell_backward<backward, step_products>(grad_h, grad_cell, input, weights, old_h, gates, old_cell,
                                                output_mask);
}

}  // namespace lltm::cpu
