//===- test/unit/frontend/OnnxFoldTest.cpp - values folded at import ------===//
//
// frontend/onnx/Constant.h folds what an exporter computes from shapes and
// constants (a causal mask, a view's target shape). Each case here is an
// ONNX node on known inputs, its result written out by hand from the op's
// definition in the ONNX operator docs (numpy semantics); and the limits:
// integers past 2^53 and results past kMaxFoldElements are errors.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/Constant.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <onnx/defs/attr_proto_util.h>

namespace mpc::frontend::onnx {
namespace {

using ::onnx::NodeProto;

NodeProto node(const std::string &op, int inputs) {
  NodeProto n;
  n.set_op_type(op);
  for (int i = 0; i < inputs; ++i) n.add_input("in" + std::to_string(i));
  n.add_output("out");
  return n;
}

Const ints(std::vector<int64_t> shape, std::vector<double> v) { return {Const::Int, shape, v}; }
Const floats(std::vector<int64_t> shape, std::vector<double> v) { return {Const::Float, shape, v}; }

Const fold1(const NodeProto &n, std::vector<const Const *> in, int64_t opset = 17) {
  std::optional<std::vector<Const>> out = fold(n, opset, in);
  EXPECT_TRUE(out.has_value()) << n.op_type();
  return out ? out->at(0) : Const{};
}

TEST(OnnxFold, GatherConcatUnsqueezeMakeAViewShape) {
  // x.view(x.size(0), -1): Shape -> Gather(0) -> Unsqueeze -> Concat with [-1].
  Const shape = ints({3}, {6, 4, 5});
  Const zero = ints({}, {0});
  Const d0 = fold1(node("Gather", 2), {&shape, &zero});
  EXPECT_EQ(d0.shape, std::vector<int64_t>{});
  EXPECT_EQ(d0.values, std::vector<double>{6});
  Const axes = ints({1}, {0});
  Const u = fold1(node("Unsqueeze", 2), {&d0, &axes});
  EXPECT_EQ(u.shape, std::vector<int64_t>{1});
  Const minus1 = ints({1}, {-1});
  Const target = fold1(node("Concat", 2), {&u, &minus1});
  EXPECT_EQ(target.values, (std::vector<double>{6, -1}));
  Const x = floats({6, 4, 5}, std::vector<double>(120, 1.0));
  Const r = fold1(node("Reshape", 2), {&x, &target});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{6, 20}));
}

TEST(OnnxFold, TriluAndWhereMakeACausalMask) {
  Const ones = floats({3, 3}, std::vector<double>(9, 1.0));
  NodeProto tril = node("Trilu", 1);
  *tril.add_attribute() = ::onnx::MakeAttribute("upper", int64_t(0));
  Const lower = fold1(tril, {&ones});
  EXPECT_EQ(lower.values, (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  Const zero = floats({}, {0});
  Const keep = fold1(node("Equal", 2), {&lower, &zero});
  EXPECT_EQ(keep.kind, Const::Bool);
  Const inf = floats({}, {-1e9}), z = floats({}, {0});
  Const mask = fold1(node("Where", 3), {&keep, &inf, &z});
  EXPECT_EQ(mask.values, (std::vector<double>{0, -1e9, -1e9, 0, 0, -1e9, 0, 0, 0}));
}

TEST(OnnxFold, SliceWithNegativeStepsAndClampedEnds) {
  Const x = ints({5}, {0, 1, 2, 3, 4});
  Const starts = ints({1}, {-1}), ends = ints({1}, {-100}), axes = ints({1}, {0}), steps = ints({1}, {-2});
  Const r = fold1(node("Slice", 5), {&x, &starts, &ends, &axes, &steps});
  EXPECT_EQ(r.values, (std::vector<double>{4, 2, 0}));
  Const s2 = ints({1}, {1}), e2 = ints({1}, {1000});
  Const r2 = fold1(node("Slice", 3), {&x, &s2, &e2});
  EXPECT_EQ(r2.values, (std::vector<double>{1, 2, 3, 4}));
}

TEST(OnnxFold, RangeExpandConstantOfShapeAndTranspose) {
  Const start = ints({}, {1}), limit = ints({}, {7}), delta = ints({}, {2});
  Const r = fold1(node("Range", 3), {&start, &limit, &delta});
  EXPECT_EQ(r.values, (std::vector<double>{1, 3, 5}));
  Const col = ints({3, 1}, {1, 2, 3}), shape = ints({2}, {3, 2});
  Const e = fold1(node("Expand", 2), {&col, &shape});
  EXPECT_EQ(e.values, (std::vector<double>{1, 1, 2, 2, 3, 3}));
  Const dims = ints({2}, {2, 3});
  Const c = fold1(node("ConstantOfShape", 1), {&dims});
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.values, std::vector<double>(6, 0.0));
  Const m = ints({2, 3}, {1, 2, 3, 4, 5, 6});
  Const t = fold1(node("Transpose", 1), {&m});
  EXPECT_EQ(t.values, (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(OnnxFold, ArithmeticRoundsFloatsAndTruncatesIntegers) {
  Const a = ints({}, {7}), b = ints({}, {-2});
  EXPECT_EQ(fold1(node("Div", 2), {&a, &b}).values, std::vector<double>{-3});
  Const x = floats({}, {1}), y = floats({}, {3});
  EXPECT_EQ(fold1(node("Div", 2), {&x, &y}).values, std::vector<double>{double(1.0f / 3.0f)});
  Const zero = ints({}, {0});
  EXPECT_THROW(fold(node("Div", 2), 17, {&a, &zero}), RuleError);
}

TEST(OnnxFold, OutOfRangeIntegersAndHugeResultsAreErrors) {
  Const big = ints({2}, {9.3e18, 1});
  EXPECT_THROW(fold(node("ConstantOfShape", 1), 17, {&big}), RuleError);
  Const huge = ints({2}, {1 << 20, 1 << 20});
  EXPECT_THROW(fold(node("ConstantOfShape", 1), 17, {&huge}), RuleError);
  Const start = floats({}, {0}), limit = floats({}, {1e12}), delta = floats({}, {1});
  EXPECT_THROW(fold(node("Range", 3), 17, {&start, &limit, &delta}), RuleError);
  EXPECT_THROW(toInt(std::nan("")), RuleError);
}

TEST(OnnxFold, OpsMpcComputesAreNotFolded) {
  Const x = floats({2}, {1, 2});
  EXPECT_FALSE(fold(node("Relu", 1), 17, {&x}).has_value());
  EXPECT_FALSE(foldable("MatMul"));
  EXPECT_TRUE(foldable("Shape") || foldable("Gather"));
}

} // namespace
} // namespace mpc::frontend::onnx
