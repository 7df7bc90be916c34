//===- ir/ops/Loss.cpp - the losses' rules and kernels -------------------===//
//
// The gradient rules of mse_loss and softmax_cross_entropy (the latter builds
// a softmax_cross_entropy_grad) and the float64 reference kernels of the Loss
// ops, which check every label not ignored against [0, C). The schemas are
// in ops/Loss.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"
#include "ops/Loss.h"

#include <algorithm>
#include <cstdio>

namespace mpc::ir {

using namespace ophelpers;

namespace {

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

std::vector<Node *> gradMse(Builder &b, const Node &n, Node *dy) {
  Node *p = n.inputs[0], *tg = n.inputs[1];
  double count = double(p->type.numElements());
  Node *d = b.scale(b.mul(dy, b.sub(p, tg)), count > 0 ? 2.0 / count : 0.0);
  return {d, b.neg(d)};
}

void refMse(RefOps o, const AttrMap &, RefTensor &out) {
  const RefTensor &p = *o[0], &tg = *o[1];
  double s = 0;
  for (size_t i = 0; i < p.data.size(); ++i) {
    double d = p.data[i] - tg.data[i];
    s += d * d;
  }
  out.data[0] = s / double(p.data.size());
}

std::vector<Node *> gradCrossEntropy(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::SoftmaxCrossEntropyGrad, {n.inputs[0], n.inputs[1], dy},
                   {{"ignore_index", getInt(n.attrs, "ignore_index")},
                    {"reduction", getString(n.attrs, "reduction")}}),
          nullptr};
}

void refCrossEntropy(RefOps o, const AttrMap &a, RefTensor &out) {
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
  out.data[0] = ops::sumReduction("softmax_cross_entropy", a) ? s : s / double(counted);
}

void refCrossEntropyGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  const RefTensor &logits = *o[0], &labels = *o[1];
  auto [rows, c] = rowsAndClasses(logits);
  int64_t ignore = getInt(a, "ignore_index");
  int64_t counted = 0;
  for (int64_t n = 0; n < rows; ++n) counted += ignoredAt(labels, n, ignore) ? 0 : 1;
  bool sum = ops::sumReduction("softmax_cross_entropy_grad", a);
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
}

} // namespace

void addLossRules(RuleTable &t) {
  t[size_t(OpKind::MseLoss)] = {gradMse, refMse};
  t[size_t(OpKind::SoftmaxCrossEntropy)] = {gradCrossEntropy, refCrossEntropy};
  t[size_t(OpKind::SoftmaxCrossEntropyGrad)] = {nullptr, refCrossEntropyGrad};
}

} // namespace mpc::ir
