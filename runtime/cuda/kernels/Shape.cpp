//===- runtime/cuda/kernels/Shape.cpp - data movement -----------------------===//
//
// reshape, transpose, fill, slice and concat: strided gathers and block
// copies of 4-byte elements (f32 or i32 alike), onto the launchers of
// Shape.cu. A slice is one block copy, a concat one per operand (any number
// of them) into its band of the result's rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/kernels/Descriptors.h"

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
  float value = float(attrFloat(k.instr->attrs, "value"));
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
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis"), x->shape.size());
  int64_t start = attrInt(k.instr->attrs, "start"), end = attrInt(k.instr->attrs, "end");
  Split sp = splitAt(x->shape, axis);
  if (start < 0 || start >= end || end > sp.size)
    throw RuleError("slice range out of bounds for buffer '" + x->name + "'");
  std::vector<int64_t> want = x->shape;
  want[size_t(axis)] = end - start;
  if (k.output->shape != want) throw RuleError("result shape does not match the slice");
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]) + start * sp.inner;
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  int64_t outer = sp.outer, row = (end - start) * sp.inner, inRow = sp.size * sp.inner;
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBlockCopy(in, out, outer, row, inRow, row, s); };
}

/// Operand i fills its band of the axis: for every outer index, its row of
/// size_i * inner elements at its offset in the result's row.
Launch prepareConcat(const KernelOperands &k) {
  if (k.inputs.empty()) throw RuleError("concat needs at least one operand");
  const plan::Buffer *first = k.inputs[0];
  if (first->shape.empty()) throw RuleError("concat needs rank >= 1");
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis"), first->shape.size());
  std::vector<int64_t> want = first->shape;
  want[size_t(axis)] = 0;
  for (const plan::Buffer *b : k.inputs) {
    requireBlockDType(b, k.output);
    bool ok = b->shape.size() == first->shape.size();
    for (size_t i = 0; ok && i < b->shape.size(); ++i)
      ok = int64_t(i) == axis || b->shape[i] == first->shape[i];
    if (!ok)
      throw RuleError("buffers '" + first->name + "' and '" + b->name +
                      "' differ outside the concat axis");
    want[size_t(axis)] += b->shape[size_t(axis)];
  }
  if (k.output->shape != want)
    throw RuleError("the operands do not concatenate to the result shape");
  struct Part {
    const uint32_t *src;
    int64_t row, offset;
  };
  std::vector<Part> parts;
  int64_t outer = splitAt(want, axis).outer, outRow = 0;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    Split sp = splitAt(k.inputs[i]->shape, axis);
    parts.push_back({static_cast<const uint32_t *>(k.inPtr[i]), sp.size * sp.inner, outRow});
    outRow += sp.size * sp.inner;
  }
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] {
    for (const Part &p : parts)
      launchBlockCopy(p.src, out + p.offset, outer, p.row, p.row, outRow, s);
  };
}

} // namespace

namespace kernels::Shape {
const CudaKernel Reshape{nullptr, copyLaunch};
const CudaKernel Transpose{nullptr, prepareTranspose};
const CudaKernel Fill{nullptr, prepareFill};
const CudaKernel Slice{nullptr, prepareSlice};
const CudaKernel Concat{nullptr, prepareConcat};
// flatten is a reshape whose shape the op derives itself: the same copy.
const CudaKernel Flatten{nullptr, copyLaunch};
} // namespace kernels::Shape

} // namespace mpc::runtime::cuda
