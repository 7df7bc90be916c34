//===- ops/Loss.cpp - mse_loss and softmax_cross_entropy -----------------===//
//
// Losses reduce to an f32 scalar (a mean, as torch's default reduction).
// softmax_cross_entropy takes integer class labels (i32[N], or i32[...] for
// logits f32[..., C]) and fuses log_softmax with the negative log-likelihood;
// rows labelled ignore_index are left out of the mean, as in PyTorch; its
// `reduction` "sum" (torch's and MXNet's other reduction) sums them. Its
// gradient is the separate op softmax_cross_entropy_grad, which is not
// differentiable itself.
//
// Their gradient rules and reference kernels are in ir/ops/Loss.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Loss.h"

#include "ops/SchemaHelpers.h"

#include <algorithm>
#include <string>

namespace mpc::ops {

using namespace helpers;

bool sumReduction(const char *op, const AttrMap &attrs) {
  const std::string &r = getString(attrs, "reduction");
  if (r != "mean" && r != "sum")
    throw RuleError(std::string(op) + " reduction must be \"mean\" or \"sum\", got \"" + r +
                    "\"");
  return r == "sum";
}

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

AttrSpec ignoreIndexAttr() {
  return attr("ignore_index", AttrType::Int, int64_t(-100),
              "rows whose label equals it are left out of the mean (not range-checked)");
}

AttrSpec reductionAttr() {
  return attr("reduction", AttrType::String, std::string("mean"),
              "\"mean\" (over the rows not ignored) or \"sum\"");
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

void addLossSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::MseLoss, "mse_loss", "Loss",
                            "mean((pred - target)^2) over all elements: an f32 scalar",
                            {"pred", "target"});
    r.infer = inferMse;
    r.batch = batchMeanLoss;
    r.flops = flopsPerInput<3>;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::SoftmaxCrossEntropy, "softmax_cross_entropy", "Loss",
                            "mean (reduction \"mean\") or sum (\"sum\") over the rows whose "
                            "label is not ignore_index of -log_softmax(logits)[n, labels[n]]: "
                            "an f32 scalar",
                            {"logits", "labels"});
    r.attrs = {ignoreIndexAttr(), reductionAttr()};
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkLogitsLabels("softmax_cross_entropy", o[0], o[1]);
      sumReduction("softmax_cross_entropy", a);
      return TensorType{DType::F32, {}};
    };
    r.flops = flopsPerInput<5>;
    // The sum over the batch is the sum of the micro-batch sums; the mean
    // stays the mean of the micro-batch means (exact when no row is ignored).
    r.batch = [](const BatchQuery &q) -> BatchResult {
      BatchResult res = batchMeanLoss(q);
      if (sumReduction("softmax_cross_entropy", q.attrs)) res.combine = BatchCombine::Sum;
      return res;
    };
    // Tensor parallelism (ops/Layout.h): a vocabulary-parallel loss is not
    // supported.
    r.shard = [](const ShardQuery &q) {
      return replicatedRule(q, "softmax_cross_entropy takes whole logits and labels (a "
                               "vocabulary-parallel loss is not supported)");
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::SoftmaxCrossEntropyGrad, "softmax_cross_entropy_grad", "Loss",
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
    r.flops = flopsPerInput<5>;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
