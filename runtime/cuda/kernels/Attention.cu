//===- runtime/cuda/kernels/Attention.cu - attention, attention_grad ------===//
//
// The plain form of the online softmax: one thread per query row walks the
// keys in order, keeping the row's running maximum and sum and rescaling
// its output as the maximum moves, so the [T, S] scores are never stored.
// attention_grad recomputes each row's output and log-sum-exp into scratch,
// then one thread per output row (a query's dq, a key's dk or dv) walks the
// other side in order; wrt qkv runs the three after one recomputation,
// into their places in the packed result (ops/Attention.h). dropout_p
// drops probabilities with the dropout op's mask (support/Philox.h, the
// step read on the device as Random.cu reads it): after their sum has
// entered the softmax's denominator in the forward, on P and on dy v^T in
// the backward. Every sum has a fixed order: results do not depend
// on timing. A tiled tensor-core kernel is the next step; this one is the
// reference's arithmetic in f32 (ir/ops/Attention.cpp).
//
//===----------------------------------------------------------------------===//
#include "ops/Attention.h"
#include "ops/DropoutMask.h"
#include "runtime/cuda/kernels/Common.cuh"
#include "runtime/cuda/kernels/Prepare.h"
#include "support/Philox.h"

#include <cmath>

namespace mpc::runtime::cuda {

using namespace detail;

namespace {

/// attention's dropout on the probabilities.
struct Dropout {
  int on;
  philox::Key key;
  uint32_t threshold;
  ops::MaskPart part;
  float scale;
  const DataError *stepRecord; ///< holds the running step (launchBeginStep)
};

struct Sizes {
  int64_t batch, T, S, d, e;
  int causal;
  float scale;
  Dropout drop;
};

/// M of probability (b, i, j): 1 without dropout, else 0 or 1 / (1 - p).
__device__ float keep(const Sizes &n, int64_t b, int64_t i, int64_t j) {
  const Dropout &dr = n.drop;
  if (!dr.on) return 1.f;
  const uint64_t step = dr.stepRecord ? uint64_t(dr.stepRecord->step) : 1;
  return philox::dropoutKeep(dr.key, step, dr.part.index(uint64_t((b * n.T + i) * n.S + j)),
                             dr.threshold)
             ? dr.scale
             : 0.f;
}

__device__ float score(const float *q, const float *k, const Sizes &n, int64_t b, int64_t i,
                       int64_t j) {
  const float *qi = q + (b * n.T + i) * n.d, *kj = k + (b * n.S + j) * n.d;
  float s = 0.f;
  for (int64_t c = 0; c < n.d; ++c) s += qi[c] * kj[c];
  return s * n.scale;
}

__device__ int64_t keysOf(const Sizes &n, int64_t i) {
  return n.causal ? (i + 1 < n.S ? i + 1 : n.S) : n.S;
}

__global__ void forwardKernel(const float *q, const float *k, const float *v, float *y, float *lse,
                              Sizes n) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < n.batch * n.T;
       row += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = row / n.T, i = row % n.T;
    float *yi = y + row * n.e;
    for (int64_t c = 0; c < n.e; ++c) yi[c] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j < keysOf(n, i); ++j) {
      const float s = score(q, k, n, b, i, j);
      const float mx = fmaxf(m, s);
      const float corr = expf(m - mx), p = expf(s - mx);
      l = l * corr + p;
      const float pd = p * keep(n, b, i, j); // dropped after entering the sum
      const float *vj = v + (b * n.S + j) * n.e;
      for (int64_t c = 0; c < n.e; ++c) yi[c] = yi[c] * corr + pd * vj[c];
      m = mx;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    for (int64_t c = 0; c < n.e; ++c) yi[c] *= inv;
    if (lse) lse[row] = l > 0.f ? m + logf(l) : -INFINITY;
  }
}

__device__ float prob(const float *q, const float *k, const float *lse, const Sizes &n, int64_t b,
                      int64_t i, int64_t j) {
  const float L = lse[b * n.T + i];
  return isinf(L) ? 0.f : expf(score(q, k, n, b, i, j) - L);
}

/// dS[i][j] = P (M (dy_i . v_j) - dy_i . y_i).
__device__ float dscore(const float *q, const float *k, const float *v, const float *dy,
                        const float *lse, const float *dot, const Sizes &n, int64_t b, int64_t i,
                        int64_t j) {
  const float *dyi = dy + (b * n.T + i) * n.e, *vj = v + (b * n.S + j) * n.e;
  float dp = 0.f;
  for (int64_t c = 0; c < n.e; ++c) dp += dyi[c] * vj[c];
  return prob(q, k, lse, n, b, i, j) * (dp * keep(n, b, i, j) - dot[b * n.T + i]);
}

__global__ void dotKernel(const float *dy, const float *y, float *dot, Sizes n) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < n.batch * n.T;
       row += int64_t(gridDim.x) * blockDim.x) {
    float t = 0.f;
    for (int64_t c = 0; c < n.e; ++c) t += dy[row * n.e + c] * y[row * n.e + c];
    dot[row] = t;
  }
}

/// Where a gradient goes: leading index b's rows start at b * stride +
/// offset (stride: the gradient's own size, or the packed row of wrt qkv).
struct Place {
  int64_t stride, offset;
};

__global__ void gradQKernel(const float *q, const float *k, const float *v, const float *dy,
                            const float *lse, const float *dot, float *dq, Sizes n, Place at) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < n.batch * n.T;
       row += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = row / n.T, i = row % n.T;
    float *out = dq + b * at.stride + at.offset + i * n.d;
    for (int64_t c = 0; c < n.d; ++c) out[c] = 0.f;
    for (int64_t j = 0; j < keysOf(n, i); ++j) {
      const float ds = dscore(q, k, v, dy, lse, dot, n, b, i, j) * n.scale;
      const float *kj = k + (b * n.S + j) * n.d;
      for (int64_t c = 0; c < n.d; ++c) out[c] += ds * kj[c];
    }
  }
}

/// dk (wrtV false) or dv (wrtV true) of key row j: over the queries that see it.
__global__ void gradKVKernel(const float *q, const float *k, const float *v, const float *dy,
                             const float *lse, const float *dot, float *out, Sizes n, bool wrtV,
                             Place at) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < n.batch * n.S;
       row += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = row / n.S, j = row % n.S;
    const int64_t width = wrtV ? n.e : n.d;
    float *o = out + b * at.stride + at.offset + j * width;
    for (int64_t c = 0; c < width; ++c) o[c] = 0.f;
    for (int64_t i = n.causal ? j : 0; i < n.T; ++i) {
      if (wrtV) {
        const float p = prob(q, k, lse, n, b, i, j) * keep(n, b, i, j);
        const float *dyi = dy + (b * n.T + i) * n.e;
        for (int64_t c = 0; c < n.e; ++c) o[c] += p * dyi[c];
      } else {
        const float ds = dscore(q, k, v, dy, lse, dot, n, b, i, j) * n.scale;
        const float *qi = q + (b * n.T + i) * n.d;
        for (int64_t c = 0; c < n.d; ++c) o[c] += ds * qi[c];
      }
    }
  }
}

Sizes sizesOf(const KernelOperands &k) {
  const plan::Buffer &q = *k.inputs[0], &v = *k.inputs[2];
  const size_t r = q.shape.size();
  Sizes n{1, q.shape[r - 2], v.shape[r - 2], q.shape[r - 1], v.shape[r - 1],
          attrBool(k.instr->attrs, "causal") ? 1 : 0, 0.f, {}};
  for (size_t a = 0; a + 2 < r; ++a) n.batch *= q.shape[a];
  n.scale = float(ops::attentionScale(k.instr->attrs, n.d));
  const double p = attrFloat(k.instr->attrs, "dropout_p");
  n.drop = {p > 0 ? 1 : 0,
            philox::dropoutKey(k.ctx.seed, philox::nameHash(attrString(k.instr->attrs, "key"))),
            philox::dropThreshold(p),
            ops::maskPartOf(k.instr->attrs),
            float(1.0 / (1.0 - p)),
            k.ctx.dataError.record};
  return n;
}

Launch prepareAttention(const KernelOperands &k) {
  Sizes n = sizesOf(k);
  const float *q = cf(k.inPtr[0]), *kk = cf(k.inPtr[1]), *v = cf(k.inPtr[2]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (n.batch * n.T > 0) forwardKernel<<<gridFor(n.batch * n.T), kThreads, 0, s>>>(q, kk, v, y, nullptr, n);
  };
}

/// The recomputed output, each row's log-sum-exp and dy . y.
int64_t gradScratch(const KernelOperands &k) {
  Sizes n = sizesOf(k);
  return n.batch * n.T * (n.e + 2);
}

Launch prepareAttentionGrad(const KernelOperands &k) {
  Sizes n = sizesOf(k);
  const float *q = cf(k.inPtr[0]), *kk = cf(k.inPtr[1]), *v = cf(k.inPtr[2]),
              *dy = cf(k.inPtr[3]);
  float *out = f(k.outPtr);
  float *y = k.ctx.scratch, *lse = y + n.batch * n.T * n.e, *dot = lse + n.batch * n.T;
  const ops::AttentionWrt wrt = ops::attentionWrt(k.instr->attrs);
  const bool all = wrt == ops::AttentionWrt::QKV;
  const ops::PackedAttentionGrad packed = ops::packedAttentionGrad(n.T, n.S, n.d, n.e);
  // Each gradient's place: its own tensor, or its part of the packed row.
  const Place dq{all ? packed.size : n.T * n.d, all ? packed.dq : 0};
  const Place dk{all ? packed.size : n.S * n.d, all ? packed.dk : 0};
  const Place dv{all ? packed.size : n.S * n.e, all ? packed.dv : 0};
  const bool wantQ = all || wrt == ops::AttentionWrt::Q, wantK = all || wrt == ops::AttentionWrt::K,
             wantV = all || wrt == ops::AttentionWrt::V;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    const int64_t rows = n.batch * n.T, keys = n.batch * n.S;
    if (rows > 0) {
      forwardKernel<<<gridFor(rows), kThreads, 0, s>>>(q, kk, v, y, lse, n);
      dotKernel<<<gridFor(rows), kThreads, 0, s>>>(dy, y, dot, n);
    }
    if (wantQ && rows > 0)
      gradQKernel<<<gridFor(rows), kThreads, 0, s>>>(q, kk, v, dy, lse, dot, out, n, dq);
    if (wantK && keys > 0)
      gradKVKernel<<<gridFor(keys), kThreads, 0, s>>>(q, kk, v, dy, lse, dot, out, n, false, dk);
    if (wantV && keys > 0)
      gradKVKernel<<<gridFor(keys), kThreads, 0, s>>>(q, kk, v, dy, lse, dot, out, n, true, dv);
  };
}

} // namespace

namespace kernels::Attention {
const CudaKernel Attention{nullptr, prepareAttention};
const CudaKernel AttentionGrad{gradScratch, prepareAttentionGrad};
} // namespace kernels::Attention

} // namespace mpc::runtime::cuda
