//===- runtime/cpu/kernels/Attention.cpp - attention, attention_grad ------===//
//
// Blocked as FlashAttention is: for each block of 64 queries, the keys in
// blocks of 64; a block's scores are one sgemm, the running maximum and sum
// of each query row are updated (the online softmax), and the block's
// probabilities times its values are one more sgemm into the rows'
// accumulators, rescaled as the maximum moves. Nothing of size [T, S] is
// ever held. attention_grad first recomputes each row's log-sum-exp and
// output (for rowsum(dP * P) = dy . y), then walks the same blocks again:
// P = exp(S - L), and the block's sgemms for the gradients asked (one of
// dq, dk, dv, or all three in one walk: wrt qkv). exp is the vectorised
// one of VectorMath.h, as softmax's. With dropout_p, a block's rows are
// masked as the dropout op masks (VectorMath's dropoutLoop, the same
// Philox indices) after their sum has entered the softmax's denominator.
// Every sum runs in a fixed block order, so results do not depend on
// timing.
// The reference is ir/ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Attention.h"
#include "ops/DropoutMask.h"
#include "runtime/cpu/CpuKernel.h"
#include "runtime/cpu/kernels/VectorMath.h"
#include "support/Philox.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace mpc::runtime::cpu {

namespace {

constexpr int64_t kBlock = 64;
/// Work space: the scores (or P), dP and the dropped P blocks, then a
/// block's accumulators and its rows' max and sum; for the gradient, each
/// row's output, log-sum-exp and dy . y.
constexpr int64_t kWorkBlocks = 3;

/// ints: batch, T, S, d, e, causal, wrt (ops::AttentionWrt), then for
/// dropout: dropping (0 or 1), key words 0 and 1, threshold, offset, parts,
/// part, inner; scalar: scale; reals: {1 / (1 - dropout_p)}.
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
  const ops::AttentionWrt wrt =
      hasAttr(k.attrMap(), "wrt") ? ops::attentionWrt(k.attrMap()) : ops::AttentionWrt::Q;
  k.ints = {batch, T, S, d, e, attrBool(k.attrMap(), "causal") ? 1 : 0, int64_t(wrt)};
  k.scalar = ops::attentionScale(k.attrMap(), d);
  const double p = attrFloat(k.attrMap(), "dropout_p");
  const philox::Key key =
      philox::dropoutKey(k.seed, philox::nameHash(attrString(k.attrMap(), "key")));
  const ops::MaskPart part = ops::maskPartOf(k.attrMap());
  for (uint64_t x : {uint64_t(p > 0), uint64_t(key.k0), uint64_t(key.k1),
                     uint64_t(philox::dropThreshold(p)), part.offset, part.parts, part.part,
                     part.inner})
    k.ints.push_back(int64_t(x));
  k.reals = {1.0 / (1.0 - p)};
  k.scratchFloats = kWorkBlocks * kBlock * kBlock + kBlock * e + 2 * kBlock + T * e + 2 * T;
}

/// attention's dropout on the probabilities, when dropout_p > 0.
struct Dropout {
  bool on = false;
  philox::Key key{};
  uint32_t threshold = 0;
  ops::MaskPart part;
  uint64_t step = 1;
  float scale = 1;
};

struct Sizes {
  int64_t T, S, d, e;
  bool causal;
  float scale;
  Dropout drop;
};

/// to[c] = from[c] times the mask and scale of probabilities (b, i, j0 + c),
/// c < bk: row i of leading index b, as dropout on [..., T, S] draws them.
void dropRow(const Sizes &n, int64_t b, int64_t i, int64_t j0, int64_t bk, const float *from,
             float *to) {
  const Dropout &dr = n.drop;
  // A row lies inside one run of a tensor-parallel part (runs are whole
  // [T, S] matrices), so its mask indices are consecutive.
  const uint64_t first = dr.part.index(uint64_t((b * n.T + i) * n.S + j0));
  vmath::dropoutLoop(from, to, bk, dr.key.k0, dr.key.k1, dr.step, first, dr.threshold, dr.scale);
}

/// The scores of queries [i0, i0 + bq) against keys [j0, j0 + bk), scaled
/// and masked, into s (bq x bk).
void scores(const float *q, const float *k, const Sizes &n, int64_t i0, int64_t bq, int64_t j0,
            int64_t bk, float *s) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(n.d), n.scale,
              q + i0 * n.d, int(n.d), k + j0 * n.d, int(n.d), 0.0f, s, int(bk));
  if (n.causal)
    for (int64_t r = 0; r < bq; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r - j0 + 1); c < bk; ++c)
        s[r * bk + c] = -std::numeric_limits<float>::infinity();
}

/// The key blocks query block [i0, i0 + bq) sees: all, or under `causal`
/// those starting at or before its last row.
int64_t keyEnd(const Sizes &n, int64_t i0, int64_t bq) {
  return n.causal ? std::min(n.S, i0 + bq) : n.S;
}

/// s[r][c] = exp(s[r][c] - shift[r]) over a bq x bk block, vectorised; a
/// row whose shift is -inf (every key masked) becomes zeros.
void expRows(float *s, const float *shift, int64_t bq, int64_t bk) {
  for (int64_t r = 0; r < bq; ++r) {
    float *row = s + r * bk;
    if (shift[r] == -std::numeric_limits<float>::infinity()) {
      std::fill(row, row + bk, -std::numeric_limits<float>::infinity());
      continue;
    }
    for (int64_t c = 0; c < bk; ++c) row[c] -= shift[r];
  }
  vmath::expLoop(s, s, bq * bk);
}

/// The forward of one leading index: y = softmax(q k^T * scale + mask) v,
/// and, when `lse` is given, each row's log-sum-exp.
void forward(const float *q, const float *k, const float *v, const Sizes &n, int64_t b, float *y,
             float *lse, float *work) {
  float *s = work, *acc = work + kWorkBlocks * kBlock * kBlock, *m = acc + kBlock * n.e,
        *l = m + kBlock;
  float *mx = work + kBlock * kBlock; // the block's new row maxima (dP's space, free here)
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
        float x = m[r];
        for (int64_t c = 0; c < bk; ++c) x = std::max(x, s[r * bk + c]);
        mx[r] = x;
      }
      expRows(s, mx, bq, bk);
      for (int64_t r = 0; r < bq; ++r) {
        if (mx[r] == ninf) continue; // every key so far masked: nothing yet
        const float corr = vmath::fastExp(m[r] - mx[r]); // 0 when m was -inf
        float sum = 0;
        for (int64_t c = 0; c < bk; ++c) sum += s[r * bk + c];
        l[r] = l[r] * corr + sum;
        for (int64_t c = 0; c < n.e; ++c) acc[r * n.e + c] *= corr;
        m[r] = mx[r];
        // Dropped after the denominator has its whole sum, as dropout
        // after softmax drops.
        if (n.drop.on) dropRow(n, b, i0 + r, j0, bk, s + r * bk, s + r * bk);
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
  Sizes n{k.ints[1], k.ints[2], k.ints[3], k.ints[4], k.ints[5] != 0, float(k.scalar), {}};
  Dropout &dr = n.drop;
  dr.on = k.ints[7] != 0;
  dr.key = {uint32_t(k.ints[8]), uint32_t(k.ints[9])};
  dr.threshold = uint32_t(k.ints[10]);
  dr.part = {uint64_t(k.ints[11]), uint64_t(k.ints[12]), uint64_t(k.ints[13]),
             uint64_t(k.ints[14])};
  dr.step = uint64_t(k.step ? *k.step : 1);
  dr.scale = float(k.reals[0]);
  return n;
}

void runAttention(const KernelInstance &k) {
  const Sizes n = sizesOf(k);
  for (int64_t b = 0; b < k.ints[0]; ++b)
    forward(k.in[0].f() + b * n.T * n.d, k.in[1].f() + b * n.S * n.d, k.in[2].f() + b * n.S * n.e,
            n, b, k.out.f() + b * n.T * n.e, nullptr, k.floats);
}

/// Where one leading index's gradients go: null for those not asked for.
struct GradOut {
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

/// The gradients of one leading index, in one walk over the blocks: P
/// again from the recomputed log-sum-exp, D = P * M (dropout's mask and
/// scale, or 1); dv += D^T dy; dS = P * ((dy v^T) * M - dy . y); dq += dS k
/// * scale; dk += dS^T q * scale.
void backward(const float *q, const float *kk, const float *v, const float *dy, const Sizes &n,
              int64_t b, const GradOut &g, float *work) {
  float *s = work, *dp = work + kBlock * kBlock, *dropped = work + 2 * kBlock * kBlock;
  float *y = work + kWorkBlocks * kBlock * kBlock + kBlock * n.e + 2 * kBlock;
  float *lse = y + n.T * n.e, *dot = lse + n.T;
  if (g.dq) std::memset(g.dq, 0, size_t(n.T * n.d) * sizeof(float));
  if (g.dk) std::memset(g.dk, 0, size_t(n.S * n.d) * sizeof(float));
  if (g.dv) std::memset(g.dv, 0, size_t(n.S * n.e) * sizeof(float));
  forward(q, kk, v, n, b, y, lse, work);
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
      expRows(s, lse + i0, bq, bk); // P
      if (g.dv) { // dv[j] += D^T dy
        const float *d = s;
        if (n.drop.on) {
          for (int64_t r = 0; r < bq; ++r) dropRow(n, b, i0 + r, j0, bk, s + r * bk, dropped + r * bk);
          d = dropped;
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(n.e), int(bq), 1.0f, d,
                    int(bk), dy + i0 * n.e, int(n.e), 1.0f, g.dv + j0 * n.e, int(n.e));
      }
      if (!g.dq && !g.dk) continue;
      // dP = (dy v^T) * M; dS = P * (dP - dy . y).
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(bq), int(bk), int(n.e), 1.0f,
                  dy + i0 * n.e, int(n.e), v + j0 * n.e, int(n.e), 0.0f, dp, int(bk));
      if (n.drop.on)
        for (int64_t r = 0; r < bq; ++r) dropRow(n, b, i0 + r, j0, bk, dp + r * bk, dp + r * bk);
      for (int64_t r = 0; r < bq; ++r)
        for (int64_t c = 0; c < bk; ++c)
          dp[r * bk + c] = s[r * bk + c] * (dp[r * bk + c] - dot[i0 + r]);
      if (g.dq) // dq[i] += dS k * scale
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(bq), int(n.d), int(bk), n.scale,
                    dp, int(bk), kk + j0 * n.d, int(n.d), 1.0f, g.dq + i0 * n.d, int(n.d));
      if (g.dk) // dk[j] += dS^T q * scale
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(bk), int(n.d), int(bq), n.scale,
                    dp, int(bk), q + i0 * n.d, int(n.d), 1.0f, g.dk + j0 * n.d, int(n.d));
    }
  }
}

void runAttentionGrad(const KernelInstance &k) {
  const Sizes n = sizesOf(k);
  const auto wrt = ops::AttentionWrt(k.ints[6]);
  const ops::PackedAttentionGrad packed = ops::packedAttentionGrad(n.T, n.S, n.d, n.e);
  for (int64_t b = 0; b < k.ints[0]; ++b) {
    const float *q = k.in[0].f() + b * n.T * n.d, *kk = k.in[1].f() + b * n.S * n.d;
    const float *v = k.in[2].f() + b * n.S * n.e, *dy = k.in[3].f() + b * n.T * n.e;
    GradOut g;
    switch (wrt) {
    case ops::AttentionWrt::Q: g.dq = k.out.f() + b * n.T * n.d; break;
    case ops::AttentionWrt::K: g.dk = k.out.f() + b * n.S * n.d; break;
    case ops::AttentionWrt::V: g.dv = k.out.f() + b * n.S * n.e; break;
    case ops::AttentionWrt::QKV: {
      float *row = k.out.f() + b * packed.size;
      g = {row + packed.dq, row + packed.dk, row + packed.dv};
      break;
    }
    }
    backward(q, kk, v, dy, n, b, g, k.floats);
  }
}

} // namespace

namespace kernels::Attention {
const CpuKernel Attention{prepareAttention, runAttention};
const CpuKernel AttentionGrad{prepareAttention, runAttentionGrad};
} // namespace kernels::Attention

} // namespace mpc::runtime::cpu
