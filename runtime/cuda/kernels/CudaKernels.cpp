//===- runtime/cuda/kernels/CudaKernels.cpp - the CUDA kernel table -------------===//
//
// One record per op of ops/OpList.def, under the op's name: the list is the op
// list, and op `Kind` of family `Family` is kernels::Family::Kind, defined in
// runtime/cuda/kernels/<Family>.cu with the family's device code. Built
// once, on first use.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/CudaKernels.h"

namespace mpc::runtime::cuda {

const KernelRegistry<CudaKernel> &cudaKernels() {
  static const KernelRegistry<CudaKernel> registry = [] {
    KernelRegistry<CudaKernel> r("cuda");
#define MPC_OP(Kind, Name, Family) r.add(Name, kernels::Family::Kind);
#define MPC_COLLECTIVE(Kind, Name)
#include "ops/OpList.def"
    return r;
  }();
  return registry;
}

} // namespace mpc::runtime::cuda
