// A few training steps of a sequence model on lltm_jit's C++ API, with no Python: two LLTM
// layers (lltm_jit::lltm_sequence, one call per layer over the whole sequence) and a linear head
// learn the running tanh-sum of a random sequence's first feature, with lengths, through
// libtorch's autograd and torch::optim::Adam.
//
//   train_sequence [cpu|cuda] [steps]
//
// Prints "step <i> loss <value>" before each update and the final loss. Everything is drawn on
// the CPU from one seed, so that the numbers are the same on either device and the same as
// Python's torch draws after torch.manual_seed(0) (tests/test_cpp.py replays the steps in Python).
#include <lltm_jit.h>

#include <torch/optim/adam.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int64_t kTime = 12, kBatch = 6, kFeatures = 4, kState = 16, kLayers = 2;

// nn.LSTM's initialisation, which lltm_jit's modules use: uniform in ±1/sqrt(state_size).
torch::Tensor parameter(std::vector<int64_t> shape, const torch::Device& device) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(kState));
  return torch::empty(shape).uniform_(-bound, bound).to(device).requires_grad_();
}

}  // namespace

int main(int argc, char** argv) {
  const torch::Device device(argc > 1 ? argv[1] : "cpu");
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  torch::manual_seed(0);

  const torch::Tensor x = torch::randn({kTime, kBatch, kFeatures});
  const torch::Tensor target = x.select(2, 0).cumsum(0).tanh().unsqueeze(2);
  // On the CPU whatever the device, as nn.utils.rnn keeps them: the kernels read them on the host.
  const torch::Tensor lengths = torch::tensor({12, 9, 5, 12, 1, 7}, torch::kLong);
  const torch::Tensor mask = (torch::arange(kTime).unsqueeze(1) < lengths.unsqueeze(0)).to(torch::kFloat);

  // weights (3 * state, state + layer input features) and bias (3 * state,) per layer, then the head.
  std::vector<torch::Tensor> parameters;
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    parameters.push_back(parameter({3 * kState, kState + (layer == 0 ? kFeatures : kState)}, device));
    parameters.push_back(parameter({3 * kState}, device));
  }
  const torch::Tensor head_weight = parameter({1, kState}, device), head_bias = parameter({1}, device);
  parameters.push_back(head_weight);
  parameters.push_back(head_bias);
  torch::optim::Adam optimizer(parameters, torch::optim::AdamOptions(1e-2));

  const torch::Tensor input = x.to(device), wanted = target.to(device), valid = mask.to(device);
  auto loss_of = [&] {
    torch::Tensor h = input;
    for (int64_t layer = 0; layer < kLayers; ++layer) {
      h = std::get<0>(lltm_jit::lltm_sequence(h, parameters[2 * layer], parameters[2 * layer + 1], std::nullopt,
                                              std::nullopt, lengths));
    }
    const torch::Tensor error = (torch::matmul(h, head_weight.t()) + head_bias - wanted).squeeze(2);
    return (error.pow(2) * valid).sum() / valid.sum();
  };
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    const torch::Tensor loss = loss_of();
    std::printf("step %d loss %.9g\n", step, loss.item<double>());
    loss.backward();
    optimizer.step();
  }
  std::printf("final loss %.9g\n", loss_of().item<double>());
  return 0;
}
