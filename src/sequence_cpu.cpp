// The sequence operator's CPU backend: the recurrence as a loop in C++, one product and one fused
// pass (the cell's, cell_cpu.h) per step each way. The products run on raw pointers through the
// BLAS inside torch (cpu_blas.h) where it has one, bfloat16's through AVX512-BF16 where the CPU has
// it (sequence_cpu_bf16.cpp), with no ATen call inside the loop; through ATen otherwise.
#include "cell_cpu.h"
#include "cpu_bf16.h"
#include "cpu_blas.h"
#include "kernels.h"
#include "sequence_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

namespace lltm {
namespace {

using cpu::BiasSums;
using cpu::Blas;
using cpu::Lengths;
using cpu::RecurrentProduct;
using cpu::over_row_blocks;

template <typename T>
T* rows_of(const Tensor& t, int64_t offset) {
  return t.data_ptr<T>() + offset;
}

// Asks for `count` elements from p into the cache, a line at a time: the rows a thread reads at its
// next step were written (by the input projection, by the forward) on whichever core ran them, and
// each tile of the product otherwise starts on misses.
template <typename T>
void prefetch(const T* p, int64_t count) {
  for (int64_t i = 0; i < count; i += 64 / sizeof(T)) __builtin_prefetch(p + i);
}

// The forward on raw pointers. gates holds the input projection; without cells, the new cell
// state goes to two buffers in turn (the fused pass may not write over the state it reads). With
// lengths, h goes to a buffer of the block's own, where a row that has stopped keeps its h.
template <typename T>
void blas_recurrence(ForwardRecurrence& r, Blas blas) {
  const SequenceSizes& s = r.sizes;
  const int64_t S = s.state, B = s.batch;
  // gates += h W_h^T, W_h the first S columns of weights (3S x (S + F)).
  const Tensor weights = r.weights.contiguous();
  const RecurrentProduct<T> product(blas, weights.const_data_ptr<T>(), S + s.features, /*transposed=*/true, 3 * S, S);
  // With our kernel, each thread projects its own rows' input at each step, just before h W_h^T:
  // the rows are then in its cache for the step (from one product over all steps, on MKL's split
  // of the rows, they came from the other core's), and no MKL region runs before the recurrence.
  const bool own_projection = blas == Blas::kAvx512;
  std::optional<RecurrentProduct<T>> projection;
  const Tensor input = r.input.contiguous(), bias = r.bias.contiguous();
  if (own_projection) {
    projection.emplace(blas, weights.const_data_ptr<T>() + S, S + s.features, /*transposed=*/true, 3 * S,
                       s.features);
  } else {
    project_input(r);
  }
  const bool keep = r.cells.defined();
  const Tensor c0 = r.c0.defined() ? r.c0 : r.c_n.new_zeros(r.c_n.sizes());
  const Tensor buffers = keep ? Tensor() : r.c_n.new_empty({2, B, S});
  const Lengths lengths(r);
  over_row_blocks(B, [&](int64_t begin, int64_t end) {
    const int64_t m = end - begin;
    const T* h = r.h0.defined() ? rows_of<T>(r.h0, begin * S) : nullptr;  // nullptr: zeros
    const T* c = rows_of<T>(c0, begin * S);
    std::vector<T> held(lengths.given() ? m * S : 0);
    if (h != nullptr) std::copy_n(h, held.size(), held.data());
    for (int64_t t = 0; t < s.time; ++t) {
      T* gates = rows_of<T>(r.gates, (t * B + begin) * 3 * S);
      T* output = rows_of<T>(r.output, (t * B + begin) * S);
      T* new_c = keep ? rows_of<T>(r.cells, (t * B + begin) * S) : rows_of<T>(buffers, ((t % 2) * B + begin) * S);
      if (lengths.running(begin, m, t) == 0) {  // every row of the block has stopped
        std::fill_n(output, m * S, T(0));
        if (keep) {  // the saved gates of a step a row did not run are zeros (the backward reads none)
          std::fill_n(gates, m * 3 * S, T(0));
          c = std::copy_n(c, m * S, new_c) - m * S;
        }
        continue;
      }
      if (own_projection) {
        for (int64_t i = 0; i < m; ++i) std::copy_n(bias.const_data_ptr<T>(), 3 * S, gates + i * 3 * S);
        (*projection)(input.const_data_ptr<T>() + (t * B + begin) * s.features, s.features, m, gates, 3 * S,
                      /*accumulate=*/true);
      } else if (t + 1 < s.time) {
        prefetch(gates + B * 3 * S, m * 3 * S);
      }
      if (h != nullptr) product(h, S, m, gates, 3 * S, /*accumulate=*/true);
      cpu::forward_rows(gates, c, output, new_c, m, S);
      lengths.forward_step(begin, m, t, S, c, new_c, output, keep ? gates : nullptr);
      lengths.hold(begin, m, t, S, output, held.data());
      h = lengths.given() ? held.data() : output;
      c = new_c;
    }
    if (h == nullptr) {  // no steps from a zero state
      std::memset(rows_of<T>(r.h_n, begin * S), 0, m * S * sizeof(T));
    } else {
      std::memcpy(rows_of<T>(r.h_n, begin * S), h, m * S * sizeof(T));
    }
    std::memcpy(rows_of<T>(r.c_n, begin * S), c, m * S * sizeof(T));
  });
}

// The backward on raw pointers: each step's pre-activations become its gate gradients in place,
// d_c that of the cell state before it, and d_h = d_gates W_h that of h before it. A row that
// has stopped (lengths) gets zero gate gradients, and its d_h and d_c pass through the step.
template <typename T>
void blas_recurrence(BackwardRecurrence& r, Blas blas) {
  const SequenceSizes& s = r.sizes;
  const int64_t S = s.state, B = s.batch;
  const Tensor weights = r.weights.contiguous();
  const RecurrentProduct<T> product(blas, weights.const_data_ptr<T>(), S + s.features, /*transposed=*/false, S,
                                    3 * S);
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, r.d_h.scalar_type());
  const Tensor d_c = carried_gradient(r.d_c, r.grad_c_n, r.d_c.scalar_type());
  const Tensor c0 = r.c0.defined() ? r.c0 : d_c.new_zeros(d_c.sizes());
  const Tensor grad_output = r.grad_output.defined() ? r.grad_output.contiguous() : Tensor();
  const BiasSums<T> bias(r, d_h);
  const Lengths lengths(r);
  over_row_blocks(B, [&](int64_t begin, int64_t end) {
    const int64_t m = end - begin;
    T* dh = rows_of<T>(d_h, begin * S);
    T* dc = rows_of<T>(d_c, begin * S);
    T* bias_sum = bias.row(begin);
    for (int64_t t = s.time - 1; t >= 0; --t) {
      T* gates = rows_of<T>(r.gates, (t * B + begin) * 3 * S);
      const T* c_prev = t > 0 ? rows_of<T>(r.cells, ((t - 1) * B + begin) * S) : rows_of<T>(c0, begin * S);
      if (lengths.running(begin, m, t) == 0) {
        std::fill_n(gates, m * 3 * S, T(0));
        continue;
      }
      if (t > 0) {
        prefetch(gates - B * 3 * S, m * 3 * S);
        if (t > 1) prefetch(c_prev - B * S, m * S);
        if (grad_output.defined()) prefetch(grad_output.const_data_ptr<T>() + ((t - 1) * B + begin) * S, m * S);
      }
      const T* grad = grad_output.defined() ? grad_output.const_data_ptr<T>() + (t * B + begin) * S : nullptr;
      const bool accumulate = lengths.backward_step(begin, m, t, S, dh, dc, gates, c_prev, grad);
      bias.add(bias_sum, gates, m);
      product(gates, 3 * S, m, dh, S, accumulate);
    }
  });
  bias.finish(r);
}

// The recurrence in the dtype at hand through the BLAS, where the process has one.
template <typename R>
bool try_blas(R& r) {
  const SequenceSizes& s = r.sizes;
  const auto type = r.weights.scalar_type();
  if (type != at::kFloat && type != at::kDouble) return false;
  const Blas blas = cpu::recurrence_blas(type == at::kDouble, std::max({s.batch, 3 * s.state, s.state + s.features}));
  if (blas == Blas::kNone) return false;
  type == at::kDouble ? blas_recurrence<double>(r, blas) : blas_recurrence<float>(r, blas);
  return true;
}

// Rows (batch, 1) that step t runs: those of sequences longer than t.
Tensor running(const Recurrence& r, int64_t t) {
  return r.lengths.gt(t).unsqueeze(1);
}

void cpu_forward(ForwardRecurrence& r) {
  if (try_blas(r)) return;
  const SequenceSizes& s = r.sizes;
  const Tensor w_h = r.weights.narrow(1, 0, s.state);
  project_input(r);
  // The state before the step; without cells (no backward follows), the new cell state goes to
  // two buffers in turn (the fused pass may not write over the state it reads).
  const auto dtype = r.h_n.scalar_type();
  Tensor h = state_or_zeros(r.h0, r.h_n, dtype), c = state_or_zeros(r.c0, r.c_n, dtype);
  const bool keep = r.cells.defined();
  const Tensor buffers[2] = {keep ? Tensor() : c.new_empty(c.sizes()), keep ? Tensor() : c.new_empty(c.sizes())};
  for (int64_t t = 0; t < s.time; ++t) {
    Tensor gates = r.gates.select(0, t), output = r.output.select(0, t);
    Tensor new_c = keep ? r.cells.select(0, t) : buffers[t % 2];
    gates.addmm_(h, w_h.t());
    cpu::forward(gates, c, output, new_c);
    if (r.lengths.defined()) {
      const Tensor run = running(r, t), stopped = run.logical_not();
      h = output.where(run, h);
      new_c.copy_(new_c.where(run, c));
      output.masked_fill_(stopped, 0);
      if (keep) gates.masked_fill_(stopped, 0);  // as the row-block loops save them
    } else {
      h = output;
    }
    c = new_c;
  }
  r.h_n.copy_(h);
  r.c_n.copy_(c);
}

void cpu_backward(BackwardRecurrence& r) {
  if (try_blas(r)) return;
  const SequenceSizes& s = r.sizes;
  const Tensor w_h = r.weights.narrow(1, 0, s.state);
  const auto dtype = r.d_h.scalar_type();
  // The gradients of h and of the cell state after the step at hand.
  const Tensor d_h = carried_gradient(r.d_h, r.grad_h_n, dtype), d_c = carried_gradient(r.d_c, r.grad_c_n, dtype);
  const Tensor c0 = state_or_zeros(r.c0, d_c, dtype);
  for (int64_t t = s.time - 1; t >= 0; --t) {
    Tensor gates = r.gates.select(0, t);
    const Tensor c_prev = t > 0 ? r.cells.select(0, t - 1) : c0;
    // d_h becomes the gradient of h after step t: from the steps after it and from the output.
    const Tensor d_h_next = r.lengths.defined() ? d_h.clone() : d_h;
    if (r.grad_output.defined()) d_h.add_(r.grad_output.select(0, t));
    // In place: each row's pre-activations become its gate gradients, and d_c that of c_prev.
    const Tensor d_c_next = r.lengths.defined() ? d_c.clone() : d_c;
    cpu::backward(d_h, d_c_next, gates, c_prev, gates, d_c, Tensor());
    if (r.lengths.defined()) {
      // Past a sequence's end the step did not run: no gate gradients, d_h and d_c pass through.
      const Tensor run = running(r, t);
      gates.masked_fill_(run.logical_not(), 0);
      d_c.copy_(d_c.where(run, d_c_next));
      d_h.copy_(d_h_next.masked_fill(run, 0)).addmm_(gates, w_h);
    } else {
      d_h.addmm_(gates, w_h, /*beta=*/0);
    }
  }
  r.d_h.copy_(d_h);
  r.d_c.copy_(d_c);
}

// Half types otherwise run `recurrence` in float: the state and its gradients are not rounded between
// steps, only what the op returns or saves is, once. Each pre-activation, for one, is rounded
// after its whole sum, as in the step op's (and eager's) one product over [h, input].
// Each direction's tensors: all that it reads or writes (converted to float), then what it writes
// (copied back).
template <typename R>
struct Fields;

template <>
struct Fields<ForwardRecurrence> {
  using R = ForwardRecurrence;
  static constexpr Tensor R::* all[] = {&R::weights, &R::h0, &R::c0, &R::input, &R::bias, &R::gates, &R::output,
                                        &R::cells, &R::h_n, &R::c_n};
  static constexpr Tensor R::* writes[] = {&R::gates, &R::output, &R::cells, &R::h_n, &R::c_n};
};

template <>
struct Fields<BackwardRecurrence> {
  using R = BackwardRecurrence;
  static constexpr Tensor R::* all[] = {&R::weights, &R::h0, &R::c0, &R::gates, &R::output, &R::cells,
                                        &R::grad_output, &R::grad_h_n, &R::grad_c_n, &R::d_h, &R::d_c};
  static constexpr Tensor R::* writes[] = {&R::gates, &R::d_h, &R::d_c};
};

template <typename R, void (*recurrence)(R&)>
void in_float(R& r) {
  if (!at::isReducedFloatingType(r.weights.scalar_type())) return recurrence(r);
  R f = r;
  for (const auto field : Fields<R>::all) {
    if ((f.*field).defined()) f.*field = (f.*field).to(at::kFloat);
  }
  recurrence(f);
  for (const auto field : Fields<R>::writes) {
    if ((r.*field).defined()) (r.*field).copy_(f.*field);
  }
  if constexpr (std::is_same_v<R, BackwardRecurrence>) r.bias_summed = f.bias_summed;  // into r.d_bias, shared
}

// The products after the recurrence through our AVX-512 kernel (cpu_blas.h), split over the
// threads by rows of their results: d_input = d_gates W_x, and d_weights = d_gates^T [h, input],
// with h before each step (h0, or zeros, then output[t - 1]) read in place. d_weights up to 2^28
// FLOP only: the kernel does not block the depth for the caches, and reads d_gates transposed, 8
// values a row of it at each k, so that large ones run faster in MKL (benchmarks/NOTES.md, "The
// CPU path against nn.LSTM" and "Session 11"). bfloat16 runs its own kernels where the CPU has
// them; half types otherwise run these products in float where products_in_float says so.
std::pair<Tensor, Tensor> cpu_products(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                       const Tensor& weights, const Tensor& h0, const Tensor& output,
                                       bool want_input, bool want_weights) {
  const auto type = d_gates.scalar_type();
  if (type == at::kBFloat16 && cpu::bf16_kernel() != cpu::Bf16Kernel::kNone) {
    return cpu::bf16_sequence_products(s, d_gates, input, weights, h0, output, want_input, want_weights);
  }
  if (cpu::products_in_float(type)) {
    const auto f = [](const Tensor& t) { return cpu::in_type(t, at::kFloat); };
    const auto [d_input, d_weights] =
        cpu_products(s, f(d_gates), f(input), f(weights), f(h0), f(output), want_input, want_weights);
    return {cpu::in_type(d_input, type), cpu::in_type(d_weights, type)};
  }
  const bool is_double = type == at::kDouble;
  const bool kernel = (type == at::kFloat || is_double) && cpu::own_products(is_double, 0, 0);
  if (!kernel) return aten_sequence_products(s, d_gates, input, weights, h0, output, want_input, want_weights);
  // d_input at every size, W_x in the kernel's panels, in blocks of 64 rows (a panel, G deep, stays
  // in L2 while they pass); d_weights, which reads d_gates transposed, up to 2^28 FLOP.
  const bool own_weights = cpu::own_products(is_double, 2 * d_gates.numel() * (s.state + s.features), int64_t{1} << 28);
  const int64_t rows = s.time * s.batch, G = 3 * s.state, S = s.state, F = s.features, W = S + F;
  const Tensor x = input.contiguous(), w = weights.contiguous();
  Tensor d_input = want_input ? input.new_empty({s.time, s.batch, F}) : Tensor();
  Tensor d_weights;
  if (want_weights) {
    d_weights = own_weights ? d_gates.new_empty({G, W}) : sequence_weights_gradient(s, d_gates, input, h0, output);
  }
  dispatch(type, "lltm_sequence_backward_cpu", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* dg = d_gates.const_data_ptr<T>();
      if (want_input) {
        T* out = d_input.data_ptr<T>();
        const RecurrentProduct<T> w_x(Blas::kAvx512, w.const_data_ptr<T>() + S, W, /*transposed=*/false, F, G);
        constexpr int64_t kRows = 64;
        at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; r += kRows) {
            w_x(dg + r * G, G, std::min(kRows, end - r), out + r * F, F, /*accumulate=*/false);
          }
        });
      }
      if (want_weights && own_weights) {
        T* out = d_weights.data_ptr<T>();
        const T* xp = x.const_data_ptr<T>();
        const T* later = output.const_data_ptr<T>();  // h before steps 1..time-1
        at::parallel_for(0, G, 64, [&](int64_t begin, int64_t end) {
          const int64_t m = end - begin;
          T* d_w = out + begin * W;
          // d_gates^T read transposed: element (r, i) at dg[i * G + r].
          cpu::avx512_product(dg + begin, 1, G, m, xp, F, F, rows, d_w + S, W, false);
          if (h0.defined() && s.time > 0) {
            cpu::avx512_product(dg + begin, 1, G, m, h0.const_data_ptr<T>(), S, S, s.batch, d_w, W, false);
          } else {
            for (int64_t r = 0; r < m; ++r) std::fill(d_w + r * W, d_w + r * W + S, T(0));
          }
          if (s.time > 1) {
            cpu::avx512_product(dg + begin + s.batch * G, 1, G, m, later, S, S, rows - s.batch, d_w, W, true);
          }
        });
      }
    }
  });
  return {d_input, d_weights};
}

// bfloat16 in its own recurrence where the CPU has its dot products, the others as above.
void rounded_forward(ForwardRecurrence& r) {
  if (cpu::runs_bf16(r)) return cpu::bf16_forward(r);
  in_float<ForwardRecurrence, cpu_forward>(r);
}

void rounded_backward(BackwardRecurrence& r) {
  if (cpu::runs_bf16(r)) return cpu::bf16_backward(r);
  in_float<BackwardRecurrence, cpu_backward>(r);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cpu::sequence_forward(
    const Tensor& input, const Tensor& weights, const Tensor& bias, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, std::optional<bool> for_backward, bool paired) {
  return lltm::sequence_forward<rounded_forward>(input, weights, bias, h0, c0, lengths, for_backward, paired);
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> cpu::sequence_backward(
    const OptionalTensor& grad_output, const OptionalTensor& grad_h_n, const OptionalTensor& grad_c_n,
    const Tensor& input, const Tensor& weights, const OptionalTensor& h0, const OptionalTensor& c0,
    const OptionalTensor& lengths, const Tensor& output, const Tensor& gates, const Tensor& cells,
    std::array<bool, 3> output_mask, bool paired) {
  return lltm::sequence_backward<rounded_backward, cpu_products>(
      grad_output, grad_h_n, grad_c_n, input, weights, h0, c0, lengths, output, gates, cells, output_mask, paired);
}

}  // namespace lltm
