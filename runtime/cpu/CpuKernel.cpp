//===- runtime/cpu/CpuKernel.cpp - CPU kernel table and shared helpers --===//
//
// Builds the CPU kernel registry from the op list, once, on first use (no
// static constructors), and holds the operand checks the family files share.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "plan/PlanIO.h"
#include "support/Error.h"

namespace mpc::runtime::cpu {

const CpuKernelRegistry &cpuKernels() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r("cpu");
#define MPC_OP(Kind, Name, Family) r.add(Name, kernels::Family::Kind);
#include "ops/OpList.def"
    return r;
  }();
  return registry;
}

static std::string typeStr(const TensorArg &t) { return plan::typeText(t.dtype, t.shape); }

void requireDType(const TensorArg &t, plan::DType dt, const std::string &what) {
  if (t.dtype != dt)
    throw RuleError(what + " must be " + plan::dtypeName(dt) + ", got " + typeStr(t));
}

void requireSameShape(const TensorArg &a, const TensorArg &b, const std::string &what) {
  if (a.shape != b.shape)
    throw RuleError(what + ": shape mismatch: " + typeStr(a) + " x " + typeStr(b));
}

} // namespace mpc::runtime::cpu
