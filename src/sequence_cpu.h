// What the CPU sequence backend's two files share (sequence_cpu.cpp, and sequence_cpu_bf16.cpp for
// bfloat16 on AVX512-BF16, a file of its own so that an edit of either recompiles one): how the
// batch's rows are split over the threads, which rows run each step, the bias gradient summed
// inside the recurrence, and the bfloat16 entry points.
#pragma once

#include "cell_cpu.h"
#include "sequence.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace lltm::cpu {

// Calls f(begin, end) for blocks of the batch's rows, one block a thread, each through every step:
// a row's recurrence reads only its own h and c, so the threads never wait for each other within a
// call. MKL, called inside the parallel region, runs each product on the calling thread; a single
// block (one thread, or one row) runs outside it, where MKL may use its own threads.
inline int64_t row_block(int64_t batch) {
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
  return std::max<int64_t>(1, (batch + threads - 1) / threads);
}

template <typename F>
void over_row_blocks(int64_t batch, const F& f) {
  at::parallel_for(0, batch, row_block(batch), f);
}

// Which of a block's rows each step runs, where lengths are given: a row runs the steps before its
// length; after it its state stays, its output is zero and no gradient passes through its steps.
class Lengths {
 public:
  explicit Lengths(const Recurrence& r)
      : values_(r.lengths.defined() ? r.lengths.const_data_ptr<int64_t>() : nullptr) {}

  bool given() const { return values_ != nullptr; }
  bool runs(int64_t row, int64_t t) const { return values_ == nullptr || values_[row] > t; }

  // How many of the rows [begin, begin + m) run step t.
  int64_t running(int64_t begin, int64_t m, int64_t t) const {
    if (values_ == nullptr) return m;
    int64_t count = 0;
    for (int64_t i = 0; i < m; ++i) count += values_[begin + i] > t;
    return count;
  }

  // After step t's fused forward pass over the block's m rows of `state` values (c the cell state
  // before the step; new_c, h and gates the step's): a row that did not run keeps its cell state,
  // and its h and gates (where given) are zeros. Nothing where no lengths are given.
  template <typename T>
  void forward_step(int64_t begin, int64_t m, int64_t t, int64_t state, const T* c, T* new_c, T* h,
                    T* gates) const {
    for (int64_t i = 0; i < m && given(); ++i) {
      if (runs(begin + i, t)) continue;
      std::copy_n(c + i * state, state, new_c + i * state);
      std::fill_n(h + i * state, state, T(0));
      if (gates != nullptr) std::fill_n(gates + i * 3 * state, 3 * state, T(0));
    }
  }

  // Then the h of each row that ran step t (output, as the op returns it) into held, where a row
  // that has stopped keeps its own.
  template <typename H>
  void hold(int64_t begin, int64_t m, int64_t t, int64_t state, const H* output, H* held) const {
    for (int64_t i = 0; i < m && given(); ++i) {
      if (runs(begin + i, t)) std::copy_n(output + i * state, state, held + i * state);
    }
  }

  // Step t's fused backward pass over the block's m rows (cpu::backward_rows, in place: gates
  // become the gate gradients, d_c that of the cell state before the step), with grad (the
  // output's gradient at t; nullptr: zero) added to d_h first. A row that did not run gets zero
  // gate gradients, and its d_h and d_c pass through. Returns whether the product d_gates W_h must
  // add into d_h: where some rows have stopped, the rows that ran have zeros there for it.
  template <typename T>
  bool backward_step(int64_t begin, int64_t m, int64_t t, int64_t state, T* d_h, T* d_c, T* gates,
                     const T* c_prev, const T* grad) const {
    const bool some_stopped = running(begin, m, t) < m;
    const int64_t S = state, G = 3 * state;
    for (int64_t i = 0; i < m;) {
      int64_t j = i;
      while (j < m && runs(begin + j, t)) ++j;
      if (const int64_t n = j - i; n > 0) {  // rows [i, j) ran the step
        T* dh = d_h + i * S;
        if (grad != nullptr) {
          for (int64_t k = 0; k < n * S; ++k) dh[k] += grad[i * S + k];
        }
        cpu::backward_rows(dh, d_c + i * S, gates + i * G, c_prev + i * S, gates + i * G, d_c + i * S, n, S);
        if (some_stopped) std::fill_n(dh, n * S, T(0));
      }
      if (j < m) std::fill_n(gates + j * G, G, T(0));  // row j did not
      i = j + 1;
    }
    return some_stopped;
  }

 private:
  const int64_t* values_;
};

// The bias gradient summed in the recurrence from each step's gate gradients, a row of partial
// sums (in T) a block of rows: no second pass over all of d_gates after it (its cost:
// benchmarks/NOTES.md, "Session 11").
template <typename T>
class BiasSums {
 public:
  BiasSums(const BackwardRecurrence& r, const Tensor& like)
      : block_(row_block(r.sizes.batch)), width_(3 * r.sizes.state),
        partial_(r.d_bias.defined() ? like.new_zeros({(r.sizes.batch + block_ - 1) / block_, width_},
                                                     like.options().dtype(c10::CppTypeToScalarType<T>::value))
                                    : Tensor()) {}

  // Where the block of rows starting at `begin` sums; nullptr where no bias gradient is wanted.
  T* row(int64_t begin) const {
    return partial_.defined() ? partial_.data_ptr<T>() + begin / block_ * width_ : nullptr;
  }

  void add(T* __restrict__ sum, const T* __restrict__ d_gates, int64_t m) const {
    if (sum == nullptr) return;
    const int64_t width = width_;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < width; ++j) sum[j] += d_gates[i * width + j];
    }
  }

  void finish(BackwardRecurrence& r) const {
    if (!partial_.defined()) return;
    r.d_bias.copy_(partial_.sum(0));
    r.bias_summed = true;
  }

 private:
  int64_t block_, width_;
  Tensor partial_;
};

// bfloat16's recurrence and the products after it (sequence_cpu_bf16.cpp), where runs_bf16 says so.
bool runs_bf16(const Recurrence& r);
void bf16_forward(ForwardRecurrence& r);
void bf16_backward(BackwardRecurrence& r);
std::pair<Tensor, Tensor> bf16_sequence_products(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                                 const Tensor& weights, const Tensor& h0, const Tensor& output,
                                                 bool want_input, bool want_weights);

}  // namespace lltm::cpu
