//===- runtime/KernelRegistry.h - op name -> kernel, per backend --------===//
//
// Backends hold kernels keyed by the op's name (the names of ops/OpList.def;
// the runtime never includes ir/). Each backend fills one registry with
// explicit add() calls, one function per kernel family file (no static
// constructors), and resolves every kernel instruction of a plan through it
// once, at load; executing an instruction is then a function-pointer call.
// An op the backend has no kernel for is rejected at load.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/Error.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mpc::runtime {

/// `Kernel` is the backend's kernel record (a function pointer or a small
/// struct of them).
template <class Kernel> class KernelRegistry {
public:
  explicit KernelRegistry(std::string backend) : backend_(std::move(backend)) {}

  /// Registers `name`; registering a name twice is a bug.
  void add(const std::string &name, Kernel kernel) {
    MPC_ASSERT(kernels_.emplace(name, kernel).second,
               "kernel '" + name + "' registered twice for backend " + backend_);
  }
  /// The kernel for `name`, or nullptr.
  const Kernel *find(std::string_view name) const {
    auto it = kernels_.find(std::string(name));
    return it == kernels_.end() ? nullptr : &it->second;
  }
  /// Sorted op names that have a kernel.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto &entry : kernels_) out.push_back(entry.first);
    return out;
  }
  const std::string &backend() const { return backend_; }

private:
  std::string backend_;
  std::map<std::string, Kernel> kernels_;
};

/// "no cpu kernel for op 'foo' (did you mean 'exp'?)": the message used when
/// a plan names an op the backend lacks.
std::string missingKernelMessage(const std::string &op, const std::string &backend,
                                 const std::vector<std::string> &known);

} // namespace mpc::runtime
