// What the CPU sequence backend's two files share (sequence_cpu.cpp, and sequence_cpu_bf16.cpp for
// bfloat16 on AVX512-BF16, a file of its own so that an edit of either recompiles one): how the
// batch's rows are split over the threads, which rows run each step, the bias gradient summed
// inside the recurrence, and the bfloat16 entry points.
#pragma once

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

  // f(first, count) for each run of consecutive rows of the block that step t runs, first counted
  // from begin, and g(i) for each row that it does not run.
  template <typename F, typename G>
  void split(int64_t begin, int64_t m, int64_t t, const F& f, const G& g) const {
    for (int64_t i = 0; i < m;) {
      int64_t j = i;
      while (j < m && runs(begin + j, t)) ++j;
      if (j > i) f(i, j - i);
      if (j < m) g(j);
      i = j + 1;
    }
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
  BiasSums(const Recurrence& r, const Tensor& like)
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

  void finish(Recurrence& r) const {
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
void bf16_forward(Recurrence& r);
void bf16_backward(Recurrence& r);
std::pair<Tensor, Tensor> bf16_sequence_products(const SequenceSizes& s, const Tensor& d_gates, const Tensor& input,
                                                 const Tensor& weights, const Tensor& h0, const Tensor& output,
                                                 bool want_input, bool want_weights);

}  // namespace lltm::cpu
