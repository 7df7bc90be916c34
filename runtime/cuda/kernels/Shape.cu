//===- runtime/cuda/kernels/Shape.cu - data movement ----------------------===//
//
// reshape, transpose, fill, slice and concat, on 4-byte elements (f32 or i32
// alike). transpose is a strided gather (launchGather, Elementwise.cu). slice
// and concat are block copies: `outer` rows of `row` contiguous elements, row
// o read at src + o * srcStride and written at dst + o * dstStride, one
// thread per element, reads and writes coalesced along rows. A slice is one
// block copy, a concat one per operand (any number of them) into its band of
// the result's rows.
//
//===------------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/kernels/Descriptors.h"

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

// ---- device kernels and their launchers --------------------------------------

__global__ void blockCopyKernel(const uint32_t *__restrict__ src, uint32_t *__restrict__ dst,
                                int64_t n, int64_t row, int64_t srcStride, int64_t dstStride) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / row, j = i - o * row;
    dst[o * dstStride + j] = src[o * srcStride + j];
  }
}

/// Strided block copy of 4-byte elements (either dtype): for o in [0, outer),
/// dst[o * dstStride + j] = src[o * srcStride + j] for j in [0, row). slice
/// (one copy) and concat (one copy per operand).
void launchBlockCopy(const uint32_t *src, uint32_t *dst, int64_t outer, int64_t row,
                     int64_t srcStride, int64_t dstStride, cudaStream_t stream) {
  int64_t n = outer * row;
  if (n == 0) return;
  blockCopyKernel<<<gridFor(n), kThreads, 0, stream>>>(src, dst, n, row, srcStride, dstStride);
}

// ---- host side: at load, the launch of every step ---------------------------

Launch prepareTranspose(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> perm = attrInts(k.instr->attrs, "perm");
  if (perm.empty())
    for (size_t i = x->shape.size(); i-- > 0;) perm.push_back(int64_t(i));
  for (int64_t &p : perm) p = normAxis(p, x->shape.size());
  StridedDesc d = transposeDesc(x->shape, perm);
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(in, out, d, s); };
}

Launch prepareFill(const KernelOperands &k) {
  float value = float(attrFloat(k.instr->attrs, "value"));
  float *y = f(k.outPtr);
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] { launchFill(y, n, value, s); };
}

Launch prepareSlice(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis"), x->shape.size());
  int64_t start = attrInt(k.instr->attrs, "start"), end = attrInt(k.instr->attrs, "end");
  Split sp = splitAt(x->shape, axis); // 0 <= start < end <= sp.size: proven by the plan verifier
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]) + start * sp.inner;
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  int64_t outer = sp.outer, row = (end - start) * sp.inner, inRow = sp.size * sp.inner;
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBlockCopy(in, out, outer, row, inRow, row, s); };
}

/// Operand i fills its band of the axis: for every outer index, its row of
/// size_i * inner elements at its offset in the result's row.
Launch prepareConcat(const KernelOperands &k) {
  int64_t axis = normAxis(attrInt(k.instr->attrs, "axis"), k.output->shape.size());
  struct Part {
    const uint32_t *src;
    int64_t row, offset;
  };
  std::vector<Part> parts;
  int64_t outer = splitAt(k.output->shape, axis).outer, outRow = 0;
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
