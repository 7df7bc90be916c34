//===- ops/Elementwise.cpp - pointwise arithmetic and activations --------===//
//
// Binary ops (add sub mul div) broadcast NumPy style; their gradients are
// returned in the broadcast shape and reduced to the operand shapes by the
// autodiff driver. Unary activations keep their operand's shape. relu_grad
// and gelu_grad are the backward ops of relu and gelu; they are not
// differentiable themselves (no second derivatives in mpc).
//
// Every op here may run in place (OpSchema::inPlaceOperands): the result may
// take over the buffer of any operand that has exactly its type, since each
// kernel reads element i of its operands only to write element i of the
// result. A broadcast operand never qualifies (its type differs).
//
// Their gradient rules and reference kernels are in ir/ops/Elementwise.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

namespace {

/// Which operands of an elementwise op may be partial sums (ops/Layout.h).
constexpr Linearity linearityOf(OpKind k) {
  switch (k) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Neg:
  case OpKind::Scale: return Linearity::Sum;
  case OpKind::Mul: return Linearity::Product;
  case OpKind::Div: return Linearity::First;
  default: return Linearity::None;
  }
}

template <OpKind K> ShardResult shardElementwise(const ShardQuery &q) {
  return elementwiseRule(q, linearityOf(K));
}

TensorType inferBinary(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "a");
  requireDType(ops[1], DType::F32, op, "b");
  return broadcastPair(ops[0], ops[1]);
}

TensorType inferUnary(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "x");
  return ops[0];
}

/// The shape rules of the plain pointwise ops (MPC_UNARY and MPC_BINARY in
/// the op list), naming op `K` in their messages.
template <OpKind K> TensorType inferUnaryOf(TypeOps ops, const AttrMap &) {
  return inferUnary(opName(K), ops);
}
template <OpKind K> TensorType inferBinaryOf(TypeOps ops, const AttrMap &) {
  return inferBinary(opName(K), ops);
}

TensorType inferBackward(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "x");
  requireDType(ops[1], DType::F32, op, "dy");
  requireSameType(ops[0], ops[1]);
  return ops[0];
}

OpSchema binary(OpKind k, const char *name, const char *doc, InferFn infer) {
  OpSchema r = makeSchema(k, name, "Elementwise", doc, {"a", "b"});
  r.infer = infer;
  r.traits = kElementwise | kBroadcasts;
  r.precision = Precision::Follow;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0, 1};
  return r;
}

OpSchema unary(OpKind k, const char *name, const char *doc, InferFn infer,
               FlopsFn flops = nullptr) {
  OpSchema r = makeSchema(k, name, "Elementwise", doc, {"x"});
  r.shard = [](const ShardQuery &q) { return elementwiseRule(q, Linearity::None); };
  r.infer = infer;
  r.flops = flops;
  r.traits = kElementwise;
  r.precision = Precision::Follow;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0};
  return r;
}

/// A backward op: two same-shape operands (the forward's x or y, and dy),
/// elementwise, not differentiable.
OpSchema backward(OpKind k, const char *name, const char *doc,
                  std::vector<std::string> operands, InferFn infer, FlopsFn flops = nullptr) {
  OpSchema r = makeSchema(k, name, "Elementwise", doc, std::move(operands));
  r.shard = [](const ShardQuery &q) { return elementwiseRule(q, Linearity::None); };
  r.infer = infer;
  r.flops = flops;
  r.traits = kElementwise;
  r.precision = Precision::Follow;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0, 1};
  return r;
}

AttrSpec geluApproximateAttr() {
  return attr("approximate", AttrType::String, std::string("none"),
              "\"none\": the exact erf form; \"tanh\": the tanh approximation");
}

} // namespace

void addElementwiseSchemas(std::vector<OpSchema> &t) {
  // The plain pointwise ops: their schema is their line in the op list.
#define MPC_OP(Kind, Name, Family)
#define MPC_UNARY(Kind, Name, Doc, Flops)                                                   \
  t.push_back(unary(OpKind::Kind, Name, Doc, inferUnaryOf<OpKind::Kind>, flopsPerElement<Flops>)); \
  t.back().shard = shardElementwise<OpKind::Kind>;
#define MPC_BINARY(Kind, Name, Doc, Flops)                                                  \
  t.push_back(binary(OpKind::Kind, Name, Doc, inferBinaryOf<OpKind::Kind>));                 \
  t.back().shard = shardElementwise<OpKind::Kind>;
#include "ops/OpList.def"

  // Unary, with attributes.
  {
    OpSchema r = unary(OpKind::Scale, "scale", "value * x for a constant value",
                       [](TypeOps o, const AttrMap &) { return inferUnary("scale", o); });
    r.attrs = {attr("value", AttrType::Float, 1.0, "the constant factor")};
    r.shard = shardElementwise<OpKind::Scale>;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = unary(
        OpKind::Gelu, "gelu",
        "gelu: exact 0.5 x (1 + erf(x / sqrt(2))), or with approximate \"tanh\" "
        "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
        [](TypeOps o, const AttrMap &a) {
          geluUsesTanh(a, "gelu");
          return inferUnary("gelu", o);
        },
        flopsPerElement<8>);
    r.attrs = {geluApproximateAttr()};
    t.push_back(std::move(r));
  }

  // The one op that changes a float type (docs/precision.md): autocast
  // inserts it, and a model may write it.
  {
    OpSchema r = makeSchema(
        OpKind::Cast, "cast",
        "Elementwise",
        "x converted to the float type `to` (f32, bf16 or f16), rounding to nearest-even",
        {"x"});
    r.attrs = {attr("to", AttrType::String, std::string("f32"), "the result type: f32, bf16 or f16")};
    r.infer = [](TypeOps o, const AttrMap &a) {
      std::string to = getString(a, "to");
      std::optional<DType> t = parseDType(to);
      if (!t || !isFloat(*t))
        throw RuleError("cast attribute 'to' must be f32, bf16 or f16, got '" + to + "'");
      if (!isFloat(o[0].dtype))
        throw RuleError("cast operand 'x' must be a float type (f32, bf16 or f16), got " +
                        o[0].str());
      return TensorType{*t, o[0].shape};
    };
    // Widening to f32 is exact, so a partial sum stays one; rounding down
    // is not linear.
    r.shard = [](const ShardQuery &q) {
      return elementwiseRule(q, getString(q.attrs, "to") == "f32" ? Linearity::Sum
                                                                  : Linearity::None);
    };
    r.traits = kElementwise;
    r.precision = Precision::Any;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }

  // Backward ops: same-shape operands, not differentiable.
  t.push_back(backward(
      OpKind::ReluGrad, "relu_grad", "dy * (x > 0): the gradient of relu (not differentiable)",
      {"x", "dy"}, [](TypeOps o, const AttrMap &) { return inferBackward("relu_grad", o); }));
  {
    OpSchema r = backward(
        OpKind::GeluGrad, "gelu_grad",
        "dy * gelu'(x), exact or of the tanh form as approximate says: the gradient of gelu "
        "(not differentiable)",
        {"x", "dy"},
        [](TypeOps o, const AttrMap &a) {
          geluUsesTanh(a, "gelu_grad");
          return inferBackward("gelu_grad", o);
        },
        flopsPerElement<12>);
    r.attrs = {geluApproximateAttr()};
    t.push_back(std::move(r));
  }
  t.push_back(backward(
      OpKind::TanhGrad, "tanh_grad",
      "dy * (1 - y * y) with y = tanh(x): the gradient of tanh from its result "
      "(not differentiable)",
      {"y", "dy"}, [](TypeOps o, const AttrMap &) { return inferBackward("tanh_grad", o); },
      flopsPerElement<3>));
  t.push_back(backward(
      OpKind::SigmoidGrad, "sigmoid_grad",
      "dy * y * (1 - y) with y = sigmoid(x): the gradient of sigmoid from its result "
      "(not differentiable)",
      {"y", "dy"}, [](TypeOps o, const AttrMap &) { return inferBackward("sigmoid_grad", o); },
      flopsPerElement<3>));
}

} // namespace mpc::ops
