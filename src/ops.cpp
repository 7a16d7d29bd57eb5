// The operators' schemas: the one place they are declared. Each backend file registers its
// implementations (TORCH_LIBRARY_IMPL), the autograd files their differentiation.
#include <torch/library.h>

TORCH_LIBRARY(LLTM_JIT_NAMESPACE, m) {
  // One step. `gates` are the gate pre-activations (batch, 3 * state_size): what the backward
  // needs besides the forward's inputs.
  m.def("forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell)"
        " -> (Tensor new_h, Tensor new_cell, Tensor gates)");
  m.def("backward(Tensor grad_h, Tensor grad_cell, Tensor input, Tensor weights, Tensor old_h,"
        " Tensor gates, Tensor old_cell)"
        " -> (Tensor d_old_h_input, Tensor d_weights, Tensor d_bias, Tensor d_old_cell)");
}
