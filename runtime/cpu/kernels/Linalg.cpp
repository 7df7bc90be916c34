//===- runtime/cpu/kernels/Linalg.cpp - matmul through cblas_sgemm ------===//
//
// op(a) x op(b) for f32 buffers of rank >= 2 (leading axes are a batch,
// broadcast NumPy style), with the transposes passed to BLAS rather than
// materialised; tiny products run as plain loops (see kSmallProduct).
// OpenBLAS runs with one thread (set when a CPU device loads), so the
// blocking and summation order depend on the shapes only and results are
// bit-identical run after run.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

#include <algorithm>
#include <cblas.h>
#include <cstring>

namespace mpc::runtime::cpu {

namespace {

/// Element offsets, one per entry of the result's batch axes, of each
/// operand's matrix, under NumPy broadcasting of the batch axes.
std::vector<int64_t> batchOffsets(const std::vector<int64_t> &batch,
                                  const std::vector<int64_t> &outBatch, int64_t matrix) {
  std::vector<int64_t> strides = broadcastStrides(batch, outBatch);
  int64_t count = 1;
  for (int64_t d : outBatch) count *= d;
  std::vector<int64_t> offsets(size_t(count), 0);
  std::vector<int64_t> idx(outBatch.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * strides[i];
    offsets[size_t(e)] = off * matrix;
    for (size_t i = idx.size(); i-- > 0;) { // odometer
      if (++idx[i] < outBatch[i]) break;
      idx[i] = 0;
    }
  }
  return offsets;
}

// ints: m, n, k, lda, ldb, transA, transB; strides: per batch entry, the
// element offsets of a's and b's matrices (one entry for rank-2 products).
// A rank-2 b under a batched, untransposed a is one product with a seen as
// [batch * m, k]: m absorbs the batch.
void prepareMatMul(KernelInstance &k) {
  const TensorArg &a = k.in[0], &b = k.in[1];
  bool ta = attrBool(k.attrMap(), "transpose_a"),
       tb = attrBool(k.attrMap(), "transpose_b");
  const size_t ra = size_t(a.rank()), rb = size_t(b.rank());
  const int64_t a0 = a.shape[ra - 2], a1 = a.shape[ra - 1];
  const int64_t b0 = b.shape[rb - 2], b1 = b.shape[rb - 1];
  int64_t m = ta ? a1 : a0, ka = ta ? a0 : a1;
  int64_t n = tb ? b0 : b1;
  std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> batchB(b.shape.begin(), b.shape.end() - 2);
  std::vector<int64_t> batchO(k.out.shape.begin(), k.out.shape.end() - 2);
  int64_t batch = 1;
  for (int64_t d : batchO) batch *= d;
  if (rb == 2 && !ta && batchA == batchO) {
    m *= batch; // one product: a's rows run on through its batch
    k.strides = {{0}, {0}};
  } else {
    k.strides = {batchOffsets(batchA, batchO, a0 * a1), batchOffsets(batchB, batchO, b0 * b1)};
  }
  const int64_t kMax = int64_t(1) << 31;
  if (m >= kMax || n >= kMax || ka >= kMax) throw RuleError("matmul dimensions too large for BLAS");
  k.ints = {m, n, ka, std::max<int64_t>(1, a1), std::max<int64_t>(1, b1), ta, tb};
}

/// Products of at most this many multiply-adds skip BLAS: for the tiny
/// matrices of small models, sgemm's packing and dispatch cost more than the
/// arithmetic (the seed model's matmuls are 200 to 400 of them).
constexpr int64_t kSmallProduct = 8192;

/// op(a) op(b) (+= into `o`, which holds c or zeros), each element summed
/// over k in order. Blocks of 4 x 4 results are accumulated in registers:
/// accumulating into `o` itself made every multiply-add wait for the store
/// of the one before (the compiler cannot prove `o` does not alias a or b),
/// which was most of the seed model's step. The order of the sums is the
/// same either way, so the results are too.
template <bool TA, bool TB>
void smallMatMul(const float *a, const float *b, float *o, int64_t m, int64_t n, int64_t kk,
                 int64_t lda, int64_t ldb) {
  auto at = [&](int64_t i, int64_t p) { return TA ? a[p * lda + i] : a[i * lda + p]; };
  auto bt = [&](int64_t p, int64_t j) { return TB ? b[j * ldb + p] : b[p * ldb + j]; };
  constexpr int64_t R = 4, C = 4;
  for (int64_t i0 = 0; i0 < m; i0 += R) {
    const int64_t rows = std::min(R, m - i0);
    for (int64_t j0 = 0; j0 < n; j0 += C) {
      const int64_t cols = std::min(C, n - j0);
      if (rows == R && cols == C) {
        float acc[R][C];
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) acc[r][c] = o[(i0 + r) * n + j0 + c];
        for (int64_t p = 0; p < kk; ++p) {
          float av[R], bv[C];
          for (int64_t r = 0; r < R; ++r) av[r] = at(i0 + r, p);
          for (int64_t c = 0; c < C; ++c) bv[c] = bt(p, j0 + c);
          for (int64_t r = 0; r < R; ++r)
            for (int64_t c = 0; c < C; ++c) acc[r][c] += av[r] * bv[c];
        }
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) o[(i0 + r) * n + j0 + c] = acc[r][c];
        continue;
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          float acc = o[(i0 + r) * n + j0 + c];
          for (int64_t p = 0; p < kk; ++p) acc += at(i0 + r, p) * bt(p, j0 + c);
          o[(i0 + r) * n + j0 + c] = acc;
        }
    }
  }
}

void smallMatMul(const KernelInstance &k, const float *a, const float *b, float *o, int64_t m,
                 int64_t n, int64_t kk) {
  const int64_t lda = k.ints[3], ldb = k.ints[4];
  if (k.ints[5])
    k.ints[6] ? smallMatMul<true, true>(a, b, o, m, n, kk, lda, ldb)
              : smallMatMul<true, false>(a, b, o, m, n, kk, lda, ldb);
  else
    k.ints[6] ? smallMatMul<false, true>(a, b, o, m, n, kk, lda, ldb)
              : smallMatMul<false, false>(a, b, o, m, n, kk, lda, ldb);
}

/// With an accumulator c the result is op(a) op(b) + c: sgemm with beta = 1
/// on c's values, in place when the plan gives the result c's buffer (the
/// accumulation of a micro-batch's weight gradient), after a copy otherwise.
/// Batched products run one sgemm per batch entry, in order.
void runMatMul(const KernelInstance &k) {
  const int64_t m = k.ints[0], n = k.ints[1], kk = k.ints[2];
  const size_t batch = k.strides[0].size();
  const int64_t total = m * n * int64_t(batch);
  if (total == 0) return;
  const bool accumulate = k.in.size() == 3;
  if (accumulate && k.in[2].data != k.out.data)
    std::memcpy(k.out.data, k.in[2].data, size_t(total) * 4);
  if (kk == 0) {
    if (!accumulate) std::memset(k.out.data, 0, size_t(total) * 4);
    return;
  }
  const bool small = m * n * kk <= kSmallProduct;
  if (small && !accumulate) std::memset(k.out.data, 0, size_t(total) * 4);
  for (size_t e = 0; e < batch; ++e) {
    const float *a = k.in[0].f() + k.strides[0][e], *b = k.in[1].f() + k.strides[1][e];
    float *o = k.out.f() + int64_t(e) * m * n;
    if (small) {
      smallMatMul(k, a, b, o, m, n, kk);
      continue;
    }
    cblas_sgemm(CblasRowMajor, k.ints[5] ? CblasTrans : CblasNoTrans,
                k.ints[6] ? CblasTrans : CblasNoTrans, int(m), int(n), int(kk), 1.0f, a,
                int(k.ints[3]), b, int(k.ints[4]), accumulate ? 1.0f : 0.0f, o,
                int(std::max<int64_t>(1, n)));
  }
}

} // namespace

namespace kernels::Linalg {
const CpuKernel MatMul{prepareMatMul, runMatMul};
} // namespace kernels::Linalg

} // namespace mpc::runtime::cpu
