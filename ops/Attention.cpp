//===- ops/Attention.cpp - fused scaled dot-product attention ------------===//
//
// attention(q, k, v) = softmax(q k^T * scale + mask) v over the last two
// axes, q [..., T, d], k [..., S, d], v [..., S, e] with the same leading
// axes (batch, heads), giving [..., T, e]. `causal` masks key j > query i
// (PyTorch's is_causal, top-left aligned); `scale` 0 stands for 1/sqrt(d)
// (PyTorch's scale=None). Kernels never hold the [T, S] scores whole: they
// walk key blocks with an online softmax (FlashAttention's forward) and
// recompute the probabilities in the backward.
//
// attention_grad(q, k, v, dy) {causal, scale, wrt} is the gradient with
// respect to one of q, k and v (`wrt`): an op has one result, so the rule
// makes three, each recomputing what it needs.
//
// The `fuse-attention` pass (passes/FuseAttention.cpp) makes these from the
// unfused chain matmul -> scale -> causal_mask -> softmax -> matmul.
// Reference kernels and the gradient rule: ir/ops/Attention.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/Attention.h"

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

void checkScale(const AttrMap &a, const char *op) {
  double s = getFloat(a, "scale");
  if (!(s >= 0) || !std::isfinite(s))
    throw RuleError(std::string(op) + " attribute 'scale' must be finite and >= 0 (0: 1/sqrt(d)), "
                    "got " + std::to_string(s));
}

double attentionFlops(TypeOps o, const TensorType &, const AttrMap &) {
  // q k^T and P v, and the softmax's exp and sums.
  const double rows = elems(o[0]) / double(o[0].shape.back());
  const double S = double(o[1].shape[size_t(o[1].rank() - 2)]);
  return rows * S * (2.0 * double(o[0].shape.back()) + 2.0 * double(o[2].shape.back()) + 5.0);
}

/// Tensor parallelism: a split of a leading axis (batch, heads) passes
/// through, q, k and v alike; anything else is replicated.
ShardResult shardAttention(const ShardQuery &q) {
  const Layout l = q.layouts[0];
  if (l.split() && l.axis < q.result.rank() - 2) {
    ShardResult r;
    r.operands.assign(q.operands.size(), l);
    r.result = l;
    return r;
  }
  return replicatedRule(q, "attention splits its leading axes only (batch, heads)");
}

std::vector<AttrSpec> attentionAttrs() {
  return {attr("causal", AttrType::Bool, false, "mask key j > query i"),
          attr("scale", AttrType::Float, 0.0, "the factor of q k^T; 0: 1/sqrt(d)")};
}

} // namespace

double attentionScale(const AttrMap &attrs, int64_t depth) {
  double s = getFloat(attrs, "scale");
  return s == 0.0 ? 1.0 / std::sqrt(double(depth)) : s;
}

void addAttentionSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Attention, "attention", "Attention",
                            "softmax(q k^T * scale + causal mask) v over the last two axes, "
                            "without the [T, S] scores in memory (online softmax)",
                            {"q", "k", "v"});
    r.attrs = attentionAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkScale(a, "attention");
      return inferAttention(o, "attention");
    };
    r.flops = attentionFlops;
    r.batch = rowwiseBatchRule;
    r.shard = shardAttention;
    r.precision = Precision::Low;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::AttentionGrad, "attention_grad", "Attention",
                            "the gradient of attention with respect to q, k or v (wrt), from dy; "
                            "recomputes the probabilities (not differentiable)",
                            {"q", "k", "v", "dy"});
    r.attrs = attentionAttrs();
    r.attrs.push_back(attr("wrt", AttrType::String, std::string("q"),
                           "which operand's gradient: q, k or v"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      checkScale(a, "attention_grad");
      TensorType y = inferAttention(o, "attention_grad");
      requireDType(o[3], DType::F32, "attention_grad", "dy");
      if (o[3].shape != y.shape)
        throw RuleError("attention_grad operand 'dy' must have attention's shape " +
                        shapeText(y.shape) + ", got " + o[3].str());
      const std::string wrt = getString(a, "wrt");
      if (wrt == "q") return o[0];
      if (wrt == "k") return o[1];
      if (wrt == "v") return o[2];
      throw RuleError("attention_grad attribute 'wrt' must be q, k or v, got '" + wrt + "'");
    };
    r.flops = [](TypeOps o, const TensorType &res, const AttrMap &a) {
      return 2.0 * attentionFlops(o.first(3), res, a);
    };
    r.batch = rowwiseBatchRule;
    r.shard = shardAttention;
    r.precision = Precision::Low;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
