//===- ops/Attention.cpp - fused scaled dot-product attention ------------===//
//
// attention(q, k, v) = dropout(softmax(q k^T * scale + mask)) v over the
// last two axes, q [..., T, d], k [..., S, d], v [..., S, e] with the same
// leading axes (batch, heads), giving [..., T, e]. `causal` masks key j >
// query i (PyTorch's is_causal, top-left aligned); `scale` 0 stands for
// 1/sqrt(d) (PyTorch's scale=None); `dropout_p` drops probabilities as a
// dropout op on the [..., T, S] probabilities would, with the same mask
// attributes and the same mask (ops/DropoutMask.h). Kernels never hold the [T, S] scores whole: they
// walk key blocks with an online softmax (FlashAttention's forward) and
// recompute the probabilities in the backward.
//
// attention_grad(q, k, v, dy) {causal, scale, wrt} is the gradient with
// respect to one of q, k and v (`wrt`), or all three at once (`wrt: qkv`):
// an op has one result, so that form packs them in one (ops/Attention.h),
// which the gradient rule slices apart. One op walks the probabilities once
// for the three products; three would each recompute them.
//
// The `fuse-attention` pass (passes/FuseAttention.cpp) makes these from the
// unfused chain matmul -> scale -> causal_mask -> softmax -> matmul.
// Reference kernels and the gradient rule: ir/ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Attention.h"

#include "ops/DropoutMask.h"
#include "ops/SchemaHelpers.h"

#include <cmath>

namespace mpc::ops {

using namespace helpers;

namespace {

/// Checks q, k, v; returns the result type [..., T, e].
TensorType inferAttention(TypeOps o, const char *op) {
  const TensorType &q = o[0], &k = o[1], &v = o[2];
  requireDType(q, DType::F32, op, "q");
  requireDType(k, DType::F32, op, "k");
  requireDType(v, DType::F32, op, "v");
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    throw RuleError(std::string(op) + " needs q, k and v of one rank >= 2 ([..., T, d], "
                    "[..., S, d], [..., S, e]), got " + q.str() + ", " + k.str() + ", " + v.str());
  const size_t r = size_t(q.rank());
  for (size_t a = 0; a + 2 < r; ++a)
    if (q.shape[a] != k.shape[a] || q.shape[a] != v.shape[a])
      throw RuleError(std::string(op) + " needs the same leading axes in q, k and v, got " +
                      q.str() + ", " + k.str() + ", " + v.str());
  if (q.shape[r - 1] != k.shape[r - 1])
    throw RuleError(std::string(op) + " needs q and k of one depth d (last axis), got " +
                    q.str() + ", " + k.str());
  if (k.shape[r - 2] != v.shape[r - 2])
    throw RuleError(std::string(op) + " needs k and v of one length S (axis -2), got " +
                    k.str() + ", " + v.str());
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  return {DType::F32, out};
}

/// The probabilities [..., T, S], which attention's dropout mask covers.
Shape probabilitiesShape(TypeOps o) {
  Shape p = o[0].shape;
  p.back() = o[1].shape[size_t(o[1].rank() - 2)];
  return p;
}

void checkAttrs(TypeOps o, const AttrMap &a, const char *op) {
  double s = getFloat(a, "scale");
  if (!(s >= 0) || !std::isfinite(s))
    throw RuleError(std::string(op) + " attribute 'scale' must be finite and >= 0 (0: 1/sqrt(d)), "
                    "got " + std::to_string(s));
  checkDropoutMask(a, "dropout_p", checkedNumElements(probabilitiesShape(o)).value_or(0), op);
}

double attentionFlops(TypeOps o, const TensorType &, const AttrMap &) {
  // q k^T and P v, and the softmax's exp and sums.
  const double rows = elems(o[0]) / double(o[0].shape.back());
  const double S = double(o[1].shape[size_t(o[1].rank() - 2)]);
  return rows * S * (2.0 * double(o[0].shape.back()) + 2.0 * double(o[2].shape.back()) + 5.0);
}

/// The forward recomputed, then per score: q k^T and exp again, and for
/// each gradient asked its products (dv: P^T dy; dq and dk: dP = dy v^T,
/// dS, and dS k or dS^T q).
double attentionGradFlops(TypeOps o, const TensorType &res, const AttrMap &a) {
  const double rows = elems(o[0]) / double(o[0].shape.back());
  const double S = double(o[1].shape[size_t(o[1].rank() - 2)]);
  const double d = double(o[0].shape.back()), e = double(o[2].shape.back());
  double perScore = 2.0 * d + 5.0;
  switch (attentionWrt(a)) {
  case AttentionWrt::V: perScore += 2.0 * e; break;
  case AttentionWrt::Q:
  case AttentionWrt::K: perScore += 2.0 * e + 3.0 + 2.0 * d; break;
  case AttentionWrt::QKV: perScore += 4.0 * e + 3.0 + 4.0 * d; break;
  }
  return attentionFlops(o.first(3), res, a) + rows * S * perScore;
}

/// Micro-batches split axis 0, which must be a leading axis: attention
/// mixes the rows of axis -2 (every query sees every key), so a batch
/// folded into T cannot be split.
BatchResult attentionBatchRule(const BatchQuery &q) {
  for (size_t i = 0; i < q.operands.size(); ++i)
    if (q.classes[i] == BatchClass::Batched && q.operands[i].rank() < 3)
      throw RuleError("its operand " + std::to_string(i) + " " + q.operands[i].str() +
                      " has the batch on axis -2, whose rows every query or key meets; give "
                      "attention a leading batch axis ([batch, ..., T, d])");
  return rowwiseBatchRule(q);
}

/// Tensor parallelism: a split of a leading axis (batch, heads) passes
/// through, q, k and v alike, each member drawing its part of the dropout
/// mask; anything else is replicated.
ShardResult shardAttention(const ShardQuery &q) {
  const Layout l = q.layouts[0];
  if (l.split() && l.axis < q.result.rank() - 2) {
    ShardResult r;
    r.operands.assign(q.operands.size(), l);
    r.result = l;
    if (getFloat(q.attrs, "dropout_p") > 0)
      splitDropoutMask(r, q.attrs, probabilitiesShape(q.operands), l.axis, q.parts);
    return r;
  }
  return replicatedRule(q, "attention splits its leading axes only (batch, heads)");
}

std::vector<AttrSpec> attentionAttrs() {
  std::vector<AttrSpec> a = {
      attr("causal", AttrType::Bool, false, "mask key j > query i"),
      attr("scale", AttrType::Float, 0.0, "the factor of q k^T; 0: 1/sqrt(d)"),
      attr("dropout_p", AttrType::Float, 0.0,
           "probability of dropping each of the [..., T, S] probabilities, in [0, 1), as a "
           "dropout op on them would (the same mask attributes below)")};
  for (AttrSpec &m : dropoutMaskAttrs()) a.push_back(std::move(m));
  return a;
}

} // namespace

double attentionScale(const AttrMap &attrs, int64_t depth) {
  double s = getFloat(attrs, "scale");
  return s == 0.0 ? 1.0 / std::sqrt(double(depth)) : s;
}

AttentionWrt attentionWrt(const AttrMap &attrs) {
  const std::string w = getString(attrs, "wrt");
  if (w == "q") return AttentionWrt::Q;
  if (w == "k") return AttentionWrt::K;
  if (w == "v") return AttentionWrt::V;
  if (w == "qkv") return AttentionWrt::QKV;
  throw RuleError("attention_grad attribute 'wrt' must be q, k, v or qkv, got '" + w + "'");
}

void addAttentionSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Attention, "attention", "Attention",
                            "dropout(softmax(q k^T * scale + causal mask)) v over the last two "
                            "axes, without the [T, S] scores in memory (online softmax)",
                            {"q", "k", "v"});
    r.attrs = attentionAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) {
      TensorType y = inferAttention(o, "attention");
      checkAttrs(o, a, "attention");
      return y;
    };
    r.mask = {"dropout_p", probabilitiesShape};
    r.flops = attentionFlops;
    r.batch = attentionBatchRule;
    r.shard = shardAttention;
    r.precision = Precision::Low;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::AttentionGrad, "attention_grad", "Attention",
                            "the gradient of attention with respect to q, k or v (wrt), or all "
                            "three packed in one [..., 1, T*d + S*d + S*e] (wrt qkv), from dy; "
                            "recomputes the probabilities (not differentiable)",
                            {"q", "k", "v", "dy"});
    r.attrs = attentionAttrs();
    r.attrs.push_back(attr("wrt", AttrType::String, std::string("q"),
                           "which operand's gradient: q, k or v; qkv: all three"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      TensorType y = inferAttention(o, "attention_grad");
      checkAttrs(o, a, "attention_grad");
      requireDType(o[3], DType::F32, "attention_grad", "dy");
      if (o[3].shape != y.shape)
        throw RuleError("attention_grad operand 'dy' must have attention's shape " +
                        shapeText(y.shape) + ", got " + o[3].str());
      switch (attentionWrt(a)) {
      case AttentionWrt::Q: return o[0];
      case AttentionWrt::K: return o[1];
      case AttentionWrt::V: return o[2];
      case AttentionWrt::QKV: break;
      }
      const size_t r = size_t(o[0].rank());
      Shape packed(o[0].shape.begin(), o[0].shape.end() - 2);
      packed.push_back(1);
      packed.push_back(packedAttentionGrad(o[0].shape[r - 2], o[1].shape[r - 2], o[0].shape[r - 1],
                                           o[2].shape[r - 1])
                           .size);
      return TensorType{o[0].dtype, packed};
    };
    r.mask = {"dropout_p", probabilitiesShape};
    r.flops = attentionGradFlops;
    r.batch = attentionBatchRule;
    r.shard = shardAttention;
    r.precision = Precision::Low;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
