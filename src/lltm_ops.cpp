// The operator schemas, and the CPU backend: fused elementwise passes parallel over the batch.
#include "lltm.h"
#include "lltm_math.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

namespace lltm {
namespace {

// Rows per parallel chunk: enough elements that a thread's share outweighs waking it.
int64_t grain_rows(int64_t state) {
  return std::max<int64_t>(1, 8192 / state);
}

void cpu_forward(const Tensor& gates, const Tensor& old_cell, const Tensor& new_h,
                 const Tensor& new_cell, const Tensor& tanh_cell) {
  const int64_t batch = old_cell.size(0), state = old_cell.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_forward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    scalar_t* g = gates.data_ptr<scalar_t>();
    const scalar_t* c = old_cell.const_data_ptr<scalar_t>();
    scalar_t* h_out = new_h.data_ptr<scalar_t>();
    scalar_t* c_out = new_cell.data_ptr<scalar_t>();
    scalar_t* t_out = tanh_cell.data_ptr<scalar_t>();
    at::parallel_for(0, batch, grain_rows(state), [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        scalar_t* gi = g + b * 3 * state;
        scalar_t* go = gi + state;
        scalar_t* gc = go + state;
        const int64_t row = b * state;
        for (int64_t s = 0; s < state; ++s) {
          const auto o = forward_point<T>(gi[s], go[s], gc[s], c[row + s]);
          gi[s] = o.input_gate;
          go[s] = o.output_gate;
          gc[s] = o.candidate;
          t_out[row + s] = o.tanh_cell;
          c_out[row + s] = o.new_cell;
          h_out[row + s] = o.new_h;
        }
      }
    });
  });
}

void cpu_backward(const Tensor& grad_h, const Tensor& grad_cell, const Tensor& gates,
                  const Tensor& tanh_cell, const Tensor& d_gates, const Tensor& d_old_cell) {
  const int64_t batch = grad_h.size(0), state = grad_h.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gates.scalar_type(), "lltm_backward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    const scalar_t* gh = grad_h.const_data_ptr<scalar_t>();
    const scalar_t* gc = grad_cell.const_data_ptr<scalar_t>();
    const scalar_t* g = gates.const_data_ptr<scalar_t>();
    const scalar_t* t = tanh_cell.const_data_ptr<scalar_t>();
    scalar_t* dg = d_gates.data_ptr<scalar_t>();
    scalar_t* dc = d_old_cell.data_ptr<scalar_t>();
    at::parallel_for(0, batch, grain_rows(state), [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const scalar_t* gb = g + b * 3 * state;
        scalar_t* dgb = dg + b * 3 * state;
        const int64_t row = b * state;
        for (int64_t s = 0; s < state; ++s) {
          const auto o = backward_point<T>(gh[row + s], gc[row + s], gb[s], gb[state + s],
                                           gb[2 * state + s], t[row + s]);
          dgb[s] = o.d_input_gate;
          dgb[state + s] = o.d_output_gate;
          dgb[2 * state + s] = o.d_candidate;
          dc[row + s] = o.d_old_cell;
        }
      }
    });
  });
}

}  // namespace
}  // namespace lltm

// The one place the operators are declared; the CUDA backend registers implementations of these.
TORCH_LIBRARY(LLTM_JIT_NAMESPACE, m) {
  m.def("forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell)"
        " -> (Tensor new_h, Tensor new_cell, Tensor gates, Tensor tanh_cell)");
  m.def("backward(Tensor grad_h, Tensor grad_cell, Tensor input, Tensor weights, Tensor old_h,"
        " Tensor gates, Tensor tanh_cell)"
        " -> (Tensor d_input, Tensor d_weights, Tensor d_bias, Tensor d_old_h, Tensor d_old_cell)");
}

TORCH_LIBRARY_IMPL(LLTM_JIT_NAMESPACE, CPU, m) {
  m.impl("forward", TORCH_FN(lltm::forward<lltm::cpu_forward>));
  m.impl("backward", TORCH_FN(lltm::backward<lltm::cpu_backward>));
}
