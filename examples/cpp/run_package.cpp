// Runs an AOTInductor package of a model that calls lltm_jit's operators, with no Python, and
// checks its outputs against eager PyTorch's: export_model.py writes the package and a file of
// inputs and expected outputs (torch.save, which torch::jit::pickle_load reads).
//
//   run_package <model.pt2> <data.pt>
//
// The package calls the operators by name (lltm_jit::sequence_forward) through the dispatcher:
// the library must be loaded before the package runs, which linking it (CMakeLists.txt) does.
// Prints each output's relative error and "outputs match eager", or exits 1.
#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<at::Tensor> tensors(const c10::IValue& list) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& item : list.toListRef()) out.push_back(item.toTensor());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <model.pt2> <data.pt>\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[2], std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const c10::Dict<c10::IValue, c10::IValue> data = torch::jit::pickle_load(bytes).toGenericDict();
  const double tolerance = data.at("tolerance").toDouble();

  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  const c10::Device device(loader.get_metadata().at("AOTI_DEVICE_KEY"));
  // The floating-point inputs on the package's device; lengths stay on the CPU, where the script
  // passed them when it exported (the kernels read them on the host).
  std::vector<at::Tensor> inputs = tensors(data.at("inputs"));
  for (at::Tensor& input : inputs) {
    if (input.is_floating_point()) input = input.to(device);
  }
  const std::vector<at::Tensor> outputs = loader.run(inputs);
  const std::vector<at::Tensor> expected = tensors(data.at("outputs"));
  if (outputs.size() != expected.size()) {
    std::fprintf(stderr, "got %zu outputs, expected %zu\n", outputs.size(), expected.size());
    return 1;
  }
  bool match = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor got = outputs[i].cpu().to(at::kDouble), want = expected[i].to(at::kDouble);
    const bool same_shape = got.sizes() == want.sizes();
    const double error = same_shape ? ((got - want).norm() / want.norm().clamp_min(1e-30)).item<double>() : -1;
    std::printf("output %zu: shape %s, relative error %.3g\n", i, c10::str(outputs[i].sizes()).c_str(), error);
    match = match && same_shape && error <= tolerance;
  }
  std::printf(match ? "outputs match eager (on %s)\n" : "outputs differ from eager (on %s)\n",
              device.str().c_str());
  return match ? 0 : 1;
}
