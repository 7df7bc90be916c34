//===- ir/ops/Attention.cpp - attention's reference kernels and gradient --===//
//
// The float64 reference: per leading index, the [T, S] probabilities in
// full (the reference is for checking, not speed):
//   P = softmax(q k^T * scale + mask),  y = P v,
//   dv = P^T dy,  dP = dy v^T,  dS = P * (dP - rowsum(dP * P)),
//   dq = dS k * scale,  dk = dS^T q * scale.
// The schemas are in ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Attention.h"

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

void refAttention(RefOps o, const AttrMap &a, RefTensor &out) {
  Dims n(o);
  double scale = ops::attentionScale(a, n.d);
  bool causal = getBool(a, "causal");
  for (int64_t b = 0; b < n.batch; ++b) {
    std::vector<double> p = probabilities(o, n, b, scale, causal);
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

void refAttentionGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  Dims n(o);
  double scale = ops::attentionScale(a, n.d);
  bool causal = getBool(a, "causal");
  const std::string wrt = getString(a, "wrt");
  for (int64_t b = 0; b < n.batch; ++b) {
    std::vector<double> p = probabilities(o, n, b, scale, causal);
    const double *q = o[0]->data.data() + b * n.T * n.d;
    const double *k = o[1]->data.data() + b * n.S * n.d;
    const double *v = o[2]->data.data() + b * n.S * n.e;
    const double *dy = o[3]->data.data() + b * n.T * n.e;
    if (wrt == "v") {
      double *dv = out.data.data() + b * n.S * n.e;
      for (int64_t j = 0; j < n.S; ++j)
        for (int64_t c = 0; c < n.e; ++c) {
          double s = 0;
          for (int64_t i = 0; i < n.T; ++i) s += p[size_t(i * n.S + j)] * dy[i * n.e + c];
          dv[j * n.e + c] = s;
        }
      continue;
    }
    // dS = P * (dP - rowsum(dP * P)), dP = dy v^T.
    std::vector<double> ds(size_t(n.T * n.S));
    for (int64_t i = 0; i < n.T; ++i) {
      double row = 0;
      for (int64_t j = 0; j < n.S; ++j) {
        double dp = 0;
        for (int64_t c = 0; c < n.e; ++c) dp += dy[i * n.e + c] * v[j * n.e + c];
        ds[size_t(i * n.S + j)] = dp;
        row += dp * p[size_t(i * n.S + j)];
      }
      for (int64_t j = 0; j < n.S; ++j)
        ds[size_t(i * n.S + j)] = p[size_t(i * n.S + j)] * (ds[size_t(i * n.S + j)] - row);
    }
    if (wrt == "q") {
      double *dq = out.data.data() + b * n.T * n.d;
      for (int64_t i = 0; i < n.T; ++i)
        for (int64_t c = 0; c < n.d; ++c) {
          double s = 0;
          for (int64_t j = 0; j < n.S; ++j) s += ds[size_t(i * n.S + j)] * k[j * n.d + c];
          dq[i * n.d + c] = s * scale;
        }
    } else {
      double *dk = out.data.data() + b * n.S * n.d;
      for (int64_t j = 0; j < n.S; ++j)
        for (int64_t c = 0; c < n.d; ++c) {
          double s = 0;
          for (int64_t i = 0; i < n.T; ++i) s += ds[size_t(i * n.S + j)] * q[i * n.d + c];
          dk[j * n.d + c] = s * scale;
        }
    }
  }
}

std::vector<Node *> gradAttention(Builder &b, const Node &n, Node *dy) {
  std::vector<Node *> out;
  for (const char *wrt : {"q", "k", "v"}) {
    AttrMap attrs = n.attrs;
    attrs["wrt"] = std::string(wrt);
    out.push_back(b.create(OpKind::AttentionGrad, {n.inputs[0], n.inputs[1], n.inputs[2], dy},
                           attrs, std::string("d") + wrt));
  }
  return out;
}

} // namespace

void addAttentionRules(RuleTable &t) {
  t[size_t(OpKind::Attention)] = {gradAttention, refAttention};
  t[size_t(OpKind::AttentionGrad)] = {nullptr, refAttentionGrad};
}

} // namespace mpc::ir
