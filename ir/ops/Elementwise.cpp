//===- ir/ops/Elementwise.cpp - pointwise ops' rules and kernels ---------===//
//
// The gradient rules of the binary ops and activations, which build
// forward ops or the fused backward ops (relu_grad, gelu_grad, tanh_grad,
// sigmoid_grad), and the float64 reference kernels of every Elementwise op.
// The schemas (operands, attributes, shape and batch rules) are in
// ops/Elementwise.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/OpHelpers.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

template <typename F> void binaryRef(RefOps ops, RefTensor &out, F f) {
  mapBinaryBroadcast(*ops[0], *ops[1], out, f);
}

template <typename F> void unaryRef(RefOps ops, RefTensor &out, F f) {
  mapUnary(*ops[0], out, f);
}

double sigmoidRef(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// --- binary, broadcasting ------------------------------------------------

std::vector<Node *> gradAdd(Builder &, const Node &, Node *dy) { return {dy, dy}; }

void refAdd(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double a, double b) { return a + b; });
}

std::vector<Node *> gradSub(Builder &b, const Node &, Node *dy) { return {dy, b.neg(dy)}; }

void refSub(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double a, double b) { return a - b; });
}

std::vector<Node *> gradMul(Builder &b, const Node &n, Node *dy) {
  return {b.mul(dy, n.inputs[1]), b.mul(dy, n.inputs[0])};
}

void refMul(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double a, double b) { return a * b; });
}

std::vector<Node *> gradDiv(Builder &b, const Node &n, Node *dy) {
  // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b = -y/b.
  Node *da = b.div(dy, n.inputs[1]);
  Node *db = b.neg(b.div(b.mul(dy, self(n)), n.inputs[1]));
  return {da, db};
}

void refDiv(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double a, double b) { return a / b; });
}

// --- unary ---------------------------------------------------------------

std::vector<Node *> gradNeg(Builder &b, const Node &, Node *dy) { return {b.neg(dy)}; }

void refNeg(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return -x; });
}

std::vector<Node *> gradScale(Builder &b, const Node &n, Node *dy) {
  return {b.scale(dy, getFloat(n.attrs, "value"))};
}

void refScale(RefOps o, const AttrMap &a, RefTensor &out) {
  double v = getFloat(a, "value");
  unaryRef(o, out, [v](double x) { return v * x; });
}

std::vector<Node *> gradRelu(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::ReluGrad, {n.inputs[0], dy})};
}

void refRelu(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return x > 0 ? x : 0.0; });
}

std::vector<Node *> gradSigmoid(Builder &b, const Node &n, Node *dy) {
  // One fused pass over memory instead of three (sigmoid_grad).
  return {b.create(OpKind::SigmoidGrad, {self(n), dy})};
}

void refSigmoid(RefOps o, const AttrMap &, RefTensor &out) { unaryRef(o, out, sigmoidRef); }

std::vector<Node *> gradTanh(Builder &b, const Node &n, Node *dy) {
  // One fused pass over memory instead of three (tanh_grad).
  return {b.create(OpKind::TanhGrad, {self(n), dy})};
}

void refTanh(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return std::tanh(x); });
}

std::vector<Node *> gradGelu(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::GeluGrad, {n.inputs[0], dy},
                   {{"approximate", getString(n.attrs, "approximate")}})};
}

void refGelu(RefOps o, const AttrMap &a, RefTensor &out) {
  unaryRef(o, out, geluUsesTanh(a, "gelu") ? geluTanhRef : geluRef);
}

std::vector<Node *> gradExp(Builder &b, const Node &n, Node *dy) {
  return {b.mul(dy, self(n))};
}

void refExp(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return std::exp(x); });
}

std::vector<Node *> gradLog(Builder &b, const Node &n, Node *dy) {
  return {b.div(dy, n.inputs[0])};
}

void refLog(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return std::log(x); });
}

// --- backward ops: not differentiable ------------------------------------

void refReluGrad(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double x, double dy) { return x > 0 ? dy : 0.0; });
}

void refGeluGrad(RefOps o, const AttrMap &a, RefTensor &out) {
  double (*deriv)(double) = geluUsesTanh(a, "gelu_grad") ? geluTanhDerivRef : geluDerivRef;
  binaryRef(o, out, [deriv](double x, double dy) { return dy * deriv(x); });
}

void refTanhGrad(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double y, double dy) { return dy * (1.0 - y * y); });
}

void refSigmoidGrad(RefOps o, const AttrMap &, RefTensor &out) {
  binaryRef(o, out, [](double y, double dy) { return dy * (y * (1.0 - y)); });
}

// --- cast ----------------------------------------------------------------

/// The gradient goes back in x's type (a straight-through cast, as in
/// PyTorch): rounding has no derivative worth following.
std::vector<Node *> gradCast(Builder &b, const Node &n, Node *dy) {
  return {b.create(OpKind::Cast, {dy}, {{"to", std::string(dtypeName(n.inputs[0]->type.dtype))}})};
}

/// The values as they are: the rounding to a low type is the one every
/// bf16 or f16 result of the reference gets (ir::roundToType).
void refCast(RefOps o, const AttrMap &, RefTensor &out) {
  unaryRef(o, out, [](double x) { return x; });
}

} // namespace

void addElementwiseRules(RuleTable &t) {
  t[size_t(OpKind::Cast)] = {gradCast, refCast};
  t[size_t(OpKind::Add)] = {gradAdd, refAdd};
  t[size_t(OpKind::Sub)] = {gradSub, refSub};
  t[size_t(OpKind::Mul)] = {gradMul, refMul};
  t[size_t(OpKind::Div)] = {gradDiv, refDiv};
  t[size_t(OpKind::Neg)] = {gradNeg, refNeg};
  t[size_t(OpKind::Scale)] = {gradScale, refScale};
  t[size_t(OpKind::Relu)] = {gradRelu, refRelu};
  t[size_t(OpKind::Sigmoid)] = {gradSigmoid, refSigmoid};
  t[size_t(OpKind::Tanh)] = {gradTanh, refTanh};
  t[size_t(OpKind::Gelu)] = {gradGelu, refGelu};
  t[size_t(OpKind::Exp)] = {gradExp, refExp};
  t[size_t(OpKind::Log)] = {gradLog, refLog};
  t[size_t(OpKind::ReluGrad)] = {nullptr, refReluGrad};
  t[size_t(OpKind::GeluGrad)] = {nullptr, refGeluGrad};
  t[size_t(OpKind::TanhGrad)] = {nullptr, refTanhGrad};
  t[size_t(OpKind::SigmoidGrad)] = {nullptr, refSigmoidGrad};
}

} // namespace mpc::ir
