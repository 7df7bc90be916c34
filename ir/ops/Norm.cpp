//===- ir/ops/Norm.cpp - layer_norm and its backward ops -----------------===//
//
// layer_norm normalises each row (the last axis) of x to zero mean and unit
// biased variance, then scales by gamma and shifts by beta, as
// torch.nn.functional.layer_norm over the last dimension. Its gradient uses
// two backward ops, layer_norm_grad (dx) and layer_norm_gamma_grad (dgamma);
// dbeta is a plain sum. The backward ops recompute the row statistics from x
// rather than saving them, so the forward op has one result.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

/// Checks x f32 of rank >= 1 and each of `params` f32[D], D = x.shape[-1].
void checkRowsAndParams(const char *op, const TensorType &x,
                        std::initializer_list<std::pair<const char *, const TensorType *>> params) {
  requireDType(x, DType::F32, op, "x");
  if (x.rank() < 1) throw RuleError(std::string(op) + " needs x of rank >= 1, got " + x.str());
  for (auto [name, t] : params) {
    requireDType(*t, DType::F32, op, name);
    if (t->rank() != 1 || t->shape[0] != x.shape.back())
      throw RuleError(std::string(op) + " operand '" + name + "' must be f32[" +
                      std::to_string(x.shape.back()) + "] (the last axis of x): shape mismatch: " +
                      pairStr(x, *t));
  }
}

/// Checks eps >= 0 (as torch, 0 is allowed; a constant row then gives NaN).
void checkEps(const char *op, const AttrMap &attrs) {
  double eps = getFloat(attrs, "eps");
  if (!(eps >= 0))
    throw RuleError(std::string(op) + " eps must be >= 0, got " + attrValueStr(eps));
}

/// Mean and 1/sqrt(var + eps) (biased variance) of the D values at `x`.
struct RowStats {
  double mean = 0, rstd = 0;
};
RowStats rowStats(const double *x, int64_t d, double eps) {
  RowStats s;
  for (int64_t j = 0; j < d; ++j) s.mean += x[j];
  s.mean /= double(d);
  double var = 0;
  for (int64_t j = 0; j < d; ++j) var += (x[j] - s.mean) * (x[j] - s.mean);
  var /= double(d);
  s.rstd = 1.0 / std::sqrt(var + eps);
  return s;
}

/// Calls f(row index, pointer offset) for every row of a [..., D] tensor.
template <typename F> void forEachRow(const RefTensor &x, F f) {
  int64_t d = x.shape.back();
  if (d == 0) return;
  int64_t rows = int64_t(x.data.size()) / d;
  for (int64_t r = 0; r < rows; ++r) f(size_t(r * d), d);
}

AttrSpec epsAttr() {
  return attr("eps", AttrType::Float, 1e-5, "added to the variance before the square root");
}

/// Rows are independent: a batched x keeps its axis 0 as long as that is not
/// the normalised axis; gamma and beta (rank 1) must be shared.
BatchResult batchRows(const BatchQuery &q) {
  if (q.operands[0].rank() < 2)
    throw RuleError("it normalises along axis 0, the batch axis");
  return rowwiseBatchRule(q);
}

} // namespace

void addNormOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::LayerNorm, "layer_norm", "Norm",
                      "(x - mean) / sqrt(var + eps) * gamma + beta over the last axis of x "
                      "(biased variance), gamma and beta of that axis' length",
                      {"x", "gamma", "beta"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm", o[0], {{"gamma", &o[1]}, {"beta", &o[2]}});
      checkEps("layer_norm", a);
      return o[0];
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      Node *x = n.inputs[0], *gamma = n.inputs[1];
      AttrMap eps = {{"eps", getFloat(n.attrs, "eps")}};
      Node *dx = b.create(OpKind::LayerNormGrad, {x, gamma, dy}, eps);
      Node *dgamma = b.create(OpKind::LayerNormGammaGrad, {x, dy}, eps);
      std::vector<int64_t> lead;
      for (int64_t i = 0; i + 1 < x->type.rank(); ++i) lead.push_back(i);
      Node *dbeta = lead.empty() ? dy : b.sum(dy, lead, /*keepdims=*/false);
      return {dx, dgamma, dbeta};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &beta = *o[2];
      double eps = getFloat(a, "eps");
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        for (int64_t j = 0; j < d; ++j) {
          double xhat = (x.data[base + size_t(j)] - s.mean) * s.rstd;
          out.data[base + size_t(j)] = xhat * gamma.data[size_t(j)] + beta.data[size_t(j)];
        }
      });
    };
    r.flops = flopsPerElement<8>;
    r.batch = batchRows;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::LayerNormGrad, "layer_norm_grad", "Norm",
                      "dx of layer_norm: rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, "
                      "g = dy * gamma (not differentiable)",
                      {"x", "gamma", "dy"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm_grad", o[0], {{"gamma", &o[1]}});
      requireDType(o[2], DType::F32, "layer_norm_grad", "dy");
      requireSameType(o[0], o[2]);
      checkEps("layer_norm_grad", a);
      return o[0];
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &gamma = *o[1], &dy = *o[2];
      double eps = getFloat(a, "eps");
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        double meanG = 0, meanGX = 0;
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          double g = dy.data[i] * gamma.data[size_t(j)];
          meanG += g;
          meanGX += g * (x.data[i] - s.mean) * s.rstd;
        }
        meanG /= double(d);
        meanGX /= double(d);
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          double xhat = (x.data[i] - s.mean) * s.rstd;
          double g = dy.data[i] * gamma.data[size_t(j)];
          out.data[i] = s.rstd * (g - meanG - xhat * meanGX);
        }
      });
    };
    r.flops = flopsPerElement<10>;
    r.batch = batchRows;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::LayerNormGammaGrad, "layer_norm_gamma_grad", "Norm",
                      "dgamma of layer_norm: the sum over rows of dy * xhat, f32[D] "
                      "(not differentiable)",
                      {"x", "dy"});
    r.attrs = {epsAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkRowsAndParams("layer_norm_gamma_grad", o[0], {});
      requireDType(o[1], DType::F32, "layer_norm_gamma_grad", "dy");
      requireSameType(o[0], o[1]);
      checkEps("layer_norm_gamma_grad", a);
      return TensorType{DType::F32, {o[0].shape.back()}};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &x = *o[0], &dy = *o[1];
      double eps = getFloat(a, "eps");
      // Rows in order: out[j] accumulates row 0 first (a fixed order).
      forEachRow(x, [&](size_t base, int64_t d) {
        RowStats s = rowStats(&x.data[base], d, eps);
        for (int64_t j = 0; j < d; ++j) {
          size_t i = base + size_t(j);
          out.data[size_t(j)] += dy.data[i] * (x.data[i] - s.mean) * s.rstd;
        }
      });
    };
    r.flops = flopsPerInput<6>;
    // A sum over the rows, so over the batch: the full-batch dgamma is the sum
    // of the micro-batch ones.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      batchRows(q);
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
