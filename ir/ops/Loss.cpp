//===- ir/ops/Loss.cpp - mse_loss and softmax_cross_entropy --------------===//
//
// Losses reduce to an f32 scalar (a mean, as torch's default reduction).
// softmax_cross_entropy takes integer class labels (i32[N], or i32[...] for
// logits f32[..., C]) and fuses log_softmax with the negative log-likelihood;
// rows labelled ignore_index are left out of the mean, as in PyTorch; its
// `reduction` "sum" (torch's and MXNet's other reduction) sums them. Its
// gradient is the separate op softmax_cross_entropy_grad, which is not
// differentiable itself.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

#include <algorithm>
#include <cstdio>

namespace mpc::ir {

using namespace ophelpers;

namespace {

TensorType inferMse(TypeOps ops, const AttrMap &) {
  requireDType(ops[0], DType::F32, "mse_loss", "pred");
  requireDType(ops[1], DType::F32, "mse_loss", "target");
  requireSameType(ops[0], ops[1]);
  return {DType::F32, {}};
}

/// Checks logits f32[..., C] (rank >= 2, C >= 1) and labels i32[...] (the
/// logits' shape without its last axis).
void checkLogitsLabels(const char *op, const TensorType &logits, const TensorType &labels) {
  requireDType(logits, DType::F32, op, "logits");
  requireDType(labels, DType::I32, op, "labels");
  if (logits.rank() < 2 || labels.rank() != logits.rank() - 1 ||
      !std::equal(labels.shape.begin(), labels.shape.end(), logits.shape.begin()))
    throw RuleError("shape mismatch: " + pairStr(logits, labels) +
                    " (expected logits f32[N,C] and labels i32[N], or f32[...,C] and i32[...])");
  if (logits.shape.back() < 1)
    throw RuleError(std::string(op) + " needs at least one class, got " + logits.str());
}

/// Rows (all axes but the classes) and classes of the logits.
std::pair<int64_t, int64_t> rowsAndClasses(const RefTensor &logits) {
  int64_t c = logits.shape.back();
  return {c > 0 ? int64_t(logits.data.size()) / c : 0, c};
}

/// Whether row n's label is `ignore_index` (the row is left out of the mean).
bool ignoredAt(const RefTensor &labels, int64_t n, int64_t ignoreIndex) {
  return labels.data[size_t(n)] == double(ignoreIndex);
}

/// The class index of label n, checked against [0, C).
int64_t labelAt(const RefTensor &labels, int64_t n, int64_t classes) {
  double v = labels.data[size_t(n)];
  if (!(v >= 0 && v < double(classes)) || v != std::floor(v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    throw UserError("", "", "label " + std::string(buf) + " out of range [0, " +
                                std::to_string(classes) + ")");
  }
  return int64_t(v);
}

/// Row n of log_softmax(logits) written to `row`.
void logSoftmaxRow(const RefTensor &logits, int64_t n, int64_t c, std::vector<double> &row) {
  const double *x = logits.data.data() + n * c;
  double mx = *std::max_element(x, x + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - mx);
  double lse = mx + std::log(sum);
  row.resize(size_t(c));
  for (int64_t j = 0; j < c; ++j) row[size_t(j)] = x[j] - lse;
}

AttrSpec ignoreIndexAttr() {
  return attr("ignore_index", AttrType::Int, int64_t(-100),
              "rows whose label equals it are left out of the mean (not range-checked)");
}

AttrSpec reductionAttr() {
  return attr("reduction", AttrType::String, std::string("mean"),
              "\"mean\" (over the rows not ignored) or \"sum\"");
}

/// Whether `reduction` is "sum"; rejects anything but "mean" and "sum".
bool sumReduction(const char *op, const AttrMap &attrs) {
  const std::string &r = getString(attrs, "reduction");
  if (r != "mean" && r != "sum")
    throw RuleError(std::string(op) + " reduction must be \"mean\" or \"sum\", got \"" + r +
                    "\"");
  return r == "sum";
}

/// A mean over the batch (and, for mse_loss, over the other axes): every
/// operand must be batched, and the full-batch loss is the mean of the
/// micro-batch losses.
BatchResult batchMeanLoss(const BatchQuery &q) {
  for (size_t i = 0; i < q.classes.size(); ++i)
    if (q.classes[i] != BatchClass::Batched)
      throw RuleError("operand " + std::to_string(i) + " " + q.operands[i].str() +
                      " is not batched data, but the loss averages it over the batch");
  return {BatchClass::Reduced, BatchCombine::Mean, {}};
}

} // namespace

void addLossOps(std::vector<OpInfo> &t) {
  {
    OpInfo r = makeOp(OpKind::MseLoss, "mse_loss", "Loss",
                      "mean((pred - target)^2) over all elements: an f32 scalar",
                      {"pred", "target"});
    r.infer = inferMse;
    r.batch = batchMeanLoss;
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      Node *p = n.inputs[0], *tg = n.inputs[1];
      double count = double(p->type.numElements());
      Node *d = b.scale(b.mul(dy, b.sub(p, tg)), count > 0 ? 2.0 / count : 0.0);
      return {d, b.neg(d)};
    };
    r.reference = [](RefOps o, const AttrMap &, RefTensor &out) {
      const RefTensor &p = *o[0], &tg = *o[1];
      double s = 0;
      for (size_t i = 0; i < p.data.size(); ++i) {
        double d = p.data[i] - tg.data[i];
        s += d * d;
      }
      out.data[0] = s / double(p.data.size());
    };
    r.flops = flopsPerInput<3>;
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::SoftmaxCrossEntropy, "softmax_cross_entropy", "Loss",
                      "mean (reduction \"mean\") or sum (\"sum\") over the rows whose label is "
                      "not ignore_index of -log_softmax(logits)[n, labels[n]]: an f32 scalar",
                      {"logits", "labels"});
    r.attrs = {ignoreIndexAttr(), reductionAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkLogitsLabels("softmax_cross_entropy", o[0], o[1]);
      sumReduction("softmax_cross_entropy", a);
      return TensorType{DType::F32, {}};
    };
    r.grad = [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
      return {b.create(OpKind::SoftmaxCrossEntropyGrad, {n.inputs[0], n.inputs[1], dy},
                       {{"ignore_index", getInt(n.attrs, "ignore_index")},
                        {"reduction", getString(n.attrs, "reduction")}}),
              nullptr};
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &logits = *o[0], &labels = *o[1];
      auto [rows, c] = rowsAndClasses(logits);
      int64_t ignore = getInt(a, "ignore_index");
      std::vector<double> row;
      double s = 0;
      int64_t counted = 0;
      for (int64_t n = 0; n < rows; ++n) {
        if (ignoredAt(labels, n, ignore)) continue;
        int64_t label = labelAt(labels, n, c);
        logSoftmaxRow(logits, n, c, row);
        s -= row[size_t(label)];
        ++counted;
      }
      // No row counted: the mean is 0 / 0, NaN as in PyTorch; the sum is 0.
      out.data[0] = sumReduction("softmax_cross_entropy", a) ? s : s / double(counted);
    };
    r.flops = flopsPerInput<5>;
    // The sum over the batch is the sum of the micro-batch sums; the mean
    // stays the mean of the micro-batch means (exact when no row is ignored).
    r.batch = [](const BatchQuery &q) -> BatchResult {
      BatchResult res = batchMeanLoss(q);
      if (sumReduction("softmax_cross_entropy", q.attrs)) res.combine = BatchCombine::Sum;
      return res;
    };
    t.push_back(std::move(r));
  }
  {
    OpInfo r = makeOp(OpKind::SoftmaxCrossEntropyGrad, "softmax_cross_entropy_grad", "Loss",
                      "dy * (softmax(logits) - onehot(labels)) / (rows not ignored; 1 for "
                      "reduction \"sum\"), zero on ignored rows: the gradient of "
                      "softmax_cross_entropy (not differentiable)",
                      {"logits", "labels", "dy"});
    r.attrs = {ignoreIndexAttr(), reductionAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkLogitsLabels("softmax_cross_entropy_grad", o[0], o[1]);
      sumReduction("softmax_cross_entropy_grad", a);
      requireDType(o[2], DType::F32, "softmax_cross_entropy_grad", "dy");
      if (o[2].rank() != 0)
        throw RuleError("softmax_cross_entropy_grad operand 'dy' must be a scalar f32[], got " +
                        o[2].str());
      return o[0];
    };
    r.reference = [](RefOps o, const AttrMap &a, RefTensor &out) {
      const RefTensor &logits = *o[0], &labels = *o[1];
      auto [rows, c] = rowsAndClasses(logits);
      int64_t ignore = getInt(a, "ignore_index");
      int64_t counted = 0;
      for (int64_t n = 0; n < rows; ++n) counted += ignoredAt(labels, n, ignore) ? 0 : 1;
      bool sum = sumReduction("softmax_cross_entropy_grad", a);
      if (counted == 0) return; // every row ignored: the gradient is zero
      double g = sum ? o[2]->data[0] : o[2]->data[0] / double(counted);
      std::vector<double> row;
      for (int64_t n = 0; n < rows; ++n) {
        if (ignoredAt(labels, n, ignore)) continue; // stays zero
        int64_t label = labelAt(labels, n, c);
        logSoftmaxRow(logits, n, c, row);
        for (int64_t j = 0; j < c; ++j)
          out.data[size_t(n * c + j)] = g * (std::exp(row[size_t(j)]) - (j == label ? 1.0 : 0.0));
      }
    };
    r.flops = flopsPerInput<5>;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ir
