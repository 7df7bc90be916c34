//===- test/unit/ir/ShapeRuleTest.cpp - shape and dtype rules -----------===//
//
// Every case of the table infers a type that matches what its reference
// kernel produces; hand-written cases pin broadcasting edge cases, and every
// rejection names both sides of the mismatch.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"

#include <gtest/gtest.h>

namespace mpc::ir {
namespace {

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }
TensorType i32(Shape s) { return {DType::I32, std::move(s)}; }

/// Builds a node of `kind` on fresh inputs of `types`; returns its type.
TensorType infer(OpKind kind, std::vector<TensorType> types, AttrMap attrs = {}) {
  Graph g;
  std::vector<Node *> ins;
  for (size_t i = 0; i < types.size(); ++i)
    ins.push_back(g.addInput("in" + std::to_string(i), types[i]));
  Builder b(g);
  return b.create(kind, ins, std::move(attrs))->type;
}

/// The RuleError message of the same, or "" when the rule accepts.
std::string ruleError(OpKind kind, std::vector<TensorType> types, AttrMap attrs = {}) {
  try {
    infer(kind, std::move(types), std::move(attrs));
  } catch (const RuleError &e) {
    return e.what();
  }
  return "";
}

class ShapeRuleCase : public ::testing::TestWithParam<const opcases::OpCase *> {};

TEST_P(ShapeRuleCase, InferredTypeMatchesReference) {
  const opcases::OpCase &c = *GetParam();
  TensorType t = infer(c.kind, c.operands, c.attrs);
  EXPECT_EQ(t, opcases::resultType(c));
  std::vector<RefTensor> in = opcases::makeInputs(c);
  RefTensor out = opcases::runReference(c, in);
  EXPECT_EQ(out.shape, t.shape);
  EXPECT_EQ(out.numElements(), t.numElements());
}

std::vector<const opcases::OpCase *> everyCase() {
  std::vector<const opcases::OpCase *> v;
  for (const opcases::OpCase &c : opcases::allOpCases()) v.push_back(&c);
  for (const opcases::OpCase &c : opcases::lowPrecisionCases()) v.push_back(&c);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, ShapeRuleCase, ::testing::ValuesIn(everyCase()),
                         [](const auto &info) { return info.param->name(); });

TEST(ShapeRule, Broadcasting) {
  EXPECT_EQ(infer(OpKind::Add, {f32({3, 4}), f32({4})}), f32({3, 4}));
  EXPECT_EQ(infer(OpKind::Add, {f32({3, 1}), f32({1, 4})}), f32({3, 4}));
  EXPECT_EQ(infer(OpKind::Mul, {f32({}), f32({2, 3})}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Sub, {f32({2, 1, 3}), f32({4, 1})}), f32({2, 4, 3}));
  EXPECT_EQ(infer(OpKind::Div, {f32({1}), f32({})}), f32({1}));
  EXPECT_EQ(infer(OpKind::Add, {f32({0, 3}), f32({1, 3})}), f32({0, 3}));
  EXPECT_EQ(infer(OpKind::Add, {f32({5, 1, 1}), f32({1, 1})}), f32({5, 1, 1}));
}

TEST(ShapeRule, BroadcastMismatchNamesBothShapes) {
  EXPECT_EQ(ruleError(OpKind::Add, {f32({100, 2}), f32({3, 1})}),
            "shape mismatch: f32[100,2] x f32[3,1]");
  EXPECT_EQ(ruleError(OpKind::Mul, {f32({3}), f32({4})}), "shape mismatch: f32[3] x f32[4]");
  EXPECT_EQ(ruleError(OpKind::Div, {f32({0}), f32({2})}), "shape mismatch: f32[0] x f32[2]");
}

TEST(ShapeRule, DTypeIsF32) {
  std::string e = ruleError(OpKind::Add, {f32({3}), i32({3})});
  EXPECT_NE(e.find("'b' must be f32, got i32[3]"), std::string::npos) << e;
  e = ruleError(OpKind::Relu, {i32({2})});
  EXPECT_NE(e.find("relu operand 'x' must be f32, got i32[2]"), std::string::npos) << e;
  EXPECT_NE(ruleError(OpKind::MatMul, {i32({2, 2}), f32({2, 2})}), "");
  EXPECT_NE(ruleError(OpKind::Sum, {i32({2, 2})}), "");
  // reshape, copy and stop_gradient carry i32 too (labels are reshaped and
  // cross devices).
  EXPECT_EQ(infer(OpKind::Reshape, {i32({2, 2})}, {{"shape", Shape{4}}}), i32({4}));
  EXPECT_EQ(infer(OpKind::Copy, {i32({4})}), i32({4}));
  EXPECT_EQ(infer(OpKind::StopGradient, {i32({4})}), i32({4}));
}

TEST(ShapeRule, MatMul) {
  EXPECT_EQ(infer(OpKind::MatMul, {f32({100, 2}), f32({2, 3})}), f32({100, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({2, 100}), f32({2, 3})}, {{"transpose_a", true}}),
            f32({100, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({100, 2}), f32({3, 2})}, {{"transpose_b", true}}),
            f32({100, 3}));
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({100, 2}), f32({3, 1})}),
            "shape mismatch: f32[100,2] x f32[3,1]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({100, 2}), f32({2, 3})}, {{"transpose_b", true}}),
            "shape mismatch: f32[100,2] x f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({2}), f32({2, 3})}),
            "matmul needs operands of rank >= 2: f32[2] x f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({2, 3}), f32({})}),
            "matmul needs operands of rank >= 2: f32[2,3] x f32[]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({3, 4}), f32({3, 4}), f32({3, 4})}),
            "shape mismatch: f32[3,4] x f32[3,4]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({3, 4}), f32({4, 5}), f32({5, 3})}),
            "matmul accumulator 'c' f32[5,3] does not match the product f32[3,5]");
}

TEST(ShapeRule, BatchedMatMul) {
  // Leading axes broadcast as numpy.matmul; transposes act on the last two.
  EXPECT_EQ(infer(OpKind::MatMul, {f32({2, 2, 2}), f32({2, 3})}), f32({2, 2, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({5, 2}), f32({4, 2, 3})}), f32({4, 5, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({7, 1, 5, 2}), f32({4, 2, 3})}), f32({7, 4, 5, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({1, 5, 2}), f32({6, 2, 3})}), f32({6, 5, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({6, 2, 5}), f32({6, 3, 2})},
                  {{"transpose_a", true}, {"transpose_b", true}}),
            f32({6, 5, 3}));
  EXPECT_EQ(infer(OpKind::MatMul, {f32({6, 5, 2}), f32({2, 3}), f32({6, 5, 3})}),
            f32({6, 5, 3}));
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({2, 5, 2}), f32({3, 2, 3})}),
            "matmul batch dimensions do not broadcast: f32[2,5,2] x f32[3,2,3]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({2, 5, 2}), f32({2, 3, 3})}),
            "shape mismatch: f32[2,5,2] x f32[2,3,3]");
  EXPECT_EQ(ruleError(OpKind::MatMul, {f32({2, 5, 2}), f32({2, 3}), f32({5, 3})}),
            "matmul accumulator 'c' f32[5,3] does not match the product f32[2,5,3]");
}

TEST(ShapeRule, Arity) {
  EXPECT_EQ(ruleError(OpKind::Add, {f32({2})}), "op 'add' takes 2 operand(s), got 1");
  EXPECT_EQ(ruleError(OpKind::Fill, {f32({2})}, {{"shape", Shape{2}}}),
            "op 'fill' takes 0 operand(s), got 1");
  EXPECT_EQ(ruleError(OpKind::SgdUpdate, {f32({2})}, {{"lr", 0.1}}),
            "op 'sgd_update' takes 2 to 5 operand(s), got 1");
  EXPECT_EQ(ruleError(OpKind::Concat, {}), "op 'concat' takes 1 to 64 operand(s), got 0");
  EXPECT_EQ(ruleError(OpKind::LayerNorm, {f32({2, 3}), f32({3})}),
            "op 'layer_norm' takes 3 operand(s), got 2");
}

TEST(ShapeRule, VariadicOpRecord) {
  const OpInfo &c = opInfo(OpKind::Concat);
  EXPECT_TRUE(c.variadic);
  EXPECT_EQ(c.minArity, 1);
  EXPECT_TRUE(c.acceptsArity(1));
  EXPECT_TRUE(c.acceptsArity(64));
  EXPECT_FALSE(c.acceptsArity(0));
  EXPECT_EQ(c.arityText(), "1 to 64");
  EXPECT_FALSE(c.acceptsArity(65));
  EXPECT_EQ(c.operandName(0), "x0");
  EXPECT_EQ(c.operandName(7), "x7");
  const OpInfo &m = opInfo(OpKind::MatMul);
  EXPECT_FALSE(m.variadic);
  EXPECT_EQ(m.maxArity(), 3);
  EXPECT_FALSE(m.acceptsArity(4));
  EXPECT_EQ(m.arityText(), "2 to 3");
  EXPECT_EQ(m.operandName(2), "c");
}

TEST(ShapeRule, UnaryAndBackwardOps) {
  EXPECT_EQ(infer(OpKind::Gelu, {f32({2, 3})}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Scale, {f32({})}, {{"value", 3.0}}), f32({}));
  EXPECT_EQ(infer(OpKind::ReluGrad, {f32({2, 3}), f32({2, 3})}), f32({2, 3}));
  EXPECT_EQ(ruleError(OpKind::ReluGrad, {f32({2, 3}), f32({3})}),
            "shape mismatch: f32[2,3] x f32[3]");
  EXPECT_EQ(ruleError(OpKind::GeluGrad, {f32({2, 3}), f32({2, 1})}),
            "shape mismatch: f32[2,3] x f32[2,1]");
}

TEST(ShapeRule, DropoutProbability) {
  EXPECT_EQ(infer(OpKind::Dropout, {f32({2, 3})}, {{"p", 0.0}}), f32({2, 3}));
  EXPECT_EQ(ruleError(OpKind::Dropout, {f32({2})}, {{"p", 1.0}}),
            "dropout p must be in [0, 1), got 1.000000");
  EXPECT_EQ(ruleError(OpKind::Dropout, {f32({2})}, {{"p", -0.1}}),
            "dropout p must be in [0, 1), got -0.100000");
  EXPECT_EQ(ruleError(OpKind::Dropout, {i32({4})}),
            "dropout operand 'x' must be f32, got i32[4]");
}

TEST(ShapeRule, GeluApproximate) {
  using S = std::string;
  EXPECT_EQ(infer(OpKind::Gelu, {f32({2})}, {{"approximate", S("tanh")}}), f32({2}));
  EXPECT_EQ(infer(OpKind::Gelu, {f32({2})}, {{"approximate", S("none")}}), f32({2}));
  EXPECT_EQ(ruleError(OpKind::Gelu, {f32({2})}, {{"approximate", S("erf")}}),
            "gelu approximate must be \"none\" or \"tanh\", got \"erf\"");
  EXPECT_EQ(ruleError(OpKind::GeluGrad, {f32({2}), f32({2})}, {{"approximate", S("Tanh")}}),
            "gelu_grad approximate must be \"none\" or \"tanh\", got \"Tanh\"");
  EXPECT_EQ(ruleError(OpKind::Gelu, {f32({2})}, {{"approximate", true}}),
            "attribute 'approximate' of op 'gelu' must be string, got bool");
}

TEST(ShapeRule, Reductions) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(infer(OpKind::Sum, {f32({2, 3, 4})}), f32({}));
  EXPECT_EQ(infer(OpKind::Sum, {f32({2, 3, 4})}, {{"keepdims", true}}), f32({1, 1, 1}));
  EXPECT_EQ(infer(OpKind::Mean, {f32({2, 3, 4})}, {{"axes", V{-1, 0}}}), f32({3}));
  EXPECT_EQ(infer(OpKind::Mean, {f32({2, 3, 4})}, {{"axes", V{1}}, {"keepdims", true}}),
            f32({2, 1, 4}));
  EXPECT_EQ(ruleError(OpKind::Sum, {f32({2, 3})}, {{"axes", V{2}}}),
            "sum axis 2 out of range for f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::Mean, {f32({2, 3})}, {{"axes", V{-3}}}),
            "mean axis -3 out of range for f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::Sum, {f32({2, 3})}, {{"axes", V{1, -1}}}),
            "sum axis -1 repeated for f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::Sum, {f32({})}, {{"axes", V{0}}}),
            "sum axis 0 out of range for f32[]");
}

TEST(ShapeRule, BroadcastTo) {
  EXPECT_EQ(infer(OpKind::BroadcastTo, {f32({3})}, {{"shape", Shape{2, 3}}}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::BroadcastTo, {f32({})}, {{"shape", Shape{}}}), f32({}));
  EXPECT_EQ(ruleError(OpKind::BroadcastTo, {f32({3})}, {{"shape", Shape{2, 4}}}),
            "cannot broadcast f32[3] to f32[2,4]");
  EXPECT_EQ(ruleError(OpKind::BroadcastTo, {f32({2, 3})}, {{"shape", Shape{3}}}),
            "cannot broadcast f32[2,3] to f32[3]");
  EXPECT_NE(ruleError(OpKind::BroadcastTo, {f32({1})}, {{"shape", Shape{-2}}}), "");
  EXPECT_EQ(ruleError(OpKind::BroadcastTo, {f32({1})}),
            "missing required attribute 'shape' for op 'broadcast_to'");
}

TEST(ShapeRule, Reshape) {
  EXPECT_EQ(infer(OpKind::Reshape, {f32({2, 3})}, {{"shape", Shape{6}}}), f32({6}));
  EXPECT_EQ(infer(OpKind::Reshape, {f32({2, 3, 4})}, {{"shape", Shape{-1, 4}}}), f32({6, 4}));
  EXPECT_EQ(infer(OpKind::Reshape, {f32({1})}, {{"shape", Shape{}}}), f32({}));
  EXPECT_EQ(ruleError(OpKind::Reshape, {f32({2, 3})}, {{"shape", Shape{4, 2}}}),
            "cannot reshape f32[2,3] to [4,2]: element counts differ");
  EXPECT_EQ(ruleError(OpKind::Reshape, {f32({2, 3})}, {{"shape", Shape{4, -1}}}),
            "cannot reshape f32[2,3] to [4,-1]");
  EXPECT_EQ(ruleError(OpKind::Reshape, {f32({2, 3})}, {{"shape", Shape{-1, -1}}}),
            "reshape shape [-1,-1] has more than one -1");
  EXPECT_EQ(ruleError(OpKind::Reshape, {f32({2, 3})}, {{"shape", Shape{-2, -3}}}),
            "reshape shape [-2,-3] has a negative dimension");
  EXPECT_NE(ruleError(OpKind::Reshape, {f32({0})}, {{"shape", Shape{0, -1}}}), "");
  EXPECT_NE(ruleError(OpKind::Reshape, {f32({2})},
                      {{"shape", Shape{int64_t(1) << 40, int64_t(1) << 40}}}),
            "");
}

TEST(ShapeRule, Transpose) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(infer(OpKind::Transpose, {f32({2, 3, 4})}), f32({4, 3, 2}));
  EXPECT_EQ(infer(OpKind::Transpose, {f32({2, 3, 4})}, {{"perm", V{1, 2, 0}}}), f32({3, 4, 2}));
  EXPECT_EQ(infer(OpKind::Transpose, {f32({})}), f32({}));
  EXPECT_EQ(ruleError(OpKind::Transpose, {f32({2, 3})}, {{"perm", V{0, 0}}}),
            "transpose perm [0,0] is not a permutation of the axes of f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::Transpose, {f32({2, 3})}, {{"perm", V{0, 1, 2}}}),
            "transpose perm [0,1,2] does not match the rank of f32[2,3]");
  EXPECT_NE(ruleError(OpKind::Transpose, {f32({2, 3})}, {{"perm", V{0, 2}}}), "");
}

TEST(ShapeRule, Fill) {
  EXPECT_EQ(infer(OpKind::Fill, {}, {{"shape", Shape{2, 3}}, {"value", 1.0}}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Fill, {}, {{"shape", Shape{}}}), f32({}));
  EXPECT_NE(ruleError(OpKind::Fill, {}, {{"shape", Shape{-1}}}), "");
  EXPECT_EQ(ruleError(OpKind::Fill, {}, {{"shape", Shape{2}}, {"valu", 1.0}}),
            "unknown attribute 'valu' for op 'fill'");
}

TEST(ShapeRule, Slice) {
  auto sl = [](int64_t axis, int64_t start, int64_t end) {
    return AttrMap{{"axis", axis}, {"start", start}, {"end", end}};
  };
  EXPECT_EQ(infer(OpKind::Slice, {f32({4, 3})}, sl(0, 1, 3)), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Slice, {f32({2, 4, 3})}, sl(1, 0, 1)), f32({2, 1, 3}));
  EXPECT_EQ(infer(OpKind::Slice, {f32({2, 5})}, sl(-1, 2, 5)), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Slice, {i32({6})}, sl(0, 2, 5)), i32({3}));
  EXPECT_EQ(ruleError(OpKind::Slice, {f32({3, 4})}, sl(0, 1, 5)),
            "slice start 1, end 5 out of range for axis 0 of f32[3,4]: needs 0 <= start < "
            "end <= 3");
  EXPECT_EQ(ruleError(OpKind::Slice, {f32({3, 4})}, sl(-1, 2, 2)),
            "slice start 2, end 2 out of range for axis -1 of f32[3,4]: needs 0 <= start < "
            "end <= 4");
  EXPECT_NE(ruleError(OpKind::Slice, {f32({3, 4})}, sl(0, 0, -1)), "");
  EXPECT_NE(ruleError(OpKind::Slice, {f32({3, 4})}, sl(0, -1, 2)), "");
  EXPECT_EQ(ruleError(OpKind::Slice, {f32({3, 4})}, sl(2, 0, 1)),
            "slice axis 2 out of range for f32[3,4]");
  EXPECT_NE(ruleError(OpKind::Slice, {f32({})}, sl(0, 0, 1)), "");
  // start and end are required; the old name `stop` is gone.
  EXPECT_EQ(ruleError(OpKind::Slice, {f32({3})}, {{"start", int64_t(0)}}),
            "missing required attribute 'end' for op 'slice'");
  EXPECT_EQ(ruleError(OpKind::Slice, {f32({3})}, {{"start", int64_t(0)}, {"stop", int64_t(1)}}),
            "unknown attribute 'stop' for op 'slice'");
}

TEST(ShapeRule, Concat) {
  auto ax = [](int64_t axis) { return AttrMap{{"axis", axis}}; };
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3}), f32({1, 3})}), f32({3, 3}));
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3}), f32({2, 2})}, ax(-1)), f32({2, 5}));
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3, 4}), f32({2, 1, 4})}, ax(1)), f32({2, 4, 4}));
  EXPECT_EQ(infer(OpKind::Concat, {i32({3}), i32({4})}), i32({7}));
  EXPECT_EQ(ruleError(OpKind::Concat, {f32({2, 3}), f32({3, 4})}),
            "concat shape mismatch outside axis 0: f32[2,3] x f32[3,4] (operands x0 and x1)");
  EXPECT_EQ(ruleError(OpKind::Concat, {f32({2, 3}), f32({2, 3, 1})}, ax(1)),
            "concat shape mismatch outside axis 1: f32[2,3] x f32[2,3,1] (operands x0 and x1)");
  EXPECT_EQ(ruleError(OpKind::Concat, {f32({2}), i32({2})}),
            "concat operands differ in dtype: f32[2] x i32[2]");
  EXPECT_EQ(ruleError(OpKind::Concat, {f32({2}), f32({2})}, ax(1)),
            "concat axis 1 out of range for f32[2]");
  EXPECT_NE(ruleError(OpKind::Concat, {f32({}), f32({})}), "");
  // Variadic: one operand is the identity; any number join in order.
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3})}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 3}), f32({1, 3}), f32({4, 3})}), f32({7, 3}));
  EXPECT_EQ(infer(OpKind::Concat, {f32({2, 1}), f32({2, 3}), f32({2, 2}), f32({2, 1})}, ax(-1)),
            f32({2, 7}));
  EXPECT_EQ(ruleError(OpKind::Concat, {f32({2, 3}), f32({1, 3}), f32({4, 2})}),
            "concat shape mismatch outside axis 0: f32[2,3] x f32[4,2] (operands x0 and x2)");
  EXPECT_EQ(ruleError(OpKind::Concat, {i32({2}), i32({1}), f32({4})}),
            "concat operands differ in dtype: i32[2] x f32[4]");
  EXPECT_NE(ruleError(OpKind::Concat, {f32({})}), "");
}

TEST(ShapeRule, Softmax) {
  EXPECT_EQ(infer(OpKind::Softmax, {f32({2, 5})}), f32({2, 5}));
  EXPECT_EQ(infer(OpKind::LogSoftmax, {f32({2, 5})}, {{"axis", int64_t(-2)}}), f32({2, 5}));
  EXPECT_EQ(ruleError(OpKind::Softmax, {f32({2, 5})}, {{"axis", int64_t(2)}}),
            "softmax axis 2 out of range for f32[2,5]");
  EXPECT_EQ(ruleError(OpKind::LogSoftmax, {f32({})}),
            "log_softmax needs rank >= 1, got f32[]");
  EXPECT_EQ(ruleError(OpKind::SoftmaxGrad, {f32({2, 5}), f32({5, 2})}),
            "shape mismatch: f32[2,5] x f32[5,2]");
}

TEST(ShapeRule, CausalMask) {
  EXPECT_EQ(infer(OpKind::CausalMask, {f32({3, 5})}), f32({3, 5}));
  EXPECT_EQ(infer(OpKind::CausalMask, {f32({2, 4, 5, 3})}, {{"value", -1.0}}),
            f32({2, 4, 5, 3}));
  EXPECT_EQ(ruleError(OpKind::CausalMask, {f32({3})}),
            "causal_mask needs x of rank >= 2 (rows and columns), got f32[3]");
  std::string e = ruleError(OpKind::CausalMask, {i32({3, 3})});
  EXPECT_NE(e.find("causal_mask operand 'x' must be f32, got i32[3,3]"), std::string::npos) << e;
}

TEST(ShapeRule, LayerNorm) {
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({4, 5}), f32({5}), f32({5})}), f32({4, 5}));
  EXPECT_EQ(infer(OpKind::LayerNorm, {f32({2, 3, 1}), f32({1}), f32({1})}, {{"eps", 0.5}}),
            f32({2, 3, 1}));
  EXPECT_EQ(ruleError(OpKind::LayerNorm, {f32({4, 5}), f32({4}), f32({5})}),
            "layer_norm operand 'gamma' must be f32[5] (the last axis of x): shape mismatch: "
            "f32[4,5] x f32[4]");
  EXPECT_EQ(ruleError(OpKind::LayerNorm, {f32({4, 5}), f32({5}), f32({1, 5})}),
            "layer_norm operand 'beta' must be f32[5] (the last axis of x): shape mismatch: "
            "f32[4,5] x f32[1,5]");
  EXPECT_EQ(ruleError(OpKind::LayerNorm, {f32({}), f32({1}), f32({1})}),
            "layer_norm needs x of rank >= 1, got f32[]");
  EXPECT_EQ(ruleError(OpKind::LayerNorm, {f32({4, 5}), f32({5}), f32({5})}, {{"eps", -1.0}}),
            "layer_norm eps must be >= 0, got -1");
  std::string e = ruleError(OpKind::LayerNorm, {f32({4, 5}), i32({5}), f32({5})});
  EXPECT_NE(e.find("layer_norm operand 'gamma' must be f32, got i32[5]"), std::string::npos) << e;
  EXPECT_EQ(infer(OpKind::LayerNormGrad, {f32({4, 5}), f32({5}), f32({4, 5})}), f32({4, 5}));
  EXPECT_EQ(ruleError(OpKind::LayerNormGrad, {f32({4, 5}), f32({5}), f32({5, 4})}),
            "shape mismatch: f32[4,5] x f32[5,4]");
  EXPECT_EQ(infer(OpKind::LayerNormGammaGrad, {f32({2, 4, 5}), f32({2, 4, 5})}), f32({5}));
  EXPECT_EQ(ruleError(OpKind::LayerNormGammaGrad, {f32({4, 5}), f32({4, 1})}),
            "shape mismatch: f32[4,5] x f32[4,1]");
}

TEST(ShapeRule, Embedding) {
  EXPECT_EQ(infer(OpKind::Embedding, {i32({2, 7}), f32({10, 4})}), f32({2, 7, 4}));
  EXPECT_EQ(infer(OpKind::Embedding, {i32({}), f32({10, 4})}), f32({4}));
  EXPECT_EQ(ruleError(OpKind::Embedding, {i32({2, 7}), f32({10})}),
            "embedding operand 'table' must be f32[V,D], got f32[10] (ids i32[2,7])");
  std::string e = ruleError(OpKind::Embedding, {f32({2}), f32({10, 4})});
  EXPECT_NE(e.find("embedding operand 'ids' must be i32, got f32[2]"), std::string::npos) << e;
  AttrMap v10 = {{"num_embeddings", int64_t(10)}};
  EXPECT_EQ(infer(OpKind::EmbeddingGrad, {i32({2, 7}), f32({2, 7, 4})}, v10), f32({10, 4}));
  EXPECT_EQ(ruleError(OpKind::EmbeddingGrad, {i32({2, 7}), f32({2, 4})}, v10),
            "shape mismatch: i32[2,7] x f32[2,4] (expected dy of the ids' shape plus one axis, "
            "f32[...,D])");
  EXPECT_EQ(ruleError(OpKind::EmbeddingGrad, {i32({2}), f32({2, 4})}),
            "missing required attribute 'num_embeddings' for op 'embedding_grad'");
  EXPECT_EQ(ruleError(OpKind::EmbeddingGrad, {i32({2}), f32({2, 4})},
                      {{"num_embeddings", int64_t(-1)}}),
            "embedding_grad num_embeddings must be >= 0, got -1");
}

TEST(ShapeRule, Losses) {
  EXPECT_EQ(infer(OpKind::MseLoss, {f32({100, 1}), f32({100, 1})}), f32({}));
  EXPECT_EQ(ruleError(OpKind::MseLoss, {f32({100, 1}), f32({100})}),
            "shape mismatch: f32[100,1] x f32[100]");
  EXPECT_EQ(infer(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), i32({8})}), f32({}));
  EXPECT_EQ(ruleError(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), i32({7})}),
            "shape mismatch: f32[8,10] x i32[7] (expected logits f32[N,C] and labels i32[N], "
            "or f32[...,C] and i32[...])");
  EXPECT_EQ(infer(OpKind::SoftmaxCrossEntropy, {f32({2, 8, 10}), i32({2, 8})},
                  {{"ignore_index", int64_t(0)}}),
            f32({}));
  EXPECT_NE(ruleError(OpKind::SoftmaxCrossEntropy, {f32({2, 8, 10}), i32({8, 2})}), "");
  EXPECT_NE(ruleError(OpKind::SoftmaxCrossEntropy, {f32({2, 8, 10}), i32({16})}), "");
  EXPECT_NE(ruleError(OpKind::SoftmaxCrossEntropy, {f32({10}), i32({})}), "");
  std::string e = ruleError(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), f32({8})});
  EXPECT_NE(e.find("'labels' must be i32, got f32[8]"), std::string::npos) << e;
  EXPECT_EQ(ruleError(OpKind::SoftmaxCrossEntropy, {f32({8, 0}), i32({8})}),
            "softmax_cross_entropy needs at least one class, got f32[8,0]");
  EXPECT_EQ(infer(OpKind::SoftmaxCrossEntropyGrad, {f32({8, 10}), i32({8}), f32({})}),
            f32({8, 10}));
  EXPECT_NE(ruleError(OpKind::SoftmaxCrossEntropyGrad, {f32({8, 10}), i32({8}), f32({1})}),
            "");
}

TEST(ShapeRule, CrossEntropyReduction) {
  EXPECT_EQ(infer(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), i32({8})},
                  {{"reduction", std::string("sum")}}),
            f32({}));
  EXPECT_EQ(ruleError(OpKind::SoftmaxCrossEntropy, {f32({8, 10}), i32({8})},
                      {{"reduction", std::string("none")}}),
            "softmax_cross_entropy reduction must be \"mean\" or \"sum\", got \"none\"");
  EXPECT_EQ(ruleError(OpKind::SoftmaxCrossEntropyGrad, {f32({8, 10}), i32({8}), f32({})},
                      {{"reduction", std::string("Sum")}}),
            "softmax_cross_entropy_grad reduction must be \"mean\" or \"sum\", got \"Sum\"");
}

TEST(ShapeRule, BatchNorm) {
  EXPECT_EQ(infer(OpKind::BatchNorm, {f32({2, 3, 4, 4}), f32({3}), f32({3})}), f32({2, 3, 4, 4}));
  EXPECT_EQ(infer(OpKind::BatchNorm, {f32({8, 5}), f32({5}), f32({5}), f32({5}), f32({5})}),
            f32({8, 5}));
  EXPECT_EQ(infer(OpKind::BatchNorm, {f32({2, 4, 3}), f32({3}), f32({3})},
                  {{"axis", int64_t(-1)}}),
            f32({2, 4, 3}));
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({2, 3, 4, 4}), f32({4}), f32({3})}),
            "batch_norm operand 'gamma' must be f32[3] (x's channel axis): shape mismatch: "
            "f32[2,3,4,4] x f32[4]");
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({2, 3}), f32({3}), f32({3}), f32({3})}),
            "batch_norm takes operands running_mean and running_var together, got only "
            "running_mean");
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({2, 3}), f32({3}), f32({3}), f32({3}), f32({2})}),
            "batch_norm operand 'running_var' must be f32[3] (x's channel axis): shape "
            "mismatch: f32[2,3] x f32[2]");
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({3}), f32({3}), f32({3})}),
            "batch_norm needs x of rank >= 2 ([N, C, ...]), got f32[3]");
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({2, 3}), f32({3}), f32({3})}, {{"axis", int64_t(2)}}),
            "batch_norm axis 2 out of range for f32[2,3]");
  EXPECT_EQ(ruleError(OpKind::BatchNorm, {f32({2, 3}), f32({3}), f32({3})}, {{"momentum", 1.5}}),
            "batch_norm momentum must be in [0, 1], got 1.5");
  EXPECT_EQ(infer(OpKind::BatchNormGammaGrad, {f32({2, 3, 4}), f32({2, 3, 4})}), f32({3}));
  EXPECT_EQ(infer(OpKind::BatchNormUpdate, {f32({3}), f32({3}), f32({2, 3, 4})}), f32({3}));
  EXPECT_EQ(ruleError(OpKind::BatchNormUpdate, {f32({3}), f32({4}), f32({2, 3, 4})}),
            "batch_norm_update operand 'running_var' must be f32[3] (x's channel axis): shape "
            "mismatch: f32[2,3,4] x f32[4]");
}

TEST(ShapeRule, Optimizers) {
  EXPECT_EQ(infer(OpKind::SgdUpdate, {f32({2, 3}), f32({2, 3})}, {{"lr", 0.1}}), f32({2, 3}));
  EXPECT_EQ(infer(OpKind::SgdUpdate, {f32({2, 3}), f32({2, 3}), f32({2, 3}), f32({1})},
                  {{"lr", 0.1}, {"momentum", 0.9}}),
            f32({2, 3}));
  EXPECT_EQ(ruleError(OpKind::SgdUpdate, {f32({2, 3}), f32({2, 3})},
                      {{"lr", 0.1}, {"momentum", 0.9}}),
            "sgd_update with momentum needs operands momentum_buf and step");
  EXPECT_NE(ruleError(OpKind::SgdUpdate, {f32({2, 3}), f32({2, 3}), f32({2, 3})}, {{"lr", 0.1}}),
            "");
  EXPECT_EQ(ruleError(OpKind::SgdUpdate, {f32({2, 3}), f32({3, 2})}, {{"lr", 0.1}}),
            "sgd_update operand 'grad' must match the parameter: shape mismatch: f32[2,3] x "
            "f32[3,2]");
  EXPECT_EQ(ruleError(OpKind::SgdUpdate, {f32({2}), f32({2})}),
            "missing required attribute 'lr' for op 'sgd_update'");
  EXPECT_EQ(infer(OpKind::AdamUpdate, {f32({4}), f32({4}), f32({4}), f32({4}), f32({1})},
                  {{"lr", 0.001}}),
            f32({4}));
  EXPECT_EQ(ruleError(OpKind::AdamUpdate, {f32({4}), f32({4}), f32({4}), f32({4}), f32({})},
                      {{"lr", 0.001}}),
            "adam_update operand 'step' must be f32[1], got f32[]");
  EXPECT_EQ(ruleError(OpKind::AdamUpdate, {f32({4}), f32({4}), f32({5}), f32({4}), f32({1})},
                      {{"lr", 0.001}}),
            "adam_update operand 'm' must match the parameter: shape mismatch: f32[4] x f32[5]");
}

TEST(ShapeRule, Conv2d) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(infer(OpKind::Conv2d, {f32({2, 3, 5, 5}), f32({4, 3, 3, 3})}), f32({2, 4, 3, 3}));
  // OH = floor((H + 2 ph - dh (KH - 1) - 1) / sh) + 1 = floor((7 + 2 - 4 - 1) / 2) + 1 = 3
  EXPECT_EQ(infer(OpKind::Conv2d, {f32({1, 4, 7, 8}), f32({6, 2, 3, 3}), f32({6})},
                  {{"stride", V{2, 3}}, {"padding", V{1, 0}}, {"dilation", V{2, 1}},
                   {"groups", int64_t(2)}}),
            f32({1, 6, 3, 2}));
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({2, 3, 5, 5}), f32({4, 2, 3, 3})}),
            "conv2d channel mismatch: x has C = 3 channels, so w needs C/groups = 3 on axis 1 "
            "(groups = 1): x f32[2,3,5,5], w f32[4,2,3,3]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({2, 3, 5, 5}), f32({4, 1, 3, 3})},
                      {{"groups", int64_t(2)}}),
            "conv2d input channels C = 3 are not divisible by groups = 2: x f32[2,3,5,5], "
            "w f32[4,1,3,3]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({2, 4, 5, 5}), f32({3, 2, 3, 3})},
                      {{"groups", int64_t(2)}}),
            "conv2d output channels O = 3 are not divisible by groups = 2: x f32[2,4,5,5], "
            "w f32[3,2,3,3]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"dilation", V{2, 2}}}),
            "conv2d kernel 5x5 (dilated) is larger than the padded input 4x4: x f32[1,1,4,4], "
            "w f32[1,1,3,3]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"stride", V{0, 1}}}),
            "conv2d stride [0,1] must be positive");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"dilation", V{1, -1}}}),
            "conv2d dilation [1,-1] must be positive");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"padding", V{-1, 0}}}),
            "conv2d padding [-1,0] must be non-negative");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"stride", V{2}}}),
            "conv2d stride must have 2 values (height, width), got [2]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"groups", int64_t(0)}}),
            "conv2d groups must be in [1, 1048576], got 0");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({1, 1, 3, 3})},
                      {{"padding", V{0, int64_t(1) << 40}}}),
            "conv2d padding [0,1099511627776] exceeds 1048576");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 4, 4}), f32({1, 1, 3, 3})}),
            "conv2d operand 'x' must be f32 of rank 4 (N,C,H,W), got f32[1,4,4]");
  EXPECT_EQ(ruleError(OpKind::Conv2d, {f32({1, 1, 4, 4}), f32({2, 1, 3, 3}), f32({1})}),
            "conv2d operand 'b' must be f32[2] (the output channels of w f32[2,1,3,3]), got "
            "f32[1]");
  EXPECT_EQ(infer(OpKind::Conv2dGradInput, {f32({2, 4, 3, 3}), f32({4, 3, 3, 3})},
                  {{"input_size", V{5, 5}}}),
            f32({2, 3, 5, 5}));
  EXPECT_EQ(ruleError(OpKind::Conv2dGradInput, {f32({2, 4, 3, 2}), f32({4, 3, 3, 3})},
                      {{"input_size", V{5, 5}}}),
            "conv2d_grad_input operand 'dy' f32[2,4,3,2] does not match the conv2d result "
            "f32[2,4,3,3] of x f32[2,3,5,5] and w f32[4,3,3,3]");
  EXPECT_EQ(infer(OpKind::Conv2dGradWeight, {f32({2, 4, 5, 5}), f32({2, 6, 3, 3})},
                  {{"kernel_size", V{3, 3}}, {"groups", int64_t(2)}}),
            f32({6, 2, 3, 3}));
  EXPECT_EQ(ruleError(OpKind::Conv2dGradWeight, {f32({2, 4, 5, 5}), f32({1, 6, 3, 3})},
                      {{"kernel_size", V{3, 3}}}),
            "conv2d_grad_weight operand 'dy' f32[1,6,3,3] does not match the conv2d result "
            "f32[2,6,3,3] of x f32[2,4,5,5] and w f32[6,4,3,3]");
}

TEST(ShapeRule, Pools) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({2, 3, 5, 5})}, {{"kernel", V{2, 2}}}),
            f32({2, 3, 2, 2}));
  EXPECT_EQ(infer(OpKind::MaxPool2d, {f32({2, 3, 5, 5})},
                  {{"kernel", V{2, 2}}, {"ceil_mode", true}}),
            f32({2, 3, 3, 3}));
  // ceil_mode: ceil((5 + 2 - 2) / 2) + 1 = 4, but window 3 would start at
  // 3 * 2 - 1 = 5, in the right padding: dropped, as PyTorch does.
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({1, 1, 5, 5})},
                  {{"kernel", V{2, 2}}, {"padding", V{1, 1}}, {"ceil_mode", true}}),
            f32({1, 1, 3, 3}));
  EXPECT_EQ(infer(OpKind::AvgPool2d, {f32({1, 1, 7, 6})},
                  {{"kernel", V{3, 2}}, {"stride", V{1, 2}}}),
            f32({1, 1, 5, 3}));
  EXPECT_EQ(ruleError(OpKind::MaxPool2d, {f32({1, 1, 5, 5})},
                      {{"kernel", V{3, 3}}, {"padding", V{2, 1}}}),
            "max_pool2d padding [2,1] must be at most half the kernel [3,3]");
  EXPECT_EQ(ruleError(OpKind::MaxPool2d, {f32({1, 1, 2, 5})}, {{"kernel", V{3, 3}}}),
            "max_pool2d kernel [3,3] is larger than the padded input 2x5 of x f32[1,1,2,5]");
  EXPECT_EQ(ruleError(OpKind::AvgPool2d, {f32({1, 1, 5, 5})},
                      {{"kernel", V{2, 2}}, {"stride", V{0, 2}}}),
            "avg_pool2d stride [0,2] must be positive ([] = kernel)");
  EXPECT_EQ(ruleError(OpKind::AvgPool2d, {f32({5, 5})}, {{"kernel", V{2, 2}}}),
            "avg_pool2d operand 'x' must be f32 of rank 4 (N,C,H,W), got f32[5,5]");
  EXPECT_EQ(ruleError(OpKind::MaxPool2dGrad, {f32({1, 1, 4, 4}), f32({1, 1, 3, 2})},
                      {{"kernel", V{2, 2}}}),
            "max_pool2d_grad operand 'dy' f32[1,1,3,2] does not match the pooled result "
            "f32[1,1,2,2] of x f32[1,1,4,4]");
  EXPECT_EQ(infer(OpKind::AvgPool2dGrad, {f32({1, 2, 2, 2})},
                  {{"kernel", V{2, 2}}, {"input_size", V{5, 4}}}),
            f32({1, 2, 5, 4}));
  EXPECT_EQ(infer(OpKind::GlobalAvgPool2d, {f32({2, 3, 4, 5})}), f32({2, 3, 1, 1}));
  EXPECT_EQ(ruleError(OpKind::GlobalAvgPool2d, {f32({2, 3, 0, 5})}),
            "global_avg_pool2d operand 'x' must be f32 of rank 4 (N,C,H,W) with H, W >= 1, got "
            "f32[2,3,0,5]");
}

TEST(ShapeRule, Flatten) {
  EXPECT_EQ(infer(OpKind::Flatten, {f32({2, 3, 4, 5})}), f32({2, 60}));
  EXPECT_EQ(infer(OpKind::Flatten, {f32({7, 3})}), f32({7, 3}));
  EXPECT_EQ(infer(OpKind::Flatten, {i32({2, 2, 2})}), i32({2, 4}));
  EXPECT_EQ(ruleError(OpKind::Flatten, {f32({5})}),
            "flatten needs x of rank >= 2 ([N, ...]), got f32[5]");
}

TEST(ShapeRule, Attention) {
  using S = std::string;
  const TensorType q = f32({2, 5, 4}), k = f32({2, 7, 4}), v = f32({2, 7, 3});
  EXPECT_EQ(infer(OpKind::Attention, {q, k, v}), f32({2, 5, 3}));
  EXPECT_EQ(ruleError(OpKind::Attention, {q, f32({2, 7, 3}), v}),
            "attention needs q and k of one depth d (last axis), got f32[2,5,4], f32[2,7,3]");
  EXPECT_EQ(ruleError(OpKind::Attention, {q, k, f32({2, 6, 3})}),
            "attention needs k and v of one length S (axis -2), got f32[2,7,4], f32[2,6,3]");
  EXPECT_EQ(ruleError(OpKind::Attention, {q, f32({3, 7, 4}), v}),
            "attention needs the same leading axes in q, k and v, got f32[2,5,4], f32[3,7,4], "
            "f32[2,7,3]");
  EXPECT_EQ(ruleError(OpKind::Attention, {f32({4}), f32({4}), f32({4})}),
            "attention needs q, k and v of one rank >= 2 ([..., T, d], [..., S, d], [..., S, "
            "e]), got f32[4], f32[4], f32[4]");
  EXPECT_EQ(ruleError(OpKind::Attention, {q, k, v}, {{"scale", -1.0}}),
            "attention attribute 'scale' must be finite and >= 0 (0: 1/sqrt(d)), got -1.000000");
  EXPECT_EQ(ruleError(OpKind::Attention, {q, k, v}, {{"dropout_p", 1.0}}),
            "attention dropout_p must be in [0, 1), got 1.000000");
  EXPECT_EQ(ruleError(OpKind::Attention, {q, k, v},
                      {{"dropout_p", 0.1}, {"parts", int64_t(2)}, {"inner", int64_t(4)}}),
            "attention part 0 of 2 in runs of 4 does not fit its 70 masked elements (parts >= "
            "1, 0 <= part < parts, inner >= 1 dividing the elements)");
  // attention_grad: one operand's gradient, or the three packed.
  const TensorType dy = f32({2, 5, 3});
  EXPECT_EQ(infer(OpKind::AttentionGrad, {q, k, v, dy}, {{"wrt", S("k")}}), k);
  EXPECT_EQ(infer(OpKind::AttentionGrad, {q, k, v, dy}, {{"wrt", S("qkv")}}),
            f32({2, 1, 5 * 4 + 7 * 4 + 7 * 3}));
  EXPECT_EQ(ruleError(OpKind::AttentionGrad, {q, k, v, dy}, {{"wrt", S("x")}}),
            "attention_grad attribute 'wrt' must be q, k, v or qkv, got 'x'");
  EXPECT_EQ(ruleError(OpKind::AttentionGrad, {q, k, v, f32({2, 5, 4})}),
            "attention_grad operand 'dy' must have attention's shape [2,5,3], got f32[2,5,4]");
}

} // namespace
} // namespace mpc::ir
