//===- runtime/cuda/kernels/Prepare.cpp - helpers of the CUDA prepare fns ===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

namespace mpc::runtime::cuda {

std::vector<ops::TensorType> operandTypes(const KernelOperands &k) {
  std::vector<ops::TensorType> types;
  types.reserve(k.inputs.size());
  for (const plan::Buffer *b : k.inputs) types.push_back({b->dtype, b->shape});
  return types;
}

int64_t normAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

Launch copyLaunch(const KernelOperands &k) {
  void *dst = k.outPtr;
  const void *src = k.inPtr[0];
  size_t bytes = k.output->bytes;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (dst != src && bytes)
      cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  };
}

Split splitAt(const std::vector<int64_t> &shape, int64_t axis) {
  Split s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (int64_t(i) < axis) s.outer *= shape[i];
    else if (int64_t(i) == axis) s.size = shape[i];
    else s.inner *= shape[i];
  }
  return s;
}

} // namespace mpc::runtime::cuda
