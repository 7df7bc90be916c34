//===- runtime/cpu/kernels/Shape.cpp - reshape, transpose, fill ---------===//
//
// reshape is a byte copy (row-major data does not move), skipped when the
// memory planner gave the result the operand's own bytes; transpose is a
// strided copy with the operand's strides permuted; fill writes a constant.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"

#include "support/Error.h"

#include <cstring>

namespace mpc::runtime::cpu {

namespace {

void prepareReshape(KernelInstance &k) {
  if (k.in[0].numel != k.out.numel || k.in[0].dtype != k.out.dtype)
    throw RuleError("cannot reshape " + shapeStr(k.in[0].shape) + " to " +
                    shapeStr(k.out.shape));
}

void runByteCopy(const KernelInstance &k) {
  if (k.out.data != k.in[0].data)
    std::memmove(k.out.data, k.in[0].data, size_t(k.out.numel) * 4);
}

void prepareTranspose(KernelInstance &k) {
  const TensorArg &x = k.in[0];
  requireDType(x, plan::DType::F32, "operand 'x'");
  requireDType(k.out, plan::DType::F32, "the result");
  std::vector<int64_t> perm = attrInts(k, "perm", {});
  int64_t rank = x.rank();
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  if (int64_t(perm.size()) != rank || k.out.rank() != rank)
    throw RuleError("perm " + shapeStr(perm) + " does not match " + shapeStr(x.shape));
  std::vector<int64_t> xs = contiguousStrides(x.shape);
  std::vector<int64_t> s(static_cast<size_t>(rank));
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = perm[size_t(i)] < 0 ? perm[size_t(i)] + rank : perm[size_t(i)];
    if (p < 0 || p >= rank || seen[size_t(p)])
      throw RuleError("perm " + shapeStr(perm) + " is not a permutation");
    seen[size_t(p)] = true;
    if (k.out.shape[size_t(i)] != x.shape[size_t(p)])
      throw RuleError("result " + shapeStr(k.out.shape) + " does not match transposing " +
                      shapeStr(x.shape) + " by " + shapeStr(perm));
    s[size_t(i)] = xs[size_t(p)];
  }
  k.strides = {s};
}

void prepareFill(KernelInstance &k) {
  requireDType(k.out, plan::DType::F32, "the result");
  k.scalar = attrFloat(k, "value", 0.0);
}

void runFill(const KernelInstance &k) {
  float v = float(k.scalar);
  float *o = k.out.f();
  for (int64_t i = 0; i < k.out.numel; ++i) o[i] = v;
}

} // namespace

void addShapeKernels(CpuKernelRegistry &r) {
  r.add("reshape", {prepareReshape, runByteCopy, 1, 1});
  r.add("transpose", {prepareTranspose, runStridedCopyKernel, 1, 1});
  r.add("fill", {prepareFill, runFill, 0, 0});
}

/// Shared with Device.cpp.
void runByteCopyKernel(const KernelInstance &k) { runByteCopy(k); }

} // namespace mpc::runtime::cpu
