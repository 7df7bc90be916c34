//===- ir/ops/Attention.cpp - attention's reference kernels and gradient --===//
//
// The float64 reference: per leading index, the [T, S] probabilities in
// full (the reference is for checking, not speed):
//   P = softmax(q k^T * scale + mask),  D = P * M (M: dropout's mask and
//   scale, or 1),  y = D v,
//   dv = D^T dy,  dP = (dy v^T) * M,  dS = P * (dP - rowsum(dP * P)),
//   dq = dS k * scale,  dk = dS^T q * scale,
// where rowsum(dP * P) = dy . y.
// The gradient rule asks for all three in one attention_grad {wrt: qkv}
// (packed as ops/Attention.h lays out) and slices them apart.
// The schemas are in ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Attention.h"
#include "ops/DropoutMask.h"
#include "support/Philox.h"

#include <cmath>
#include <limits>

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// Sizes of one attention: `batch` leading indices of [T, d], [S, d], [S, e].
struct Dims {
  int64_t batch = 1, T = 0, S = 0, d = 0, e = 0;
  explicit Dims(RefOps o) {
    const Shape &q = o[0]->shape, &v = o[2]->shape;
    size_t r = q.size();
    for (size_t a = 0; a + 2 < r; ++a) batch *= q[a];
    T = q[r - 2], d = q[r - 1], S = v[r - 2], e = v[r - 1];
  }
};

/// P for leading index b: [T, S], row-major.
std::vector<double> probabilities(RefOps o, const Dims &n, int64_t b, double scale, bool causal) {
  const double *q = o[0]->data.data() + b * n.T * n.d;
  const double *k = o[1]->data.data() + b * n.S * n.d;
  std::vector<double> p(size_t(n.T * n.S));
  for (int64_t i = 0; i < n.T; ++i) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n.S; ++j) {
      double s = -std::numeric_limits<double>::infinity();
      if (!causal || j <= i) {
        s = 0;
        for (int64_t c = 0; c < n.d; ++c) s += q[i * n.d + c] * k[j * n.d + c];
        s *= scale;
      }
      p[size_t(i * n.S + j)] = s;
      m = std::max(m, s);
    }
    double sum = 0;
    for (int64_t j = 0; j < n.S; ++j) {
      double &x = p[size_t(i * n.S + j)];
      x = std::isinf(m) ? 0.0 : std::exp(x - m); // a row with every key masked: zeros
      sum += x;
    }
    for (int64_t j = 0; j < n.S; ++j)
      if (sum > 0) p[size_t(i * n.S + j)] /= sum;
  }
  return p;
}

/// M for leading index b: dropout's factor of each probability (0, or
/// 1 / (1 - p)), drawn as the dropout op draws it over [..., T, S] (the
/// interpreter passes the run's seed and step); empty without dropout.
std::vector<double> dropoutFactors(const AttrMap &a, const Dims &n, int64_t b) {
  const double p = getFloat(a, "dropout_p");
  if (p == 0.0) return {};
  const philox::Key key = philox::dropoutKey(
      uint64_t(a.count("seed") ? getInt(a, "seed") : 0), philox::nameHash(getString(a, "key")));
  const uint64_t step = uint64_t(a.count("step") ? getInt(a, "step") : 1);
  const uint32_t threshold = philox::dropThreshold(p);
  const ops::MaskPart part = ops::maskPartOf(a);
  std::vector<double> m(size_t(n.T * n.S));
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = philox::dropoutKeep(key, step, part.index(uint64_t(b * n.T * n.S) + i), threshold)
               ? 1.0 / (1.0 - p)
               : 0.0;
  return m;
}

/// x * m elementwise, or x when m is empty.
std::vector<double> times(std::vector<double> x, const std::vector<double> &m) {
  for (size_t i = 0; i < m.size(); ++i) x[i] *= m[i];
  return x;
}

void refAttention(RefOps o, const AttrMap &a, RefTensor &out) {
  Dims n(o);
  double scale = ops::attentionScale(a, n.d);
  bool causal = getBool(a, "causal");
  for (int64_t b = 0; b < n.batch; ++b) {
    std::vector<double> p = times(probabilities(o, n, b, scale, causal), dropoutFactors(a, n, b));
    const double *v = o[2]->data.data() + b * n.S * n.e;
    double *y = out.data.data() + b * n.T * n.e;
    for (int64_t i = 0; i < n.T; ++i)
      for (int64_t c = 0; c < n.e; ++c) {
        double s = 0;
        for (int64_t j = 0; j < n.S; ++j) s += p[size_t(i * n.S + j)] * v[j * n.e + c];
        y[i * n.e + c] = s;
      }
  }
}

/// dq, dk or dv of leading index b into `out` (row-major [T, d], [S, d]
/// or [S, e]).
void gradOf(RefOps o, const Dims &n, int64_t b, const std::vector<double> &p,
            const std::vector<double> &m, double scale, ops::AttentionWrt wrt, double *out) {
  const double *q = o[0]->data.data() + b * n.T * n.d;
  const double *k = o[1]->data.data() + b * n.S * n.d;
  const double *v = o[2]->data.data() + b * n.S * n.e;
  const double *dy = o[3]->data.data() + b * n.T * n.e;
  if (wrt == ops::AttentionWrt::V) {
    const std::vector<double> dropped = times(p, m);
    for (int64_t j = 0; j < n.S; ++j)
      for (int64_t c = 0; c < n.e; ++c) {
        double s = 0;
        for (int64_t i = 0; i < n.T; ++i) s += dropped[size_t(i * n.S + j)] * dy[i * n.e + c];
        out[j * n.e + c] = s;
      }
    return;
  }
  // dS = P * (dP - rowsum(dP * P)), dP = (dy v^T) * M.
  std::vector<double> ds(size_t(n.T * n.S));
  for (int64_t i = 0; i < n.T; ++i) {
    double row = 0;
    for (int64_t j = 0; j < n.S; ++j) {
      double dp = 0;
      for (int64_t c = 0; c < n.e; ++c) dp += dy[i * n.e + c] * v[j * n.e + c];
      if (!m.empty()) dp *= m[size_t(i * n.S + j)];
      ds[size_t(i * n.S + j)] = dp;
      row += dp * p[size_t(i * n.S + j)];
    }
    for (int64_t j = 0; j < n.S; ++j)
      ds[size_t(i * n.S + j)] = p[size_t(i * n.S + j)] * (ds[size_t(i * n.S + j)] - row);
  }
  // dq = dS k * scale over keys j; dk = dS^T q * scale over queries i.
  const bool wrtQ = wrt == ops::AttentionWrt::Q;
  const int64_t rows = wrtQ ? n.T : n.S, over = wrtQ ? n.S : n.T;
  const double *other = wrtQ ? k : q;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n.d; ++c) {
      double s = 0;
      for (int64_t x = 0; x < over; ++x)
        s += ds[size_t(wrtQ ? r * n.S + x : x * n.S + r)] * other[x * n.d + c];
      out[r * n.d + c] = s * scale;
    }
}

void refAttentionGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  Dims n(o);
  double scale = ops::attentionScale(a, n.d);
  bool causal = getBool(a, "causal");
  const ops::AttentionWrt wrt = ops::attentionWrt(a);
  const ops::PackedAttentionGrad packed = ops::packedAttentionGrad(n.T, n.S, n.d, n.e);
  for (int64_t b = 0; b < n.batch; ++b) {
    std::vector<double> p = probabilities(o, n, b, scale, causal);
    std::vector<double> m = dropoutFactors(a, n, b);
    if (wrt != ops::AttentionWrt::QKV) {
      const int64_t size = wrt == ops::AttentionWrt::Q   ? n.T * n.d
                           : wrt == ops::AttentionWrt::K ? n.S * n.d
                                                         : n.S * n.e;
      gradOf(o, n, b, p, m, scale, wrt, out.data.data() + b * size);
      continue;
    }
    double *row = out.data.data() + b * packed.size;
    gradOf(o, n, b, p, m, scale, ops::AttentionWrt::Q, row + packed.dq);
    gradOf(o, n, b, p, m, scale, ops::AttentionWrt::K, row + packed.dk);
    gradOf(o, n, b, p, m, scale, ops::AttentionWrt::V, row + packed.dv);
  }
}

/// One attention_grad for all three (wrt qkv), sliced apart and reshaped
/// to q's, k's and v's shapes.
std::vector<Node *> gradAttention(Builder &b, const Node &n, Node *dy) {
  AttrMap attrs = n.attrs;
  attrs["wrt"] = std::string("qkv");
  if (n.info().drawsMask(n.attrs)) attrs["key"] = dropoutKeyName(n); // the forward's mask
  Node *packed = b.create(OpKind::AttentionGrad, {n.inputs[0], n.inputs[1], n.inputs[2], dy},
                          attrs, "dqkv");
  const Shape &q = n.inputs[0]->type.shape, &k = n.inputs[1]->type.shape,
              &v = n.inputs[2]->type.shape;
  const size_t r = q.size();
  const ops::PackedAttentionGrad at = ops::packedAttentionGrad(q[r - 2], k[r - 2], q[r - 1], v[r - 1]);
  const int64_t ends[] = {at.dk, at.dv, at.size};
  const char *names[] = {"dq", "dk", "dv"};
  std::vector<Node *> out;
  int64_t start = 0;
  for (size_t i = 0; i < 3; ++i) {
    Node *part = b.slice(packed, -1, start, ends[i]);
    out.push_back(b.create(OpKind::Reshape, {part}, {{"shape", n.inputs[i]->type.shape}},
                           names[i]));
    start = ends[i];
  }
  return out;
}

} // namespace

void addAttentionRules(RuleTable &t) {
  t[size_t(OpKind::Attention)] = {gradAttention, refAttention};
  t[size_t(OpKind::AttentionGrad)] = {nullptr, refAttentionGrad};
}

} // namespace mpc::ir
