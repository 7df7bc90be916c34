//===- runtime/cuda/kernels/Linalg.cu - matmul through cuBLAS -------------===//
//
// matmul is cublasSgemm on row-major data through the usual swap: a
// row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so
// cuBLAS gets B first with the leading dimension of each operand being its
// row-major column count.
//
// Operands of rank > 2 carry leading batch axes that broadcast as in
// numpy.matmul. The fewest cuBLAS calls that cover the batch are chosen at
// load: one sgemm when there is a single product, or when b is one matrix
// shared by the whole batch and a is not transposed (a's batch folds into
// its rows: [P, M, K] is [P*M, K]); one strided-batched sgemm when each
// operand either has the whole batch (stride of one matrix) or is one matrix
// broadcast over it (stride 0); otherwise one sgemm per product, each operand
// found through its broadcast strides.
//
// bf16 and f16 operands (--precision=bf16|fp16) go to cuBLAS as they are:
// cublasGemmEx (or its strided-batched form) with the low type for a and b,
// the result's type (the low type, or f32 with an f32 accumulator c) and
// CUBLAS_COMPUTE_32F: products and sums in f32, the result rounded once, as
// the CPU computes them. f32 operands keep cublasSgemm, so fp32 and tf32
// plans run exactly as before.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/Strides.h"
#include "runtime/cuda/CudaCheck.h"

#include <climits>

namespace mpc::runtime::cuda {

namespace {

using Dims = std::vector<int64_t>;

int64_t product(const Dims &d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

/// The batch axes of an operand (all but the last two).
Dims batchOf(const Dims &s) { return Dims(s.begin(), s.end() - 2); }

/// NumPy broadcast of two batch shapes (right-aligned; that they broadcast
/// was proven by the plan verifier).
Dims broadcastBatch(const Dims &a, const Dims &b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Element offset of batch entry `flat` (row-major over `batch`) in an
/// operand whose matrices hold `matrix` elements, its broadcast strides
/// (in matrices) being `strides`.
int64_t batchOffset(int64_t flat, const Dims &batch, const Dims &strides, int64_t matrix) {
  int64_t off = 0;
  for (size_t i = batch.size(); i-- > 0;) {
    off += (flat % batch[i]) * strides[i];
    flat /= batch[i];
  }
  return off * matrix;
}

cudaDataType_t cudaTypeOf(plan::DType t) {
  switch (t) {
  case plan::DType::BF16: return CUDA_R_16BF;
  case plan::DType::F16: return CUDA_R_16F;
  default: return CUDA_R_32F;
  }
}

void requireInt(int64_t v) {
  if (v > INT_MAX) throw RuleError("matmul dimension exceeds cuBLAS's int range");
}

enum class Strategy { Single, Folded, StridedBatched, Loop };

/// With an accumulator (third operand) the result is op(a) op(b) + c: beta = 1
/// on c's values, in place when the plan gives the result c's buffer.
Launch prepareMatMul(const KernelOperands &k) {
  const plan::Buffer *a = k.inputs[0], *b = k.inputs[1];
  bool ta = attrBool(k.instr->attrs, "transpose_a"),
       tb = attrBool(k.instr->attrs, "transpose_b");
  const int64_t ar = a->shape[a->shape.size() - 2], ac = a->shape.back();
  const int64_t br = b->shape[b->shape.size() - 2], bc = b->shape.back();
  int64_t m = ta ? ac : ar, ka = ta ? ar : ac; // ka is b's k too
  int64_t n = tb ? br : bc;
  Dims aBatch = batchOf(a->shape), bBatch = batchOf(b->shape);
  Dims batch = broadcastBatch(aBatch, bBatch);
  const bool accumulate = k.inputs.size() == 3;

  const int64_t count = product(batch), aCount = product(aBatch), bCount = product(bBatch);
  const int64_t aMatrix = ar * ac, bMatrix = br * bc, cMatrix = m * n;
  // Each operand's batch is either its own (every product has its matrix),
  // or one matrix for all, or a partial broadcast that needs the loop.
  const bool aWhole = aCount == count, aOne = aCount == 1;
  const bool bWhole = bCount == count, bOne = bCount == 1;
  Strategy how = Strategy::Loop;
  if (count <= 1) how = Strategy::Single;
  else if (bOne && aWhole && !ta) how = Strategy::Folded;
  else if ((aWhole || aOne) && (bWhole || bOne)) how = Strategy::StridedBatched;

  for (int64_t v : {m, n, ka, ac, bc}) requireInt(v);
  if (how == Strategy::Folded) requireInt(count * m);
  if (how == Strategy::StridedBatched) requireInt(count);
  int im = int(m), in = int(n), ik = int(ka);
  int foldedM = how == Strategy::Folded ? int(count * m) : im;
  int lda = int(ac > 0 ? ac : 1), ldb = int(bc > 0 ? bc : 1);
  int ldc = in > 0 ? in : 1;
  long long strideA = aOne ? 0 : aMatrix, strideB = bOne ? 0 : bMatrix;
  int batchCount = how == Strategy::StridedBatched ? int(count) : 1;

  // The loop's operand offsets, one pair per product, computed once.
  std::vector<int64_t> offA, offB;
  if (how == Strategy::Loop && cMatrix > 0 && ka > 0) {
    Dims sa = broadcastStrides(aBatch, batch), sb = broadcastStrides(bBatch, batch);
    // broadcastStrides counts in elements of the batch shape: matrices here.
    offA.resize(size_t(count));
    offB.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) {
      offA[size_t(i)] = batchOffset(i, batch, sa, aMatrix);
      offB[size_t(i)] = batchOffset(i, batch, sb, bMatrix);
    }
  }

  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Element types and sizes: a and b share one (the plan verifier's rule),
  // the result has its own (f32 with an f32 accumulator).
  const bool low = ops::isLowPrecision(a->dtype);
  const cudaDataType_t abType = cudaTypeOf(a->dtype), cType = cudaTypeOf(k.output->dtype);
  const int64_t abSize = ops::dtypeSize(a->dtype), cSize = ops::dtypeSize(k.output->dtype);
  const char *A = static_cast<const char *>(k.inPtr[0]), *B = static_cast<const char *>(k.inPtr[1]);
  char *C = static_cast<char *>(k.outPtr);
  const void *C0 = accumulate ? k.inPtr[2] : nullptr;
  const int64_t total = count * cMatrix;
  KernelContext ctx = k.ctx;
  return [=] {
    if (total == 0) return;
    if (accumulate && C0 != C)
      cudaCheck(cudaMemcpyAsync(C, C0, size_t(total * cSize), cudaMemcpyDeviceToDevice, ctx.stream),
                "cudaMemcpyAsync");
    if (ik == 0) {
      if (!accumulate)
        cudaCheck(cudaMemsetAsync(C, 0, size_t(total * cSize), ctx.stream), "cudaMemsetAsync");
      return;
    }
    const float one = 1.f, zero = 0.f;
    const float *beta = accumulate ? &one : &zero;
    // One product (or a folded batch): C[rows x in] = op(A) op(B).
    auto gemm = [&](const char *Bp, const char *Ap, char *Cp, int rows) {
      if (!low) {
        cublasCheck(cublasSgemm(ctx.cublas, opB, opA, in, rows, ik, &one,
                                reinterpret_cast<const float *>(Bp), ldb,
                                reinterpret_cast<const float *>(Ap), lda, beta,
                                reinterpret_cast<float *>(Cp), ldc),
                    "cublasSgemm");
        return;
      }
      cublasCheck(cublasGemmEx(ctx.cublas, opB, opA, in, rows, ik, &one, Bp, abType, ldb, Ap,
                               abType, lda, beta, Cp, cType, ldc, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx");
    };
    switch (how) {
    case Strategy::Single:
    case Strategy::Folded:
      gemm(B, A, C, foldedM);
      break;
    case Strategy::StridedBatched:
      if (!low) {
        cublasCheck(cublasSgemmStridedBatched(
                        ctx.cublas, opB, opA, in, im, ik, &one, reinterpret_cast<const float *>(B),
                        ldb, strideB, reinterpret_cast<const float *>(A), lda, strideA, beta,
                        reinterpret_cast<float *>(C), ldc, static_cast<long long>(cMatrix),
                        batchCount),
                    "cublasSgemmStridedBatched");
      } else {
        cublasCheck(cublasGemmStridedBatchedEx(ctx.cublas, opB, opA, in, im, ik, &one, B, abType,
                                               ldb, strideB, A, abType, lda, strideA, beta, C,
                                               cType, ldc, static_cast<long long>(cMatrix),
                                               batchCount, CUBLAS_COMPUTE_32F,
                                               CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx");
      }
      break;
    case Strategy::Loop:
      for (size_t i = 0; i < offA.size(); ++i)
        gemm(B + offB[i] * abSize, A + offA[i] * abSize, C + int64_t(i) * cMatrix * cSize, im);
      break;
    }
  };
}

} // namespace

namespace kernels::Linalg {
const CudaKernel MatMul{nullptr, prepareMatMul, /*lowPrecisionNative=*/true};
} // namespace kernels::Linalg

} // namespace mpc::runtime::cuda
