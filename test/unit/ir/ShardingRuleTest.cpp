//===- test/unit/ir/ShardingRuleTest.cpp - sharding rules, proven sound ---===//
//
// Every op's sharding rule (ops::OpSchema::shard, ops/Layout.h) against its
// float64 reference kernel: for every case of the op table and every
// combination of operand layouts (R, P and each S(d) that divides), the rule
// names the layouts it needs and its result's; the test then runs the op on
// each of t = 2 devices' parts in those layouts (P as random parts that sum
// to the operand) and checks that the parts make the whole result: equal on
// every device for R, joined along d for S(d), summed for P. A rule that
// let a non-linear op read a partial sum, or split a normalised axis, or
// reshaped a split into the wrong blocks, fails here.
//
//===----------------------------------------------------------------------===//
#include "ops/Layout.h"
#include "ops/OpSchema.h"
#include "support/Error.h"
#include "test/unit/ir/OpCases.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mpc::ir {
namespace {

using ops::Layout;
constexpr int64_t kParts = 2;

/// Part i of `t` along `axis` (t's shape divisible there).
RefTensor partOf(const RefTensor &t, int axis, int64_t i) {
  Shape s = t.shape;
  const int64_t len = s[size_t(axis)] / kParts;
  s[size_t(axis)] = len;
  RefTensor out(s);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (int(d) < axis) outer *= t.shape[d];
    if (int(d) > axis) inner *= t.shape[d];
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len * inner; ++k)
      out.data[size_t(o * len * inner + k)] =
          t.data[size_t((o * kParts + i) * len * inner + k)];
  return out;
}

/// The parts of `parts` joined along `axis`.
RefTensor joined(const std::vector<RefTensor> &parts, int axis) {
  Shape s = parts[0].shape;
  const int64_t len = s[size_t(axis)];
  s[size_t(axis)] *= kParts;
  RefTensor out(s);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (int(d) < axis) outer *= s[d];
    if (int(d) > axis) inner *= s[d];
  }
  for (int64_t i = 0; i < kParts; ++i)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < len * inner; ++k)
        out.data[size_t((o * kParts + i) * len * inner + k)] =
            parts[size_t(i)].data[size_t(o * len * inner + k)];
  return out;
}

/// Every layout an operand of type `t` may have.
std::vector<Layout> candidates(const TensorType &t) {
  std::vector<Layout> out{Layout::r()};
  if (t.dtype == DType::F32) out.push_back(Layout::p());
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] % kParts == 0 && t.shape[d] >= kParts) out.push_back(Layout::s(int(d)));
  return out;
}

double maxAbs(const RefTensor &t) {
  double m = 0;
  for (double v : t.data) m = std::max(m, std::fabs(v));
  return m;
}

/// Whether `got` equals `want` to float64 rounding.
::testing::AssertionResult close(const RefTensor &got, const RefTensor &want) {
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << "shape " << shapeText(got.shape) << " vs "
                                         << shapeText(want.shape);
  const double tol = 1e-9 * std::max(1.0, maxAbs(want));
  for (size_t k = 0; k < got.data.size(); ++k)
    if (!(std::fabs(got.data[k] - want.data[k]) <= tol))
      return ::testing::AssertionFailure() << "element " << k << ": " << got.data[k] << " vs "
                                           << want.data[k];
  return ::testing::AssertionSuccess();
}

class ShardingRuleCase : public ::testing::TestWithParam<const opcases::OpCase *> {};

TEST_P(ShardingRuleCase, PartsMakeTheWholeResult) {
  const opcases::OpCase &c = *GetParam();
  const ops::OpSchema &schema = ops::schema(c.kind);
  if (schema.has(ops::kCollective)) GTEST_SKIP() << "collectives are members, not ops on parts";
  const AttrMap attrs = opcases::fullAttrs(c);
  if (schema.mask.probability && getInt(attrs, "parts") != 1) // dropout, attention
    GTEST_SKIP() << "already one device's part of a split whole";
  const TensorType result = opcases::resultType(c);
  std::vector<RefTensor> whole = opcases::makeInputs(c, 7);
  std::vector<RefTensor> scratch = whole;
  const RefTensor want = opcases::runReference(c, scratch);

  // Every combination of operand layouts (at most a few hundred).
  std::vector<std::vector<Layout>> options;
  for (const TensorType &t : c.operands) options.push_back(candidates(t));
  std::vector<size_t> pick(options.size(), 0);
  int tried = 0;
  for (bool more = true; more && tried < 400; ++tried) {
    std::vector<Layout> layouts;
    for (size_t k = 0; k < options.size(); ++k) layouts.push_back(options[k][pick[k]]);
    for (size_t k = 0; k <= pick.size(); ++k) {
      if (k == pick.size()) {
        more = false;
        break;
      }
      if (++pick[k] < options[k].size()) break;
      pick[k] = 0;
    }
    ops::ShardQuery q{c.operands, layouts, result, attrs, kParts};
    ops::ShardResult rule = schema.shard ? schema.shard(q) : ops::replicatedRule(q);
    std::string asked;
    for (const Layout &l : layouts) asked += l.str() + " ";
    SCOPED_TRACE("asked with " + asked + "-> needs " + [&] {
      std::string s;
      for (const Layout &l : rule.operands) s += l.str() + " ";
      return s + "gives " + rule.result.str();
    }());
    ASSERT_EQ(rule.operands.size(), c.operands.size());

    // Each device's operands in the layouts the rule needs.
    std::vector<std::vector<RefTensor>> local(kParts);
    opcases::OpCase lc = c;
    lc.attrs = rule.localAttrs.empty() ? attrs : rule.localAttrs;
    for (size_t k = 0; k < c.operands.size(); ++k) {
      const Layout &l = rule.operands[k];
      ASSERT_TRUE(!l.partial() || c.operands[k].dtype == DType::F32) << "an i32 operand as P";
      lc.operands[k] = ops::localType(c.operands[k], l, kParts);
      for (int64_t i = 0; i < kParts; ++i) {
        if (l.split()) {
          local[size_t(i)].push_back(partOf(whole[k], l.axis, i));
        } else if (l.partial()) {
          // Random parts that sum to the operand.
          RefTensor p = whole[k];
          for (size_t e = 0; e < p.data.size(); ++e) {
            double r = std::sin(double(e) * 1.7 + double(k)) * 0.75;
            p.data[e] = i == 0 ? whole[k].data[e] - r : r;
          }
          local[size_t(i)].push_back(p);
        } else {
          local[size_t(i)].push_back(whole[k]);
        }
      }
    }
    std::vector<RefTensor> got;
    for (int64_t i = 0; i < kParts; ++i) {
      if (!rule.memberAttr.empty()) lc.attrs[rule.memberAttr] = i;
      got.push_back(opcases::runReference(lc, local[size_t(i)]));
    }
    ASSERT_EQ(got[0].shape, ops::localType(result, rule.result, kParts).shape);
    if (rule.result.split()) {
      EXPECT_TRUE(close(joined(got, rule.result.axis), want));
    } else if (rule.result.partial()) {
      RefTensor sum = got[0];
      for (size_t e = 0; e < sum.data.size(); ++e) sum.data[e] += got[1].data[e];
      EXPECT_TRUE(close(sum, want));
    } else {
      for (const RefTensor &g : got) EXPECT_TRUE(close(g, want));
    }
    if (::testing::Test::HasFailure()) return;
  }
}

std::vector<const opcases::OpCase *> allCases() {
  std::vector<const opcases::OpCase *> out;
  for (const opcases::OpCase &c : opcases::allOpCases()) out.push_back(&c);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOps, ShardingRuleCase, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<const opcases::OpCase *> &info) {
                           return info.param->name();
                         });

TEST(ShardingRule, MegatronLayersNeedNoWeightGathered) {
  // Column layer: x R @ w S(1) -> S(1); row layer: a S(1) @ w S(0) -> P.
  std::vector<TensorType> col{{DType::F32, {4, 8}}, {DType::F32, {8, 6}}};
  std::vector<Layout> colIn{Layout::r(), Layout::s(1)};
  AttrMap mm{{"transpose_a", false}, {"transpose_b", false}};
  TensorType colOut{DType::F32, {4, 6}};
  ops::ShardResult r = ops::schema(OpKind::MatMul).shard({col, colIn, colOut, mm, 2});
  EXPECT_EQ(r.result, Layout::s(1));
  EXPECT_EQ(r.operands, colIn);
  std::vector<TensorType> row{{DType::F32, {4, 6}}, {DType::F32, {6, 8}}};
  std::vector<Layout> rowIn{Layout::s(1), Layout::s(0)};
  TensorType rowOut{DType::F32, {4, 8}};
  r = ops::schema(OpKind::MatMul).shard({row, rowIn, rowOut, mm, 2});
  EXPECT_EQ(r.result, Layout::p());
  EXPECT_EQ(r.operands, rowIn);
  // q/k/v split by columns become split by heads.
  std::vector<TensorType> qkv{{DType::F32, {2, 3, 8}}};
  std::vector<Layout> split{Layout::s(2)};
  TensorType heads{DType::F32, {2, 3, 4, 2}};
  r = ops::schema(OpKind::Reshape).shard({qkv, split, heads, {{"shape", Shape{2, 3, 4, 2}}}, 2});
  EXPECT_EQ(r.result, Layout::s(2));
  EXPECT_EQ(std::get<std::vector<int64_t>>(r.localAttrs.at("shape")), (Shape{2, 3, 2, 2}));
}

TEST(ShardingRule, LayoutsPrintAndParse) {
  for (Layout l : {Layout::r(), Layout::p(), Layout::s(0), Layout::s(12)}) {
    Layout back;
    ASSERT_TRUE(ops::parseLayout(l.str(), back)) << l.str();
    EXPECT_EQ(back, l);
  }
  Layout ignored;
  for (const char *bad : {"", "S", "S()", "S(-1)", "S(1", "Q", "S(99)", "S(a)"})
    EXPECT_FALSE(ops::parseLayout(bad, ignored)) << bad;
}

} // namespace
} // namespace mpc::ir
