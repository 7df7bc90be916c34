//===- runtime/cuda/kernels/Reduce.cpp - sums, means, broadcast_to ----------===//
//
// Reductions onto the fixed-partition launchers of Reduce.cu (results do not
// depend on timing); broadcast_to is a strided gather.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/kernels/Descriptors.h"

namespace mpc::runtime::cuda {

namespace {

ReduceDesc reduceOf(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> axes = attrInts(k.instr->attrs, "axes");
  std::vector<bool> reduced(x->shape.size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(normAxis(a, x->shape.size()))] = true;
  return reduceDesc(x->shape, reduced);
}

int64_t reduceScratch(const KernelOperands &k) {
  ReduceDesc d = reduceOf(k);
  if (d.out.count == 1) return allReduceScratchFloats(d.red.count);
  return reduceScratchFloats(d);
}

template <bool Mean> Launch prepareReduce(const KernelOperands &k) {
  requireArity(k, 1, 1);
  requireF32(k.inputs[0]);
  ReduceDesc d = reduceOf(k);
  if (d.out.count != k.output->numElements()) throw RuleError("result size does not match axes");
  float scale = Mean ? float(1.0 / double(d.red.count)) : 1.f;
  if (Mean && d.red.count == 0) scale = NAN;
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  if (d.out.count == 1 && d.red.count > 0)
    return [=] { launchReduceAll(x, nullptr, y, d.red.count, scale, ctx.scratch, ctx.stream); };
  return [=] { launchReduceSum(x, y, d, scale, ctx.scratch, ctx.stream); };
}

Launch prepareBroadcastTo(const KernelOperands &k) {
  requireArity(k, 1, 1);
  StridedDesc d = broadcastDesc(k.output->shape, k.inputs[0]->shape);
  const uint32_t *x = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *y = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(x, y, d, s); };
}

} // namespace

namespace kernels::Reduce {
const CudaKernel Sum{reduceScratch, prepareReduce<false>};
const CudaKernel Mean{reduceScratch, prepareReduce<true>};
const CudaKernel BroadcastTo{nullptr, prepareBroadcastTo};
} // namespace kernels::Reduce

} // namespace mpc::runtime::cuda
