//===- runtime/cpu/kernels/MatMul.cpp - matmul through cblas_sgemm ------===//
//
// op(a) x op(b) for rank-2 f32 buffers, with the transposes passed to BLAS
// rather than materialised; tiny products run as plain loops (see
// kSmallProduct). OpenBLAS runs with one thread (set when a CPU
// device loads), so the blocking and summation order depend on the shapes
// only and results are bit-identical run after run.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <algorithm>
#include <cblas.h>
#include <cstring>

namespace mpc::runtime::cpu {

namespace {

// ints: m, n, k, lda, ldb, transA, transB
void prepareMatMul(KernelInstance &k) {
  const TensorArg &a = k.in[0], &b = k.in[1];
  requireDType(a, plan::DType::F32, "operand 'a'");
  requireDType(b, plan::DType::F32, "operand 'b'");
  requireDType(k.out, plan::DType::F32, "the result");
  if (a.rank() != 2 || b.rank() != 2 || k.out.rank() != 2)
    throw RuleError("matmul needs rank-2 buffers: " + plan::shapeText(a.shape) + " x " +
                    plan::shapeText(b.shape) + " -> " + plan::shapeText(k.out.shape));
  bool ta = attrBool(k.attrMap(), "transpose_a", false),
       tb = attrBool(k.attrMap(), "transpose_b", false);
  int64_t m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (ka != kb || k.out.shape[0] != m || k.out.shape[1] != n)
    throw RuleError("shape mismatch: " + plan::shapeText(a.shape) + " x " +
                    plan::shapeText(b.shape) + " -> " + plan::shapeText(k.out.shape));
  if (k.in.size() == 3) {
    requireDType(k.in[2], plan::DType::F32, "operand 'c'");
    if (k.in[2].shape != k.out.shape)
      throw RuleError("accumulator 'c' " + plan::shapeText(k.in[2].shape) +
                      " does not match the result " + plan::shapeText(k.out.shape));
  }
  const int64_t kMax = int64_t(1) << 31;
  if (m >= kMax || n >= kMax || ka >= kMax) throw RuleError("matmul dimensions too large for BLAS");
  k.ints = {m, n, ka, std::max<int64_t>(1, a.shape[1]), std::max<int64_t>(1, b.shape[1]), ta, tb};
}

/// Products of at most this many multiply-adds skip BLAS: for the tiny
/// matrices of small models, sgemm's packing and dispatch cost more than the
/// arithmetic (the seed model's matmuls are 200 to 400 of them).
constexpr int64_t kSmallProduct = 8192;

/// op(a) op(b) (+= into `out`, which holds c or zeros), row by row, each
/// element summed over k in order.
void smallMatMul(const KernelInstance &k, int64_t m, int64_t n, int64_t kk) {
  const float *a = k.in[0].f(), *b = k.in[1].f();
  float *o = k.out.f();
  const int64_t lda = k.ints[3], ldb = k.ints[4];
  const bool ta = k.ints[5] != 0, tb = k.ints[6] != 0;
  for (int64_t i = 0; i < m; ++i) {
    float *row = o + i * n;
    for (int64_t p = 0; p < kk; ++p) {
      const float av = ta ? a[p * lda + i] : a[i * lda + p];
      if (!tb) {
        const float *brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + p];
      }
    }
  }
}

/// With an accumulator c the result is op(a) op(b) + c: sgemm with beta = 1
/// on c's values, in place when the plan gives the result c's buffer (the
/// accumulation of a micro-batch's weight gradient), after a copy otherwise.
void runMatMul(const KernelInstance &k) {
  int64_t m = k.ints[0], n = k.ints[1], kk = k.ints[2];
  if (m == 0 || n == 0) return;
  bool accumulate = k.in.size() == 3;
  if (accumulate && k.in[2].data != k.out.data)
    std::memcpy(k.out.data, k.in[2].data, size_t(m * n) * 4);
  if (kk == 0) {
    if (!accumulate) std::memset(k.out.data, 0, size_t(m * n) * 4);
    return;
  }
  if (m * n * kk <= kSmallProduct) {
    if (!accumulate) std::memset(k.out.data, 0, size_t(m * n) * 4);
    smallMatMul(k, m, n, kk);
    return;
  }
  cblas_sgemm(CblasRowMajor, k.ints[5] ? CblasTrans : CblasNoTrans,
              k.ints[6] ? CblasTrans : CblasNoTrans, int(m), int(n), int(kk), 1.0f, k.in[0].f(),
              int(k.ints[3]), k.in[1].f(), int(k.ints[4]), accumulate ? 1.0f : 0.0f, k.out.f(),
              int(std::max<int64_t>(1, n)));
}

} // namespace

namespace kernels::Linalg {
const CpuKernel MatMul{prepareMatMul, runMatMul, 2, 3};
} // namespace kernels::Linalg

} // namespace mpc::runtime::cpu
