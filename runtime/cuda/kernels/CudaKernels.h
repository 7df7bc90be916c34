//===- runtime/cuda/kernels/CudaKernels.h - op name -> CUDA kernel --------------===//
//
// The CUDA backend's KernelRegistry: for every op of the registry a record
// that, at load, says how much scratch an instruction needs and prepares a
// launch closure with every pointer, shape descriptor and attribute already
// resolved. The plan verifier has proven the instruction against its op's
// schema (operand count, attributes, buffer types: plan/OpSignatures.h), so
// a record checks only the device's limits. Executing an instruction is then
// one call that enqueues work on the device's stream.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/KernelRegistry.h"
#include "runtime/cuda/kernels/Kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace mpc::runtime::cuda {

/// Launch resources, fixed at load: the device's, and the instruction's
/// index in dataError.
struct KernelContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  float *scratch = nullptr; ///< scratch of the launches (max over the device's instructions)
  /// Where kernels that index with data report a bad index: the device's
  /// DataError record and the instruction being prepared. The record also
  /// holds the running step's number, which dropout reads on the device.
  DataErrorSink dataError;
  uint64_t seed = 0;             ///< the plan's seed (dropout)
};

/// One kernel instruction with its buffers resolved. Pointers are null when
/// only the scratch size is asked for.
struct KernelOperands {
  const plan::Instr *instr = nullptr;
  std::vector<const plan::Buffer *> inputs;
  const plan::Buffer *output = nullptr;
  std::vector<void *> inPtr;
  void *outPtr = nullptr;
  KernelContext ctx;
};

using Launch = std::function<void()>;

struct CudaKernel {
  /// Floats of scratch the launch needs (null: none).
  int64_t (*scratchFloats)(const KernelOperands &) = nullptr;
  /// Returns the launch; throws RuleError with the reason when the
  /// instruction exceeds a device limit (a size beyond cuBLAS's int range).
  Launch (*prepare)(const KernelOperands &) = nullptr;
  /// The kernel reads and writes bf16 and f16 buffers itself (cast; matmul
  /// through cublasGemmEx). Every other kernel is written over f32 and the
  /// device stages f32 copies of its low-typed buffers around it
  /// (CudaDevice::load).
  bool lowPrecisionNative = false;
};

/// Every CUDA kernel, keyed by op name.
const KernelRegistry<CudaKernel> &cudaKernels();

/// The kernels themselves: op `Kind` of family `Family` is
/// kernels::Family::Kind, defined in kernels/<Family>.cu. The list is the op
/// list (ops/OpList.def), so an op without a CUDA kernel does not link.
namespace kernels {
#define MPC_OP(Kind, Name, Family)                                                          \
  namespace Family {                                                                         \
  extern const CudaKernel Kind;                                                              \
  }
#define MPC_COLLECTIVE(Kind, Name)
#include "ops/OpList.def"
} // namespace kernels

} // namespace mpc::runtime::cuda
