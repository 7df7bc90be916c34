//===- runtime/cpu/CpuKernel.cpp - CPU kernel table and shared helpers --===//
//
// Builds the CPU kernel registry from the op list, once, on first use (no
// static constructors), and gives the family files their operands' types.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

namespace mpc::runtime::cpu {

const CpuKernelRegistry &cpuKernels() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r("cpu");
#define MPC_OP(Kind, Name, Family) r.add(Name, kernels::Family::Kind);
#define MPC_COLLECTIVE(Kind, Name)
#include "ops/OpList.def"
    return r;
  }();
  return registry;
}

std::vector<ops::TensorType> operandTypes(const KernelInstance &k) {
  std::vector<ops::TensorType> types;
  types.reserve(k.in.size());
  for (const TensorArg &t : k.in) types.push_back({t.dtype, t.shape});
  return types;
}

} // namespace mpc::runtime::cpu
