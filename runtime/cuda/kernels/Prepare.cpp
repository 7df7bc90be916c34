//===- runtime/cuda/kernels/Prepare.cpp - helpers of the CUDA prepare fns ===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

namespace mpc::runtime::cuda {

void requireArity(const KernelOperands &k, size_t lo, size_t hi) {
  size_t n = k.inputs.size();
  if (n < lo || n > hi)
    throw RuleError("expected " + std::to_string(lo) +
                    (lo == hi ? "" : " to " + std::to_string(hi)) + " operands, got " +
                    std::to_string(n));
}

void requireF32(const plan::Buffer *b) {
  if (b->dtype != plan::DType::F32)
    throw RuleError("buffer '" + b->name + "' must be f32");
}

void requireSameCount(const plan::Buffer *a, const plan::Buffer *b) {
  if (a->numElements() != b->numElements())
    throw RuleError("buffers '" + a->name + "' and '" + b->name + "' differ in size");
}

int64_t normAxis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) throw RuleError("axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + r : axis;
}

Launch copyLaunch(const KernelOperands &k) {
  requireArity(k, 1, 1);
  if (k.inputs[0]->bytes != k.output->bytes) throw RuleError("input and output differ in size");
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
