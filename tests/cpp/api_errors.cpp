// Calls the C++ API (lltm_jit.h) on each case of a file that tests/test_cpp.py writes with
// torch.save: {"cases": [[name, op, [arguments]], ...]}, op "lltm" or "lltm_sequence", an
// argument None where the C++ call gets an undefined tensor (a required one) or std::nullopt (an
// optional one). Prints one line per case: "<name>\t<error type>\t<message>", the error type
// "TypeError" for c10::TypeError, "Error" for any other c10::Error, "none" where the call returns.
#include <lltm_jit.h>

#include <torch/csrc/jit/serialization/pickle.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace {

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return text;
}

void call(const std::string& op, const std::vector<c10::IValue>& args) {
  auto tensor = [&](size_t i) { return args.at(i).isNone() ? at::Tensor() : args.at(i).toTensor(); };
  auto optional = [&](size_t i) { return args.at(i).isNone() ? std::nullopt : std::optional(args.at(i).toTensor()); };
  if (op == "lltm") {
    lltm_jit::lltm(tensor(0), tensor(1), tensor(2), tensor(3), tensor(4));
  } else {
    lltm_jit::lltm_sequence(tensor(0), tensor(1), tensor(2), optional(3), optional(4), optional(5));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <cases.pt>\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const c10::IValue cases = torch::jit::pickle_load(bytes).toGenericDict().at("cases");
  for (const c10::IValue& item : cases.toListRef()) {
    const auto& fields = item.toListRef();
    const std::string name = fields[0].toStringRef(), op = fields[1].toStringRef();
    const std::vector<c10::IValue> args(fields[2].toListRef().begin(), fields[2].toListRef().end());
    std::string type = "none", message;
    try {
      call(op, args);
    } catch (const c10::TypeError& error) {
      type = "TypeError", message = error.what_without_backtrace();
    } catch (const c10::Error& error) {
      type = "Error", message = error.what_without_backtrace();
    }
    std::printf("%s\t%s\t%s\n", name.c_str(), type.c_str(), one_line(message).c_str());
  }
  return 0;
}
