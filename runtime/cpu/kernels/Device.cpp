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
    throw RuleError("operand " + plan::shapeText(k.in[0].shape) + " and result " +
                    plan::shapeText(k.out.shape) + " differ");
}
} // namespace

namespace kernels::Device {
const CpuKernel Copy{prepareIdentity, runByteCopyKernel, 1, 1};
const CpuKernel StopGradient{prepareIdentity, runByteCopyKernel, 1, 1};
} // namespace kernels::Device

} // namespace mpc::runtime::cpu
