//===- runtime/cuda/kernels/Shape.cpp - data movement -----------------------===//
//
// reshape, transpose, fill, slice and concat: strided gathers and block
// copies of 4-byte elements (f32 or i32 alike), onto the launchers of
// Shape.cu.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/Descriptors.h"

namespace mpc::runtime::cuda {

namespace {

Launch prepareTranspose(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> perm = attrInts(k.instr->attrs, "perm");
  if (perm.empty())
    for (size_t i = x->shape.size(); i-- > 0;) perm.push_back(int64_t(i));
  if (perm.size() != x->shape.size()) throw RuleError("perm does not match the rank");
  for (int64_t &p : perm) p = normAxis(p, x->shape.size());
  StridedDesc d = transposeDesc(x->shape, perm);
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(in, out, d, s); };
}

Launch prepareFill(const KernelOperands &k) {
  requireArity(k, 0, 0);
  requireF32(k.output);
  float value = float(attrFloat(k.instr->attrs, "value", 0.0));
  float *y = f(k.outPtr);
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] { launchFill(y, n, value, s); };
}


void requireBlockDType(const plan::Buffer *b, const plan::Buffer *out) {
  if (b->dtype != plan::DType::F32 && b->dtype != plan::DType::I32)
    throw RuleError("buffer '" + b->name + "' must be f32 or i32");
  if (b->dtype != out->dtype)
    throw RuleError("buffers '" + b->name + "' and '" + out->name + "' differ in dtype");
}

Launch prepareSlice(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  requireBlockDType(x, k.output);
  if (x->shape.empty()) throw RuleError("slice needs rank >= 1");
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis", 0), x->shape.size());
  int64_t start = attrInt(k.instr->attrs, "start", 0), stop = attrInt(k.instr->attrs, "stop", 0);
  Split sp = splitAt(x->shape, axis);
  if (start < 0 || start >= stop || stop > sp.size)
    throw RuleError("slice range out of bounds for buffer '" + x->name + "'");
  std::vector<int64_t> want = x->shape;
  want[size_t(axis)] = stop - start;
  if (k.output->shape != want) throw RuleError("result shape does not match the slice");
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]) + start * sp.inner;
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  int64_t outer = sp.outer, row = (stop - start) * sp.inner, inRow = sp.size * sp.inner;
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBlockCopy(in, out, outer, row, inRow, row, s); };
}

Launch prepareConcat(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const plan::Buffer *a = k.inputs[0], *b = k.inputs[1];
  requireBlockDType(a, k.output);
  requireBlockDType(b, k.output);
  if (a->shape.empty()) throw RuleError("concat needs rank >= 1");
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis", 0), a->shape.size());
  bool ok = a->shape.size() == b->shape.size();
  for (size_t i = 0; ok && i < a->shape.size(); ++i)
    ok = int64_t(i) == axis || a->shape[i] == b->shape[i];
  std::vector<int64_t> want = a->shape;
  if (ok) want[size_t(axis)] += b->shape[size_t(axis)];
  if (!ok || k.output->shape != want)
    throw RuleError("buffers '" + a->name + "' and '" + b->name +
                    "' do not concatenate to the result shape");
  Split sa = splitAt(a->shape, axis), sb = splitAt(b->shape, axis);
  int64_t outer = sa.outer, rowA = sa.size * sa.inner, rowB = sb.size * sb.inner;
  const uint32_t *pa = static_cast<const uint32_t *>(k.inPtr[0]);
  const uint32_t *pb = static_cast<const uint32_t *>(k.inPtr[1]);
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchBlockCopy(pa, out, outer, rowA, rowA, rowA + rowB, s);
    launchBlockCopy(pb, out + rowA, outer, rowB, rowB, rowA + rowB, s);
  };
}

} // namespace

namespace kernels::Shape {
const CudaKernel Reshape{nullptr, copyLaunch};
const CudaKernel Transpose{nullptr, prepareTranspose};
const CudaKernel Fill{nullptr, prepareFill};
const CudaKernel Slice{nullptr, prepareSlice};
const CudaKernel Concat{nullptr, prepareConcat};
} // namespace kernels::Shape

} // namespace mpc::runtime::cuda
