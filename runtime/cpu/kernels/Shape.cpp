//===- runtime/cpu/kernels/Shape.cpp - reshape, transpose, fill, ... ----===//
//
// reshape is a byte copy (row-major data does not move), skipped when the
// memory planner gave the result the operand's own bytes; transpose is a
// strided copy with the operand's strides permuted; fill writes a constant.
// slice and concat are strided block copies: the tensors seen as [outer,
// axis * inner], one memcpy of contiguous elements per operand and outer
// index. Both carry f32 and i32 (4-byte elements either way).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/Loops.h"

#include <cstring>

namespace mpc::runtime::cpu {

namespace {

void runByteCopy(const KernelInstance &k) {
  if (k.out.data != k.in[0].data)
    std::memmove(k.out.data, k.in[0].data, size_t(k.out.numel) * 4);
}

void prepareTranspose(KernelInstance &k) {
  const TensorArg &x = k.in[0];
  std::vector<int64_t> perm = attrInts(k.attrMap(), "perm");
  int64_t rank = x.rank();
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  // perm is a permutation of x's axes: proven by the plan verifier.
  std::vector<int64_t> xs = contiguousStrides(x.shape);
  std::vector<int64_t> s(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = perm[size_t(i)] < 0 ? perm[size_t(i)] + rank : perm[size_t(i)];
    s[size_t(i)] = xs[size_t(p)];
  }
  k.strides = {s};
}

void prepareFill(KernelInstance &k) {
  k.scalar = attrFloat(k.attrMap(), "value");
}

void runFill(const KernelInstance &k) {
  float v = float(k.scalar);
  float *o = k.out.f();
  for (int64_t i = 0; i < k.out.numel; ++i) o[i] = v;
}

/// The axis attribute counted from the front (the plan verifier proved it in range).
int64_t normAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Product of shape[from, to).
int64_t extent(const std::vector<int64_t> &shape, int64_t from, int64_t to) {
  int64_t n = 1;
  for (int64_t i = from; i < to; ++i) n *= shape[size_t(i)];
  return n;
}

// slice: ints = {outer, x row (dim * inner), result row (len * inner), start * inner}.
void prepareSlice(KernelInstance &k) {
  const TensorArg &x = k.in[0];
  int64_t axis = normAxis(attrInt(k.attrMap(), "axis"), x.rank());
  int64_t start = attrInt(k.attrMap(), "start"), stop = attrInt(k.attrMap(), "end");
  int64_t dim = x.shape[size_t(axis)];
  int64_t inner = extent(x.shape, axis + 1, x.rank());
  k.ints = {extent(x.shape, 0, axis), dim * inner, (stop - start) * inner, start * inner};
}

void runSlice(const KernelInstance &k) {
  const int64_t outer = k.ints[0], inRow = k.ints[1], outRow = k.ints[2], offset = k.ints[3];
  const char *in = static_cast<const char *>(k.in[0].data);
  char *out = static_cast<char *>(k.out.data);
  if (outRow == 0) return; // no elements (a zero extent elsewhere)
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * outRow * 4, in + (o * inRow + offset) * 4, size_t(outRow) * 4);
}

// concat: ints = {outer, row of operand 0, row of operand 1, ...}, a row
// being the operand's extent along the axis times the inner extent.
void prepareConcat(KernelInstance &k) {
  const TensorArg &first = k.in[0];
  int64_t axis = normAxis(attrInt(k.attrMap(), "axis"), first.rank());
  int64_t inner = extent(first.shape, axis + 1, first.rank());
  k.ints = {extent(first.shape, 0, axis)};
  for (const TensorArg &x : k.in) k.ints.push_back(x.shape[size_t(axis)] * inner);
}

void runConcat(const KernelInstance &k) {
  const int64_t outer = k.ints[0];
  int64_t row = 0;
  for (size_t i = 1; i < k.ints.size(); ++i) row += k.ints[i];
  char *out = static_cast<char *>(k.out.data);
  int64_t at = 0; // element offset of the operand's block in an output row
  for (size_t i = 0; i < k.in.size(); ++i) {
    const int64_t r = k.ints[i + 1];
    // An operand with no elements may have no buffer: skip zero-byte copies.
    if (r) {
      const char *x = static_cast<const char *>(k.in[i].data);
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out + (o * row + at) * 4, x + o * r * 4, size_t(r) * 4);
    }
    at += r;
  }
}

} // namespace

namespace kernels::Shape {
const CpuKernel Reshape{nullptr, runByteCopy};
const CpuKernel Transpose{prepareTranspose, runStridedCopyKernel};
const CpuKernel Fill{prepareFill, runFill};
const CpuKernel Slice{prepareSlice, runSlice};
const CpuKernel Concat{prepareConcat, runConcat};
// flatten is a reshape whose shape the op derives itself: the same byte copy.
const CpuKernel Flatten{nullptr, runByteCopy};
} // namespace kernels::Shape

/// Shared with Device.cpp.
void runByteCopyKernel(const KernelInstance &k) { runByteCopy(k); }

} // namespace mpc::runtime::cpu
