// The ATen functions that the host code calls without a Tensor method of the same name, through
// their operator entries (ATen/ops/<op>_ops.h). ATen/ops/<op>.h would bring ATen's Context,
// DeviceGuard and TensorUtils along, which doubles a host file's compile time (benchmarks/NOTES.md,
// "The build"). Everything else goes through Tensor methods (new_empty, addmm, mm, where, ...).
// `cat` is compiled once, in aten_cuda.cpp (of the CUDA build alone: the CPU's step joins no
// [old_h, input], cell.h): its tensor list type (ATen/core/IListRef.h) costs each file that
// includes it as much again as the Tensor class.
#pragma once

#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mv_ops.h>
#include <ATen/ops/sum_ops.h>

namespace lltm::aten {

using at::Tensor;

inline Tensor& mm_out(Tensor& out, const Tensor& a, const Tensor& b) { return at::_ops::mm_out::call(a, b, out); }

inline Tensor& addmm_out(Tensor& out, const Tensor& bias, const Tensor& a, const Tensor& b) {
  return at::_ops::addmm_out::call(bias, a, b, 1, 1, out);
}

inline Tensor& mv_out(Tensor& out, const Tensor& a, const Tensor& v) { return at::_ops::mv_out::call(a, v, out); }

// out = self summed over dimension `dim`.
inline Tensor& sum_out(Tensor& out, const Tensor& self, int64_t dim) {
  return at::_ops::sum_IntList_out::call(self, at::IntArrayRef{dim}, false, std::nullopt, out);
}

// [a, b] along `dim` (defined in the CUDA build alone).
Tensor cat(const Tensor& a, const Tensor& b, int64_t dim);

}  // namespace lltm::aten
