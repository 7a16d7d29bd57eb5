// The operator namespace this library registers its operators in (torch.ops.<namespace>).
//
// It is a string read when the library is loaded, not a macro, so that a rebuild under another
// namespace (lltm_jit.reload) compiles one generated file of one line rather than every file that
// registers or calls an operator. The loader writes that file (`gen/namespace-<namespace>.cpp` of its workspace):
//   namespace lltm { extern const char kNamespace[] = "lltm_jit"; }
#pragma once

#include <string>

namespace lltm {

// Constant-initialised, so that it is set before any registration's static initialiser runs.
extern const char kNamespace[];

// "<namespace>::<name>", the operator's name for the dispatcher.
inline std::string qualified(const char* name) { return std::string(kNamespace) + "::" + name; }

}  // namespace lltm
