//===- runtime/cpu/kernels/Device.cpp - copy and stop_gradient ----------===//
//
// Both are identities on values. A copy between devices never reaches a
// kernel (codegen lowers it to a send/recv pair); a copy that stays on one
// device, and stop_gradient, copy the bytes (any dtype).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"

namespace mpc::runtime::cpu {

namespace kernels::Device {
const CpuKernel Copy{nullptr, runByteCopyKernel};
const CpuKernel StopGradient{nullptr, runByteCopyKernel};
} // namespace kernels::Device

} // namespace mpc::runtime::cpu
