//===- runtime/cpu/kernels/Device.cpp - copy and stop_gradient ----------===//
//
// Both are identities on values. A copy between devices never reaches a
// kernel (codegen lowers it to a send/recv pair); a copy that stays on one
// device, and stop_gradient, copy the bytes (any dtype).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"

#include "support/Error.h"

namespace mpc::runtime::cpu {

namespace {
void prepareIdentity(KernelInstance &k) {
  if (k.in[0].shape != k.out.shape || k.in[0].dtype != k.out.dtype)
    throw RuleError("operand " + shapeStr(k.in[0].shape) + " and result " +
                    shapeStr(k.out.shape) + " differ");
}
} // namespace

void addDeviceKernels(CpuKernelRegistry &r) {
  r.add("copy", {prepareIdentity, runByteCopyKernel, 1, 1});
  r.add("stop_gradient", {prepareIdentity, runByteCopyKernel, 1, 1});
}

} // namespace mpc::runtime::cpu
