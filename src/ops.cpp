// The operators' schemas: the one place they are declared. Each backend file registers its
// implementations (TORCH_LIBRARY_IMPL), the autograd files their differentiation.
#include <torch/library.h>

TORCH_LIBRARY(LLTM_JIT_NAMESPACE, m) {
  // One step. `gates` are the gate pre-activations (batch, 3 * state_size): what the backward
  // needs besides the forward's inputs. The backward's output_mask says which of d_old_h_input,
  // d_weights and d_bias to compute (each a matrix product or a sum over the batch); the others
  // come back undefined (None in Python), as ATen's native_layer_norm_backward does. d_old_cell
  // comes out of the elementwise pass that every gradient needs, so it is always computed.
  m.def("forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell)"
        " -> (Tensor new_h, Tensor new_cell, Tensor gates)");
  m.def("backward(Tensor grad_h, Tensor grad_cell, Tensor input, Tensor weights, Tensor old_h,"
        " Tensor gates, Tensor old_cell, bool[3] output_mask)"
        " -> (Tensor d_old_h_input, Tensor d_weights, Tensor d_bias, Tensor d_old_cell)");
  // A whole sequence: input (time, batch, input_features), the cell's weights and bias, the initial
  // state (h0 and c0, each None for zeros), and optional lengths (batch,): past its length a
  // sequence's state stays as it is and its output is zero. `gates` (the pre-activations) and
  // `cells` (the cell state after each step) are what the backward needs besides the inputs and
  // the output; the backward overwrites `gates` with their gradients. for_backward says whether a
  // backward may follow: when false, `gates` and `cells` come back empty (shape (0,)) and no cell
  // states are written; None lets autograd decide (true when an input requires a gradient and
  // grad mode is on), and means true below autograd. The backward's output_mask says which of
  // d_input, d_weights and d_bias to compute (the products and the sum after the recurrence); the
  // others come back undefined. d_h0 and d_c0 come out of the recurrence, which every gradient
  // needs: they come back also where h0 and c0 were None.
  m.def("sequence_forward(Tensor input, Tensor weights, Tensor bias, Tensor? h0, Tensor? c0, Tensor? lengths,"
        " bool? for_backward=None)"
        " -> (Tensor output, Tensor h_n, Tensor c_n, Tensor gates, Tensor cells)");
  m.def("sequence_backward(Tensor? grad_output, Tensor? grad_h_n, Tensor? grad_c_n, Tensor input,"
        " Tensor weights, Tensor? h0, Tensor? c0, Tensor? lengths, Tensor output, Tensor(a!) gates, Tensor cells,"
        " bool[3] output_mask)"
        " -> (Tensor d_input, Tensor d_weights, Tensor d_bias, Tensor d_h0, Tensor d_c0)");
}
