//===- runtime/cpu/kernels/Attention.cpp - attention, attention_grad ------===//
//
// Blocked as FlashAttention is: for each block of 64 queries, the keys in
// blocks of 64; a block's scores are one sgemm, the running maximum and sum
// of each query row are updated (the online softmax), and the block's
// probabilities times its values are one more sgemm into the rows'
// accumulators, rescaled as the maximum moves. Nothing of size [T, S] is
// ever held. attention_grad first recomputes each row's log-sum-exp and
// output (for rowsum(dP * P) = dy . y), then walks the same blocks again:
// P = exp(S - L), and for dq, dk or dv the block's sgemms. Every sum runs
// in a fixed block order, so results do not depend on timing.
// The reference is ir/ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Attention.h"
#include "runtime/cpu/CpuKernel.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace mpc::runtime::cpu {

namespace {

constexpr int64_t kBlock = 64;

/// ints: batch, T, S, d, e, causal, wrt (0 q, 1 k, 2 v); scalar: scale.
void prepareAttention(KernelInstance &k) {
  const TensorArg &q = k.in[0], &v = k.in[2];
  const int64_t r = q.rank();
  int64_t batch = 1;
  for (int64_t a = 0; a + 2 < r; ++a) batch *= q.shape[size_t(a)];
  const int64_t T = q.shape[size_t(r - 2)], d = q.shape[size_t(r - 1)];
  const int64_t S = v.shape[size_t(r - 2)], e = v.shape[size_t(r - 1)];
  for (int64_t x : {T, S, d, e, kBlock})
    if (x > int64_t(std::numeric_limits<int>::max()))
      throw RuleError("attention size " + std::to_string(x) + " exceeds BLAS's int range");
  int64_t wrt = 0;
  if (hasAttr(k.attrMap(), "wrt")) {
    const std::string w = attrString(k.attrMap(), "wrt");
    wrt = w == "q" ? 0 : w == "k" ? 1 : 2;
  }
  k.ints = {batch, T, S, d, e, attrBool(k.attrMap(), "causal") ? 1 : 0, wrt};
  k.scalar = ops::attentionScale(k.attrMap(), d);
  // scores and dP blocks, a block's accumulators, its rows' max and sum;
  // for the gradient, each row's output, log-sum-exp and dy . y.
  k.scratchFloats = 2 * kBlock * kBlock + kBlock * e + 2 * kBlock + T * e + 2 * T;
}

struct Sizes {
  int64_t T, S, d, e;
  bool causal;
  float scale;
};

/// The scores of queries [i0, i0 + bq) against keys [j0, j0 + bk), scaled
/// and masked, into s (bq x bk).
void scores(const float *q, const float *k, const Sizes &n, int64_t i0, int64_t bq, int64_t j0,
            int64_t bk, float *s) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(n.d), n.scale,
              q + i0 * n.d, int(n.d), k + j0 * n.d, int(n.d), 0.0f, s, int(bk));
  if (n.causal)
    for (int64_t r = 0; r < bq; ++r)
      for (int64_t c = 0; c < bk; ++c)
        if (j0 + c > i0 + r) s[r * bk + c] = -std::numeric_limits<float>::infinity();
}

/// The key blocks query block [i0, i0 + bq) sees: all, or under `causal`
/// those starting at or before its last row.
int64_t keyEnd(const Sizes &n, int64_t i0, int64_t bq) {
  return n.causal ? std::min(n.S, i0 + bq) : n.S;
}

/// The forward of one leading index: y = softmax(q k^T * scale + mask) v,
/// and, when `lse` is given, each row's log-sum-exp.
void forward(const float *q, const float *k, const float *v, const Sizes &n, float *y, float *lse,
             float *work) {
  float *s = work, *acc = work + 2 * kBlock * kBlock, *m = acc + kBlock * n.e, *l = m + kBlock;
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t i0 = 0; i0 < n.T; i0 += kBlock) {
    const int64_t bq = std::min(kBlock, n.T - i0);
    std::fill(m, m + bq, ninf);
    std::fill(l, l + bq, 0.0f);
    std::fill(acc, acc + bq * n.e, 0.0f);
    for (int64_t j0 = 0; j0 < keyEnd(n, i0, bq); j0 += kBlock) {
      const int64_t bk = std::min(kBlock, n.S - j0);
      scores(q, k, n, i0, bq, j0, bk, s);
      for (int64_t r = 0; r < bq; ++r) {
        float *row = s + r * bk;
        float mx = m[r];
        for (int64_t c = 0; c < bk; ++c) mx = std::max(mx, row[c]);
        if (mx == ninf) { // every key so far masked
          std::fill(row, row + bk, 0.0f);
          continue;
        }
        const float corr = std::exp(m[r] - mx); // 0 when m was -inf
        float sum = 0;
        for (int64_t c = 0; c < bk; ++c) sum += row[c] = std::exp(row[c] - mx);
        l[r] = l[r] * corr + sum;
        for (int64_t c = 0; c < n.e; ++c) acc[r * n.e + c] *= corr;
        m[r] = mx;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(n.e), int(bk), 1.0f, s,
                  int(bk), v + j0 * n.e, int(n.e), 1.0f, acc, int(n.e));
    }
    for (int64_t r = 0; r < bq; ++r) {
      const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
      for (int64_t c = 0; c < n.e; ++c) y[(i0 + r) * n.e + c] = acc[r * n.e + c] * inv;
      if (lse) lse[i0 + r] = l[r] > 0 ? m[r] + std::log(l[r]) : ninf;
    }
  }
}

Sizes sizesOf(const KernelInstance &k) {
  return {k.ints[1], k.ints[2], k.ints[3], k.ints[4], k.ints[5] != 0, float(k.scalar)};
}

void runAttention(const KernelInstance &k) {
  const Sizes n = sizesOf(k);
  for (int64_t b = 0; b < k.ints[0]; ++b)
    forward(k.in[0].f() + b * n.T * n.d, k.in[1].f() + b * n.S * n.d, k.in[2].f() + b * n.S * n.e,
            n, k.out.f() + b * n.T * n.e, nullptr, k.floats);
}

void runAttentionGrad(const KernelInstance &k) {
  const Sizes n = sizesOf(k);
  const int64_t wrt = k.ints[6];
  float *work = k.floats;
  float *s = work, *dp = work + kBlock * kBlock;
  float *y = work + 2 * kBlock * kBlock + kBlock * n.e + 2 * kBlock;
  float *lse = y + n.T * n.e, *dot = lse + n.T;
  const int64_t outRows = wrt == 0 ? n.T : n.S, outCols = wrt == 2 ? n.e : n.d;
  for (int64_t b = 0; b < k.ints[0]; ++b) {
    const float *q = k.in[0].f() + b * n.T * n.d, *kk = k.in[1].f() + b * n.S * n.d;
    const float *v = k.in[2].f() + b * n.S * n.e, *dy = k.in[3].f() + b * n.T * n.e;
    float *out = k.out.f() + b * outRows * outCols;
    std::memset(out, 0, size_t(outRows * outCols) * sizeof(float));
    forward(q, kk, v, n, y, lse, work);
    for (int64_t i = 0; i < n.T; ++i) {
      float t = 0;
      for (int64_t c = 0; c < n.e; ++c) t += dy[i * n.e + c] * y[i * n.e + c];
      dot[i] = t;
    }
    for (int64_t i0 = 0; i0 < n.T; i0 += kBlock) {
      const int64_t bq = std::min(kBlock, n.T - i0);
      for (int64_t j0 = 0; j0 < keyEnd(n, i0, bq); j0 += kBlock) {
        const int64_t bk = std::min(kBlock, n.S - j0);
        scores(q, kk, n, i0, bq, j0, bk, s);
        for (int64_t r = 0; r < bq; ++r)
          for (int64_t c = 0; c < bk; ++c) {
            float &x = s[r * bk + c];
            x = std::isinf(lse[i0 + r]) ? 0.0f : std::exp(x - lse[i0 + r]); // P
          }
        if (wrt == 2) { // dv[j] += P^T dy
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(n.e), int(bq), 1.0f, s,
                      int(bk), dy + i0 * n.e, int(n.e), 1.0f, out + j0 * n.e, int(n.e));
          continue;
        }
        // dP = dy v^T; dS = P * (dP - dy . y).
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(n.e), 1.0f,
                    dy + i0 * n.e, int(n.e), v + j0 * n.e, int(n.e), 0.0f, dp, int(bk));
        for (int64_t r = 0; r < bq; ++r)
          for (int64_t c = 0; c < bk; ++c) dp[r * bk + c] = s[r * bk + c] * (dp[r * bk + c] - dot[i0 + r]);
        if (wrt == 0) // dq[i] += dS k * scale
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(n.d), int(bk), n.scale,
                      dp, int(bk), kk + j0 * n.d, int(n.d), 1.0f, out + i0 * n.d, int(n.d));
        else // dk[j] += dS^T q * scale
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(n.d), int(bq), n.scale,
                      dp, int(bk), q + i0 * n.d, int(n.d), 1.0f, out + j0 * n.d, int(n.d));
      }
    }
  }
}

} // namespace

namespace kernels::Attention {
const CpuKernel Attention{prepareAttention, runAttention};
const CpuKernel AttentionGrad{prepareAttention, runAttentionGrad};
} // namespace kernels::Attention

} // namespace mpc::runtime::cpu
