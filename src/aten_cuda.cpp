// The one ATen function of aten.h that is not inline (see there), in the CUDA build only: the CPU
// backend makes no copy of [old_h, input] (cell.h).
#include "aten.h"

#include <ATen/core/IListRef.h>
#include <ATen/ops/cat_ops.h>

namespace lltm::aten {

Tensor cat(const Tensor& a, const Tensor& b, int64_t dim) {
  return at::_ops::cat::call(at::ITensorListRef{a, b}, dim);
}

}  // namespace lltm::aten
