// bfloat16 sequences on the CPU where it has AMX or AVX512-BF16 (cpu_bf16.h): the recurrence each
// way and the products after it, on raw pointers, with no ATen call inside the loop.
#include "cell_cpu.h"
#include "cpu_bf16.h"
#include "sequence_cpu.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lltm::cpu {
namespace {

// bfloat16's recurrence where the CPU has AMX or AVX512-BF16 (cpu_bf16.h): the products in bfloat16 with
// sums in float, as torch's own bfloat16 matmul; the pre-activations and the cell state in float
// within a step, each rounded once where the op saves or returns it. h enters the next product as
// the op returns it (bfloat16), as in an eager loop. Lengths as in sequence_cpu.cpp's float loops.
using Bits = uint16_t;  // a bfloat16's bits, the layout of c10::BFloat16

const Bits* bits(const Tensor& t) { return reinterpret_cast<const Bits*>(t.const_data_ptr<at::BFloat16>()); }
Bits* mutable_bits(const Tensor& t) { return reinterpret_cast<Bits*>(t.data_ptr<at::BFloat16>()); }

// B (k x n), B(i, j) = w[i * row + j * col], packed for cpu::bf16_product; over the threads where
// it is large.
Tensor pairs(const Tensor& like, const Bits* w, int64_t row, int64_t col, int64_t k, int64_t n) {
  const int64_t count = cpu::pair_rows(k);
  Tensor out = like.new_empty({cpu::packed_words(k, n)}, like.options().dtype(at::kInt));
  uint32_t* p = reinterpret_cast<uint32_t*>(out.data_ptr<int32_t>());
  at::parallel_for(0, count, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)),
                   [&](int64_t begin, int64_t end) { cpu::pack_pairs(w, row, col, k, n, p, begin, end); });
  return out;
}

const uint32_t* words(const Tensor& packed) { return reinterpret_cast<const uint32_t*>(packed.const_data_ptr<int32_t>()); }

}  // namespace

bool runs_bf16(const Recurrence& r) {
  return r.weights.scalar_type() == at::kBFloat16 && cpu::bf16_kernel() != cpu::Bf16Kernel::kNone;
}

void bf16_forward(ForwardRecurrence& r) {
  const cpu::Bf16Kernel kernel = cpu::bf16_kernel();
  const SequenceSizes& s = r.sizes;
  const int64_t S = s.state, B = s.batch, F = s.features, G = 3 * S, W = S + F;
  const Tensor weights = r.weights.contiguous(), input = r.input.contiguous();
  // gates = bias + x W_x^T + h W_h^T, op(W) = W^T from weights (3S x (S + F)) rows.
  const Tensor w_h = pairs(weights, bits(weights), 1, W, S, G), w_x = pairs(weights, bits(weights) + S, 1, W, F, G);
  const Tensor bias = r.bias.to(at::kFloat).contiguous();
  const bool keep = r.cells.defined();
  const Lengths lengths(r);
  over_row_blocks(B, [&](int64_t begin, int64_t end) {
    const int64_t m = end - begin;
    std::vector<float> gates(m * G), h(m * S), cells(2 * m * S);
    float *c = cells.data(), *new_c = c + m * S;
    if (r.c0.defined()) cpu::widen_bf16(bits(r.c0) + begin * S, c, m * S);
    const Bits* h_prev = r.h0.defined() ? bits(r.h0) + begin * S : nullptr;  // nullptr: zeros
    std::vector<Bits> held(lengths.given() ? m * S : 0);  // h after each step, where lengths are given
    if (h_prev != nullptr) std::copy_n(h_prev, held.size(), held.data());
    for (int64_t t = 0; t < s.time; ++t) {
      const int64_t row = t * B + begin;
      Bits* output = mutable_bits(r.output) + row * S;
      if (lengths.running(begin, m, t) == 0) {  // every row of the block has stopped
        std::fill_n(output, m * S, Bits{0});
        if (keep) {
          std::fill_n(mutable_bits(r.gates) + row * G, m * G, Bits{0});
          cpu::round_to_bf16(c, mutable_bits(r.cells) + row * S, m * S);
        }
        continue;
      }
      for (int64_t i = 0; i < m; ++i) std::copy_n(bias.const_data_ptr<float>(), G, gates.data() + i * G);
      cpu::bf16_product(kernel, bits(input) + row * F, F, m, words(w_x), G, F, gates.data(), G, /*accumulate=*/true);
      if (h_prev != nullptr) {
        cpu::bf16_product(kernel, h_prev, S, m, words(w_h), G, S, gates.data(), G, /*accumulate=*/true);
      }
      cpu::forward_rows(gates.data(), c, h.data(), new_c, m, S);
      lengths.forward_step(begin, m, t, S, c, new_c, h.data(), gates.data());
      cpu::round_to_bf16(h.data(), output, m * S);
      if (keep) {
        cpu::round_to_bf16(gates.data(), mutable_bits(r.gates) + row * G, m * G);
        cpu::round_to_bf16(new_c, mutable_bits(r.cells) + row * S, m * S);
      }
      lengths.hold(begin, m, t, S, output, held.data());
      h_prev = lengths.given() ? held.data() : output;
      std::swap(c, new_c);
    }
    Bits* h_n = mutable_bits(r.h_n) + begin * S;
    h_prev == nullptr ? std::fill_n(h_n, m * S, Bits{0}) : std::copy_n(h_prev, m * S, h_n);
    cpu::round_to_bf16(c, mutable_bits(r.c_n) + begin * S, m * S);
  });
}

// The backward: d_h and d_c carried in float; each step's gate gradients rounded into gates (the
// products after the recurrence read them) and summed unrounded for the bias gradient, a row of
// partial sums a block of rows.
void bf16_backward(BackwardRecurrence& r) {
  const cpu::Bf16Kernel kernel = cpu::bf16_kernel();
  const SequenceSizes& s = r.sizes;
  const int64_t S = s.state, B = s.batch, G = 3 * S, W = S + s.features;
  const Tensor weights = r.weights.contiguous();
  const Tensor w_h = pairs(weights, bits(weights), W, 1, G, S);  // d_h = d_gates W_h
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, at::kFloat);
  const Tensor d_c = carried_gradient(r.d_c, r.grad_c_n, at::kFloat);
  const Tensor grad_output = r.grad_output.defined() ? r.grad_output.contiguous() : Tensor();
  const BiasSums<float> bias(r, d_h);
  const Lengths lengths(r);
  over_row_blocks(B, [&](int64_t begin, int64_t end) {
    const int64_t m = end - begin;
    std::vector<float> gates(m * G), state(m * S), grad(grad_output.defined() ? m * S : 0);
    float* dh = d_h.data_ptr<float>() + begin * S;
    float* dc = d_c.data_ptr<float>() + begin * S;
    float* bias_sum = bias.row(begin);
    for (int64_t t = s.time - 1; t >= 0; --t) {
      const int64_t row = t * B + begin;
      Bits* d_gates = mutable_bits(r.gates) + row * G;
      if (lengths.running(begin, m, t) == 0) {
        std::fill_n(d_gates, m * G, Bits{0});
        continue;
      }
      if (grad_output.defined()) cpu::widen_bf16(bits(grad_output) + row * S, grad.data(), m * S);
      cpu::widen_bf16(d_gates, gates.data(), m * G);
      if (t > 0) {
        cpu::widen_bf16(bits(r.cells) + (row - B) * S, state.data(), m * S);
      } else if (r.c0.defined()) {
        cpu::widen_bf16(bits(r.c0) + begin * S, state.data(), m * S);
      } else {
        std::fill(state.begin(), state.end(), 0.0f);
      }
      const bool accumulate = lengths.backward_step(begin, m, t, S, dh, dc, gates.data(), state.data(),
                                                    grad_output.defined() ? grad.data() : nullptr);
      bias.add(bias_sum, gates.data(), m);
      cpu::round_to_bf16(gates.data(), d_gates, m * G);
      cpu::bf16_product(kernel, d_gates, G, m, words(w_h), S, G, dh, S, accumulate);
    }
  });
  r.d_h.copy_(d_h);
  r.d_c.copy_(d_c);
  bias.finish(r);
}

// The FLOPs of d_weights (2 x rows x G x W) from which AMX's go through ATen (below): under them,
// ATen's three products cost more in dispatch than the pairs kernel takes (benchmarks/NOTES.md,
// "Session 34").
constexpr int64_t kAtenWeightsFlops = int64_t{1} << 26;

// The products after a bfloat16 recurrence through cpu::bf16_product, as cpu_products' float ones:
// d_input = d_gates W_x split by rows; d_weights = d_gates^T [h, input] by its rows, with d_gates
// and [h, input] packed in pairs of rows (the kernel reads d_gates^T from d_gates' pairs). On AMX,
// a large d_weights goes through ATen: its bfloat16 GEMM (oneDNN) runs on the same tiles, blocked
// for the caches, where the pairs kernel, on AVX512-BF16 and not blocked, runs an order of
// magnitude slower at training sizes (benchmarks/NOTES.md, "Session 34").
std::pair<Tensor, Tensor> bf16_sequence_products(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                                 const Tensor& weights, const Tensor& h0, const Tensor& output,
                                                 bool want_input, bool want_weights) {
  const cpu::Bf16Kernel kernel = cpu::bf16_kernel();
  const int64_t rows = s.time * s.batch, G = 3 * s.state, S = s.state, F = s.features, W = S + F;
  const Tensor w = weights.contiguous();
  const Bits* dg = bits(d_gates);
  Tensor d_input, d_weights;
  if (want_input) {
    d_input = input.new_empty({s.time, s.batch, F});
    const Tensor w_x = pairs(w, bits(w) + S, W, 1, G, F);
    at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
      std::vector<float> out((end - begin) * F);
      cpu::bf16_product(kernel, dg + begin * G, G, end - begin, words(w_x), F, G, out.data(), F, /*accumulate=*/false);
      cpu::round_to_bf16(out.data(), mutable_bits(d_input) + begin * F, (end - begin) * F);
    });
  }
  if (want_weights && kernel == cpu::Bf16Kernel::kAmx && 2 * rows * G * W >= kAtenWeightsFlops) {
    d_weights = sequence_weights_gradient(s, d_gates, input, h0, output);
  } else if (want_weights && rows > 0) {
    // Split at the first step's rows, where h before the step changes from h0 to output: each part's
    // pairs of rows stay within it, whatever the batch's parity.
    d_weights = d_gates.new_empty({G, W});
    const Tensor x = input.contiguous();
    const int64_t later = rows - s.batch;
    const Tensor first_dg = pairs(d_gates, dg, G, 1, s.batch, G), first_x = pairs(x, bits(x), F, 1, s.batch, F);
    const Tensor first_h = h0.defined() ? pairs(h0, bits(h0), S, 1, s.batch, S) : Tensor();
    const Tensor later_dg = later > 0 ? pairs(d_gates, dg + s.batch * G, G, 1, later, G) : Tensor();
    const Tensor later_x = later > 0 ? pairs(x, bits(x) + s.batch * F, F, 1, later, F) : Tensor();
    const Tensor later_h = later > 0 ? pairs(output, bits(output), S, 1, later, S) : Tensor();
    // By panels of d_gates^T's rows, so that each thread's first row starts a panel of A.
    constexpr int64_t kPanel = cpu::kPairPanel;
    at::parallel_for(0, (G + kPanel - 1) / kPanel, 2, [&](int64_t first_panel, int64_t end_panel) {
      const int64_t begin = first_panel * kPanel, m = std::min(end_panel * kPanel, G) - begin;
      std::vector<float> out(m * W);  // zeros: h0's part where h0 is zeros
      float* d_w_h = out.data();
      float* d_w_x = out.data() + S;
      const uint32_t* first_a = words(first_dg) + first_panel * cpu::pair_panel(s.batch);
      cpu::bf16_product_pairs(first_a, m, words(first_x), F, s.batch, d_w_x, W, false);
      if (first_h.defined()) cpu::bf16_product_pairs(first_a, m, words(first_h), S, s.batch, d_w_h, W, false);
      if (later > 0) {
        const uint32_t* later_a = words(later_dg) + first_panel * cpu::pair_panel(later);
        cpu::bf16_product_pairs(later_a, m, words(later_x), F, later, d_w_x, W, true);
        cpu::bf16_product_pairs(later_a, m, words(later_h), S, later, d_w_h, W, true);
      }
      cpu::round_to_bf16(out.data(), mutable_bits(d_weights) + begin * W, m * W);
    });
  } else if (want_weights) {
    d_weights = d_gates.new_zeros({G, W});
  }
  return {d_input, d_weights};
}

}  // namespace lltm::cpu
