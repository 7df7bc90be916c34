//===- ir/ops/Elementwise.cpp - pointwise arithmetic and activations -----===//
//
// Binary ops (add sub mul div) broadcast NumPy style; their gradients are
// returned in the broadcast shape and reduced to the operand shapes by the
// autodiff driver. Unary activations keep their operand's shape. relu_grad
// and gelu_grad are the backward ops of relu and gelu; they are not
// differentiable themselves (no second derivatives in mpc).
//
// Every op here may run in place (OpInfo::inPlaceOperands): the result may
// take over the buffer of any operand that has exactly its type, since each
// kernel reads element i of its operands only to write element i of the
// result. A broadcast operand never qualifies (its type differs).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

TensorType inferBinary(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "a");
  requireDType(ops[1], DType::F32, op, "b");
  return broadcastPair(ops[0], ops[1]);
}

TensorType inferUnary(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "x");
  return ops[0];
}

TensorType inferBackward(const char *op, TypeOps ops) {
  requireDType(ops[0], DType::F32, op, "x");
  requireDType(ops[1], DType::F32, op, "dy");
  requireSameType(ops[0], ops[1]);
  return ops[0];
}

template <typename F> void binaryRef(RefOps ops, RefTensor &out, F f) {
  mapBinaryBroadcast(*ops[0], *ops[1], out, f);
}

template <typename F> void unaryRef(RefOps ops, RefTensor &out, F f) {
  mapUnary(*ops[0], out, f);
}

double sigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }

OpInfo binary(OpKind k, const char *name, const char *doc, InferFn infer, GradFn grad,
              RefFn ref) {
  OpInfo r = makeOp(k, name, "Elementwise", doc, {"a", "b"});
  r.infer = infer;
  r.grad = grad;
  r.reference = ref;
  r.traits = kElementwise | kBroadcasts;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0, 1};
  return r;
}

OpInfo unary(OpKind k, const char *name, const char *doc, InferFn infer, GradFn grad,
             RefFn ref, FlopsFn flops = nullptr) {
  OpInfo r = makeOp(k, name, "Elementwise", doc, {"x"});
  r.infer = infer;
  r.grad = grad;
  r.reference = ref;
  r.flops = flops;
  r.traits = kElementwise;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0};
  return r;
}

/// A backward op: two same-shape operands (the forward's x or y, and dy),
/// elementwise, not differentiable.
OpInfo backward(OpKind k, const char *name, const char *doc, std::vector<std::string> operands,
                InferFn infer, RefFn ref, FlopsFn flops = nullptr) {
  OpInfo r = makeOp(k, name, "Elementwise", doc, std::move(operands));
  r.infer = infer;
  r.reference = ref;
  r.flops = flops;
  r.traits = kElementwise;
  r.batch = rowwiseBatchRule;
  r.inPlaceOperands = {0, 1};
  return r;
}

AttrSpec geluApproximateAttr() {
  return attr("approximate", AttrType::String, std::string("none"),
              "\"none\": the exact erf form; \"tanh\": the tanh approximation");
}

} // namespace

void addElementwiseOps(std::vector<OpInfo> &t) {
  // Binary, broadcasting.
  t.push_back(binary(
      OpKind::Add, "add", "a + b, broadcasting",
      [](TypeOps o, const AttrMap &) { return inferBinary("add", o); },
      [](Builder &, const Node &, Node *dy) -> std::vector<Node *> { return {dy, dy}; },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double a, double b) { return a + b; });
      }));
  t.push_back(binary(
      OpKind::Sub, "sub", "a - b, broadcasting",
      [](TypeOps o, const AttrMap &) { return inferBinary("sub", o); },
      [](Builder &b, const Node &, Node *dy) -> std::vector<Node *> {
        return {dy, b.neg(dy)};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double a, double b) { return a - b; });
      }));
  t.push_back(binary(
      OpKind::Mul, "mul", "a * b, broadcasting",
      [](TypeOps o, const AttrMap &) { return inferBinary("mul", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        return {b.mul(dy, n.inputs[1]), b.mul(dy, n.inputs[0])};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double a, double b) { return a * b; });
      }));
  t.push_back(binary(
      OpKind::Div, "div", "a / b, broadcasting",
      [](TypeOps o, const AttrMap &) { return inferBinary("div", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b = -y/b.
        Node *da = b.div(dy, n.inputs[1]);
        Node *db = b.neg(b.div(b.mul(dy, self(n)), n.inputs[1]));
        return {da, db};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double a, double b) { return a / b; });
      }));

  // Unary.
  t.push_back(unary(
      OpKind::Neg, "neg", "-x",
      [](TypeOps o, const AttrMap &) { return inferUnary("neg", o); },
      [](Builder &b, const Node &, Node *dy) -> std::vector<Node *> { return {b.neg(dy)}; },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        unaryRef(o, out, [](double x) { return -x; });
      }));
  {
    OpInfo r = unary(
        OpKind::Scale, "scale", "value * x for a constant value",
        [](TypeOps o, const AttrMap &) { return inferUnary("scale", o); },
        [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
          return {b.scale(dy, getFloat(n.attrs, "value"))};
        },
        [](RefOps o, const AttrMap &a, RefTensor &out) {
          double v = getFloat(a, "value");
          unaryRef(o, out, [v](double x) { return v * x; });
        });
    r.attrs = {attr("value", AttrType::Float, 1.0, "the constant factor")};
    t.push_back(std::move(r));
  }
  t.push_back(unary(
      OpKind::Relu, "relu", "max(x, 0)",
      [](TypeOps o, const AttrMap &) { return inferUnary("relu", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        return {b.create(OpKind::ReluGrad, {n.inputs[0], dy})};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        unaryRef(o, out, [](double x) { return x > 0 ? x : 0.0; });
      }));
  t.push_back(unary(
      OpKind::Sigmoid, "sigmoid", "1 / (1 + exp(-x))",
      [](TypeOps o, const AttrMap &) { return inferUnary("sigmoid", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        // One fused pass over memory instead of three (sigmoid_grad).
        return {b.create(OpKind::SigmoidGrad, {self(n), dy})};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) { unaryRef(o, out, sigmoidRef); },
      flopsPerElement<4>));
  t.push_back(unary(
      OpKind::Tanh, "tanh", "hyperbolic tangent",
      [](TypeOps o, const AttrMap &) { return inferUnary("tanh", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        // One fused pass over memory instead of three (tanh_grad).
        return {b.create(OpKind::TanhGrad, {self(n), dy})};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        unaryRef(o, out, [](double x) { return std::tanh(x); });
      },
      flopsPerElement<4>));
  {
    OpInfo r = unary(
        OpKind::Gelu, "gelu",
        "gelu: exact 0.5 x (1 + erf(x / sqrt(2))), or with approximate \"tanh\" "
        "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
        [](TypeOps o, const AttrMap &a) {
          geluUsesTanh(a, "gelu");
          return inferUnary("gelu", o);
        },
        [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
          return {b.create(OpKind::GeluGrad, {n.inputs[0], dy},
                           {{"approximate", getString(n.attrs, "approximate")}})};
        },
        [](RefOps o, const AttrMap &a, RefTensor &out) {
          unaryRef(o, out, geluUsesTanh(a, "gelu") ? geluTanhRef : geluRef);
        },
        flopsPerElement<8>);
    r.attrs = {geluApproximateAttr()};
    t.push_back(std::move(r));
  }
  t.push_back(unary(
      OpKind::Exp, "exp", "e^x",
      [](TypeOps o, const AttrMap &) { return inferUnary("exp", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        return {b.mul(dy, self(n))};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        unaryRef(o, out, [](double x) { return std::exp(x); });
      },
      flopsPerElement<4>));
  t.push_back(unary(
      OpKind::Log, "log", "natural logarithm",
      [](TypeOps o, const AttrMap &) { return inferUnary("log", o); },
      [](Builder &b, const Node &n, Node *dy) -> std::vector<Node *> {
        return {b.div(dy, n.inputs[0])};
      },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        unaryRef(o, out, [](double x) { return std::log(x); });
      },
      flopsPerElement<4>));

  // Backward ops: same-shape operands, not differentiable.
  t.push_back(backward(
      OpKind::ReluGrad, "relu_grad", "dy * (x > 0): the gradient of relu (not differentiable)",
      {"x", "dy"}, [](TypeOps o, const AttrMap &) { return inferBackward("relu_grad", o); },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double x, double dy) { return x > 0 ? dy : 0.0; });
      }));
  {
    OpInfo r = backward(
        OpKind::GeluGrad, "gelu_grad",
        "dy * gelu'(x), exact or of the tanh form as approximate says: the gradient of gelu "
        "(not differentiable)",
        {"x", "dy"},
        [](TypeOps o, const AttrMap &a) {
          geluUsesTanh(a, "gelu_grad");
          return inferBackward("gelu_grad", o);
        },
        [](RefOps o, const AttrMap &a, RefTensor &out) {
          double (*deriv)(double) = geluUsesTanh(a, "gelu_grad") ? geluTanhDerivRef : geluDerivRef;
          binaryRef(o, out, [deriv](double x, double dy) { return dy * deriv(x); });
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
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double y, double dy) { return dy * (1.0 - y * y); });
      },
      flopsPerElement<3>));
  t.push_back(backward(
      OpKind::SigmoidGrad, "sigmoid_grad",
      "dy * y * (1 - y) with y = sigmoid(x): the gradient of sigmoid from its result "
      "(not differentiable)",
      {"y", "dy"}, [](TypeOps o, const AttrMap &) { return inferBackward("sigmoid_grad", o); },
      [](RefOps o, const AttrMap &, RefTensor &out) {
        binaryRef(o, out, [](double y, double dy) { return dy * (y * (1.0 - y)); });
      },
      flopsPerElement<3>));
}

} // namespace mpc::ir
