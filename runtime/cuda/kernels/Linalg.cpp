//===- runtime/cuda/kernels/Linalg.cpp - matmul through cuBLAS --------------===//
//
// matmul is cublasSgemm on row-major data through the usual swap: a
// row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so
// cuBLAS gets B first with the leading dimension of each operand being its
// row-major column count.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/kernels/Prepare.h"

#include "runtime/cuda/CudaCheck.h"

#include <climits>

namespace mpc::runtime::cuda {

namespace {

/// With an accumulator (third operand) the result is op(a) op(b) + c: beta = 1
/// on c's values, in place when the plan gives the result c's buffer.
Launch prepareMatMul(const KernelOperands &k) {
  requireArity(k, 2, 3);
  const plan::Buffer *a = k.inputs[0], *b = k.inputs[1], *c = k.output;
  for (auto *x : {a, b, c}) requireF32(x);
  if (a->shape.size() != 2 || b->shape.size() != 2 || c->shape.size() != 2)
    throw RuleError("matmul needs rank-2 buffers");
  bool ta = attrBool(k.instr->attrs, "transpose_a", false),
       tb = attrBool(k.instr->attrs, "transpose_b", false);
  int64_t m = ta ? a->shape[1] : a->shape[0], ka = ta ? a->shape[0] : a->shape[1];
  int64_t kb = tb ? b->shape[1] : b->shape[0], n = tb ? b->shape[0] : b->shape[1];
  if (ka != kb || c->shape[0] != m || c->shape[1] != n)
    throw RuleError("matmul buffer shapes do not agree");
  for (int64_t v : {m, n, ka, a->shape[1], b->shape[1]})
    if (v > INT_MAX) throw RuleError("matmul dimension exceeds cuBLAS's int range");
  const bool accumulate = k.inputs.size() == 3;
  const float *C0 = nullptr;
  if (accumulate) {
    requireF32(k.inputs[2]);
    if (k.inputs[2]->shape != c->shape) throw RuleError("matmul accumulator shape does not agree");
    C0 = cf(k.inPtr[2]);
  }
  int im = int(m), in = int(n), ik = int(ka);
  int lda = int(a->shape[1] > 0 ? a->shape[1] : 1), ldb = int(b->shape[1] > 0 ? b->shape[1] : 1);
  int ldc = in > 0 ? in : 1;
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const float *A = cf(k.inPtr[0]), *B = cf(k.inPtr[1]);
  float *C = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    if (im == 0 || in == 0) return;
    if (accumulate && C0 != C)
      cudaCheck(
          cudaMemcpyAsync(C, C0, size_t(im) * size_t(in) * 4, cudaMemcpyDeviceToDevice, ctx.stream),
          "cudaMemcpyAsync");
    if (ik == 0) {
      if (!accumulate) launchFill(C, int64_t(im) * in, 0.f, ctx.stream);
      return;
    }
    const float one = 1.f, zero = 0.f;
    cublasCheck(cublasSgemm(ctx.cublas, opB, opA, in, im, ik, &one, B, ldb, A, lda,
                            accumulate ? &one : &zero, C, ldc),
                "cublasSgemm");
  };
}

} // namespace

namespace kernels::Linalg {
const CudaKernel MatMul{nullptr, prepareMatMul};
} // namespace kernels::Linalg

} // namespace mpc::runtime::cuda
