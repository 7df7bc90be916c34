//===- runtime/cuda/kernels/Device.cu - copy and stop_gradient ------------===//
//
// Identities on values: a device-to-device copy, or nothing when the plan
// gave input and output the same memory (copyLaunch, Prepare.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

namespace mpc::runtime::cuda {

namespace kernels::Device {
const CudaKernel Copy{nullptr, copyLaunch};
const CudaKernel StopGradient{nullptr, copyLaunch};
} // namespace kernels::Device

} // namespace mpc::runtime::cuda
