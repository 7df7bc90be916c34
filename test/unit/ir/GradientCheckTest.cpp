//===- test/unit/ir/GradientCheckTest.cpp - finite-difference checks ----===//
//
// Every gradient rule against central differences in float64. The output is
// scalarised as loss = sum(y * W) with a fixed random W, so the upstream
// gradient fed to the rules is W itself and transposition mistakes show.
// A small reverse-mode driver here (reverse topological order, summed
// contributions, reduceToShape for broadcast operands) evaluates the rules'
// gradient nodes with the Interpreter; the finite differences run the same
// graph's forward values through the Interpreter too.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "test/unit/ir/OpCases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace mpc::ir {
namespace {

using opcases::OpCase;

TensorType f32(Shape s) { return {DType::F32, std::move(s)}; }

/// Gradient nodes of sum(y * dOut) with respect to every f32 node that
/// reaches y, built with the op records' gradient rules.
std::map<const Node *, Node *> backprop(Graph &g, Node *y, Node *dOut) {
  std::vector<Node *> order = g.topoOrder();
  std::map<const Node *, Node *> grad;
  grad[y] = dOut;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node *n = *it;
    if (!n->isOp() || !grad.count(n)) continue;
    const OpInfo &info = n->info();
    if (!info.grad) {
      ADD_FAILURE() << "no gradient rule for " << n->describe();
      continue;
    }
    Builder b(g);
    b.device = n->device;
    b.namePrefix = n->name + ".grad";
    b.backward = true;
    b.origin = n->name;
    std::vector<Node *> gs = info.grad(b, *n, grad[n]);
    EXPECT_EQ(gs.size(), n->inputs.size()) << n->describe();
    for (size_t i = 0; i < gs.size() && i < n->inputs.size(); ++i) {
      Node *in = n->inputs[i];
      if (!gs[i] || in->type.dtype != DType::F32) continue;
      Node *r = b.reduceToShape(gs[i], in->type.shape);
      EXPECT_EQ(r->type, in->type) << "gradient of operand " << i << " of " << n->describe();
      grad[in] = grad.count(in) ? b.add(grad[in], r) : r;
    }
  }
  return grad;
}

/// sum((yp - ym) * w): the difference of the scalarised losses, taken
/// element by element so that large values that do not depend on the
/// perturbed input (causal_mask's -1e9) cancel exactly.
double weightedDifference(const RefTensor &yp, const RefTensor &ym, const RefTensor &w) {
  double s = 0;
  for (size_t i = 0; i < yp.data.size(); ++i) s += (yp.data[i] - ym.data[i]) * w.data[i];
  return s;
}

/// Compares d sum(y * W) / d leaf from the gradient rules with central
/// differences, for every f32 leaf in `feed` (at most `maxElems` sampled
/// elements each).
void checkGradients(Graph &g, Node *y, std::map<std::string, RefTensor> feed, double tol,
                    uint64_t seed = 7, size_t maxElems = 40,
                    const std::set<std::string> &constants = {}) {
  RefTensor w = opcases::randomTensor(y->type.shape, seed, -1.0, 1.0);
  Node *dOut = g.addInput("dy", y->type);
  std::map<const Node *, Node *> grads = backprop(g, y, dOut);
  feed["dy"] = w;
  Interpreter interp(g);
  std::map<std::string, RefTensor> values = interp.step(feed);

  for (auto &[name, value] : feed) {
    if (name == "dy") continue;
    Node *leaf = g.find(name);
    ASSERT_NE(leaf, nullptr);
    if (leaf->type.dtype != DType::F32) continue;
    if (constants.count(name)) {
      EXPECT_FALSE(grads.count(leaf)) << "'" << name << "' is a constant of the op";
      continue;
    }
    ASSERT_TRUE(grads.count(leaf)) << "no gradient reaches '" << name << "'";
    const RefTensor &analytic = values.at(grads.at(leaf)->name);
    ASSERT_EQ(analytic.shape, value.shape) << name;
    size_t n = value.data.size();
    size_t stride = std::max<size_t>(1, n / maxElems);
    for (size_t i = 0; i < n; i += stride) {
      std::map<std::string, RefTensor> plus = feed, minus = feed;
      double x = value.data[i];
      double h = 1e-6 * std::max(1.0, std::fabs(x));
      plus[name].data[i] = x + h;
      minus[name].data[i] = x - h;
      RefTensor yp = Interpreter(g).step(plus).at(y->name);
      RefTensor ym = Interpreter(g).step(minus).at(y->name);
      double fd = weightedDifference(yp, ym, w) / (2 * h);
      EXPECT_LE(opcases::errorOf(analytic.data[i], fd), tol)
          << "d/d " << name << "[" << i << "]: rule " << analytic.data[i] << ", fd " << fd;
    }
  }
}

bool differentiable(const OpCase &c) {
  const OpInfo &info = opInfo(c.kind);
  // In f32 only: a value rounded to bf16 or f16 is a step function, whose
  // finite differences say nothing (cast's rule is checked with to=f32).
  bool lowPrecision = ops::isLowPrecision(opcases::resultType(c).dtype);
  for (const TensorType &t : c.operands) lowPrecision |= ops::isLowPrecision(t.dtype);
  return info.grad && !c.operands.empty() && !info.has(kOptimizer) &&
         !info.has(kStopsGradient) && !lowPrecision;
}

class GradientCase : public ::testing::TestWithParam<const OpCase *> {};

TEST_P(GradientCase, MatchesFiniteDifferences) {
  const OpCase &c = *GetParam();
  Graph g;
  std::vector<Node *> ins;
  std::map<std::string, RefTensor> feed;
  std::vector<RefTensor> values = opcases::makeInputs(c);
  for (size_t i = 0; i < c.operands.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    Node *in = g.addInput(name, c.operands[i]);
    in->device = "cpu:0";
    ins.push_back(in);
    feed[name] = values[i];
  }
  Builder b(g);
  b.device = c.kind == OpKind::Copy ? "cpu:1" : "cpu:0";
  Node *y = b.create(c.kind, ins, c.attrs, "y");
  // batch_norm's running statistics (operands 3 and 4) are constants of the
  // step: its rule gives them no gradient, on purpose.
  std::set<std::string> constants;
  if (c.kind == OpKind::BatchNorm)
    for (size_t i = 3; i < c.operands.size(); ++i) constants.insert("x" + std::to_string(i));
  checkGradients(g, y, feed, c.gradTol, 7, 40, constants);
}

std::vector<const OpCase *> differentiableCases() {
  std::vector<const OpCase *> v;
  for (const OpCase &c : opcases::allOpCases())
    if (differentiable(c)) v.push_back(&c);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradientCase, ::testing::ValuesIn(differentiableCases()),
                         [](const auto &info) { return info.param->name(); });

TEST(GradientCheck, EveryDifferentiableOpIsChecked) {
  std::set<OpKind> checked;
  for (const OpCase *c : differentiableCases()) checked.insert(c->kind);
  for (const OpInfo &r : allOps())
    if (r.grad && r.maxArity() > 0 && !r.has(kStopsGradient)) {
      EXPECT_TRUE(checked.count(r.kind)) << "no gradient check for '" << r.name << "'";
    }
}

std::map<std::string, RefTensor> feedOf(std::initializer_list<std::pair<Node *, double>> xs) {
  std::map<std::string, RefTensor> feed;
  uint64_t seed = 100;
  for (auto [n, scale] : xs)
    feed[n->name] = opcases::randomTensor(n->type.shape, seed++, -scale, scale);
  return feed;
}

TEST(GradientCheck, SameValueUsedTwice) {
  Graph g;
  Node *x = g.addInput("x", f32({3, 4}));
  Builder b(g);
  Node *y = b.mul(x, x);
  checkGradients(g, y, feedOf({{x, 2.0}}), 1e-6);
}

TEST(GradientCheck, SquareMatrixTimesItsTranspose) {
  Graph g;
  Node *x = g.addInput("x", f32({3, 3}));
  Builder b(g);
  Node *y = b.matmul(x, x, /*transposeA=*/false, /*transposeB=*/true);
  checkGradients(g, y, feedOf({{x, 1.0}}), 1e-6);
}

TEST(GradientCheck, BroadcastOperandWithSeveralConsumers) {
  Graph g;
  Node *x = g.addInput("x", f32({3, 4}));
  Node *bias = g.addInput("bias", f32({4}));
  Node *col = g.addInput("col", f32({3, 1}));
  Builder b(g);
  Node *y = b.add(b.mul(b.sub(x, col), bias), b.div(bias, b.add(col, b.fill(3.0, {}))));
  checkGradients(g, y, feedOf({{x, 1.0}, {bias, 1.0}, {col, 1.0}}), 1e-6);
}

TEST(GradientCheck, DenseLayerWithMseLoss) {
  Graph g;
  Node *x = g.addInput("x", f32({5, 2}));
  Node *w = g.addInput("w", f32({2, 3}));
  Node *bias = g.addInput("bias", f32({3}));
  Node *t = g.addInput("t", f32({5, 3}));
  Builder b(g);
  Node *h = b.create(OpKind::Gelu, {b.add(b.matmul(x, w), bias)});
  Node *y = b.create(OpKind::MseLoss, {h, t});
  checkGradients(g, y, feedOf({{x, 1.0}, {w, 1.0}, {bias, 1.0}, {t, 1.0}}), 1e-6);
}

TEST(GradientCheck, ClassifierWithCrossEntropy) {
  Graph g;
  Node *x = g.addInput("x", f32({4, 3}));
  Node *w = g.addInput("w", f32({3, 5}));
  Node *labels = g.addInput("labels", {DType::I32, {4}});
  Builder b(g);
  Node *logits = b.create(OpKind::Tanh, {b.matmul(x, w)});
  Node *y = b.create(OpKind::SoftmaxCrossEntropy, {logits, labels});
  auto feed = feedOf({{x, 1.0}, {w, 1.0}});
  feed["labels"] = RefTensor({4});
  feed["labels"].data = {0, 4, 2, 2};
  checkGradients(g, y, feed, 1e-6);
}

TEST(GradientCheck, SoftmaxThenLogThroughReductions) {
  Graph g;
  Node *x = g.addInput("x", f32({2, 3, 4}));
  Builder b(g);
  Node *s = b.create(OpKind::Softmax, {x}, {{"axis", int64_t(1)}});
  Node *l = b.create(OpKind::Log, {s});
  Node *m = b.create(OpKind::Mean, {l}, {{"axes", std::vector<int64_t>{0, 2}}});
  Node *y = b.transpose(b.reshape(b.broadcastTo(m, {2, 3}), {3, 2}), {});
  checkGradients(g, y, feedOf({{x, 2.0}}), 1e-6);
}

TEST(GradientCheck, CausalSelfAttentionBlock) {
  // embedding -> layer_norm -> batched projections (rank 3 x rank 2) ->
  // scores q k^T (rank 3 x rank 3) -> causal_mask -> softmax -> context ->
  // concat of heads -> gelu (tanh) -> per-position cross-entropy with an
  // ignored position.
  Graph g;
  const int64_t b_ = 2, t_ = 3, v_ = 5, d_ = 4;
  Node *ids = g.addInput("ids", {DType::I32, {b_, t_}});
  Node *labels = g.addInput("labels", {DType::I32, {b_, t_}});
  Node *table = g.addInput("table", f32({v_, d_}));
  Node *gamma = g.addInput("gamma", f32({d_}));
  Node *beta = g.addInput("beta", f32({d_}));
  Node *wq = g.addInput("wq", f32({d_, 2}));
  Node *wk = g.addInput("wk", f32({2, d_}));
  Node *wv = g.addInput("wv", f32({d_, 2}));
  Node *wo = g.addInput("wo", f32({d_, v_}));
  Builder b(g);
  Node *h = b.create(OpKind::LayerNorm, {b.create(OpKind::Embedding, {ids, table}), gamma, beta});
  Node *q = b.matmul(h, wq);
  Node *k = b.matmul(h, wk, false, true);
  Node *v = b.matmul(h, wv);
  Node *scores = b.scale(b.matmul(q, k, false, true), 0.5);
  Node *p = b.create(OpKind::Softmax, {b.create(OpKind::CausalMask, {scores})});
  Node *ctx = b.matmul(p, v);
  Node *heads = b.concat({ctx, b.slice(h, 2, 1, 3)}, 2);
  Node *act = b.create(OpKind::Gelu, {heads}, {{"approximate", std::string("tanh")}});
  Node *logits = b.matmul(act, wo);
  Node *y = b.create(OpKind::SoftmaxCrossEntropy, {logits, labels}, {{"ignore_index", int64_t(0)}});
  auto feed = feedOf({{table, 1.0}, {gamma, 1.0}, {beta, 1.0}, {wq, 1.0}, {wk, 1.0},
                      {wv, 1.0}, {wo, 1.0}});
  feed["ids"] = RefTensor({b_, t_});
  feed["ids"].data = {1, 3, 1, 4, 0, 4};
  feed["labels"] = RefTensor({b_, t_});
  feed["labels"].data = {2, 0, 4, 1, 3, 1};
  checkGradients(g, y, feed, 1e-6);
}

TEST(GradientRule, BatchedTimesMatrixFoldsTheWeightGradient) {
  // dB of a [2,3,4] x b [4,5] is one rank-2 product of the folded operands,
  // f32[6,4]^T x f32[6,5], not a batched product and a sum.
  for (bool tb : {false, true}) {
    Graph g;
    Node *x = g.addInput("x", f32({2, 3, 4}));
    Node *w = g.addInput("w", f32(tb ? Shape{5, 4} : Shape{4, 5}));
    Builder b(g);
    Node *y = b.matmul(x, w, false, tb);
    Node *dy = g.addInput("dy", y->type);
    std::vector<Node *> gs = y->info().grad(b, *y, dy);
    ASSERT_EQ(gs.size(), 2u);
    EXPECT_EQ(gs[0]->type, x->type);
    EXPECT_EQ(gs[1]->type, w->type);
    ASSERT_TRUE(gs[1]->isOp(OpKind::MatMul));
    ASSERT_EQ(gs[1]->inputs.size(), 2u);
    EXPECT_EQ(gs[1]->inputs[0]->type.shape, (Shape{6, tb ? 5 : 4}));
    EXPECT_EQ(gs[1]->inputs[1]->type.shape, (Shape{6, tb ? 4 : 5}));
    for (const auto &n : g.nodes()) EXPECT_FALSE(n->isOp(OpKind::Sum)) << n->name;
  }
}

TEST(GradientRule, SliceGradientIsOneConcat) {
  Graph g;
  Node *x = g.addInput("x", f32({2, 6}));
  Builder b(g);
  Node *s = b.slice(x, 1, 2, 4);
  Node *dy = g.addInput("dy", s->type);
  std::vector<Node *> gs = s->info().grad(b, *s, dy);
  ASSERT_EQ(gs.size(), 1u);
  ASSERT_TRUE(gs[0]->isOp(OpKind::Concat));
  EXPECT_EQ(gs[0]->inputs.size(), 3u);
  EXPECT_EQ(gs[0]->inputs[1], dy);
  EXPECT_EQ(gs[0]->type, x->type);
}

/// A small deterministic generator for random shapes.
struct ShapeRng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }
};

TEST(GradientCheck, RandomBroadcastShapesWithFixedSeed) {
  ShapeRng rng{2024};
  const OpKind kinds[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div};
  for (int trial = 0; trial < 24; ++trial) {
    Shape out(size_t(rng.below(4)));
    for (int64_t &d : out) d = 1 + rng.below(4);
    // Each operand: a suffix of `out` with some dims set to 1.
    auto operandShape = [&] {
      Shape s(out.begin() + long(rng.below(int64_t(out.size()) + 1)), out.end());
      for (int64_t &d : s)
        if (rng.below(3) == 0) d = 1;
      return s;
    };
    Graph g;
    Node *a = g.addInput("a", f32(operandShape()));
    Node *bb = g.addInput("b", f32(operandShape()));
    Builder b(g);
    OpKind k = kinds[trial % 4];
    Node *y = b.create(k, {a, bb});
    SCOPED_TRACE(std::string(opInfo(k).name) + " " + a->type.str() + " x " + bb->type.str());
    auto feed = feedOf({{a, 2.0}, {bb, 2.0}});
    if (k == OpKind::Div)
      for (double &v : feed["b"].data) v = v < 0 ? v - 0.5 : v + 0.5;
    checkGradients(g, y, feed, 1e-6, uint64_t(trial));
  }
}

TEST(GradientCheck, RandomMatMulsAndReductionsWithFixedSeed) {
  ShapeRng rng{77};
  for (int trial = 0; trial < 12; ++trial) {
    int64_t m = 1 + rng.below(4), k = 1 + rng.below(4), n = 1 + rng.below(4);
    bool ta = rng.below(2), tb = rng.below(2);
    Graph g;
    Node *a = g.addInput("a", f32(ta ? Shape{k, m} : Shape{m, k}));
    Node *w = g.addInput("w", f32(tb ? Shape{n, k} : Shape{k, n}));
    Builder b(g);
    Node *h = b.matmul(a, w, ta, tb);
    std::vector<int64_t> axes;
    if (rng.below(2)) axes.push_back(rng.below(2) ? 0 : -1);
    bool keep = rng.below(2);
    Node *y = b.create(trial % 2 ? OpKind::Mean : OpKind::Sum, {h},
                       {{"axes", axes}, {"keepdims", keep}});
    SCOPED_TRACE(a->type.str() + " x " + w->type.str() + (ta ? " ta" : "") + (tb ? " tb" : ""));
    checkGradients(g, y, feedOf({{a, 1.0}, {w, 1.0}}), 1e-6, uint64_t(trial));
  }
}

TEST(GradientRule, CopyGradientIsACopyBackToTheSourceDevice) {
  Graph g;
  Node *z = g.addInput("z1", f32({4, 2}));
  z->device = "cpu:0";
  Builder b(g);
  b.device = "gpu:1";
  Node *c = b.copyTo(z, "gpu:1", "z1.to.gpu1");
  Node *dOut = g.addInput("z1.to.gpu1.grad", c->type);
  dOut->device = "gpu:1";
  std::vector<Node *> gs = c->info().grad(b, *c, dOut);
  ASSERT_EQ(gs.size(), 1u);
  ASSERT_NE(gs[0], nullptr);
  EXPECT_TRUE(gs[0]->isOp(OpKind::Copy));
  EXPECT_EQ(gs[0]->device, "cpu:0");
  EXPECT_EQ(gs[0]->name, "z1.to.gpu1.grad.to.cpu0");
  ASSERT_EQ(gs[0]->inputs.size(), 1u);
  EXPECT_EQ(gs[0]->inputs[0], dOut);
  EXPECT_EQ(gs[0]->type, z->type);
}

TEST(GradientRule, StopGradientAndLabelsGetNone) {
  Graph g;
  Node *x = g.addInput("x", f32({4, 3}));
  Node *labels = g.addInput("labels", {DType::I32, {4}});
  Builder b(g);
  Node *s = b.create(OpKind::StopGradient, {x});
  Node *dy = g.addInput("dy", s->type);
  EXPECT_EQ(s->info().grad(b, *s, dy), (std::vector<Node *>{nullptr}));
  Node *loss = b.create(OpKind::SoftmaxCrossEntropy, {x, labels});
  Node *dl = g.addInput("dl", loss->type);
  std::vector<Node *> gs = loss->info().grad(b, *loss, dl);
  ASSERT_EQ(gs.size(), 2u);
  ASSERT_NE(gs[0], nullptr);
  EXPECT_TRUE(gs[0]->isOp(OpKind::SoftmaxCrossEntropyGrad));
  EXPECT_EQ(gs[1], nullptr);
}

TEST(GradientRule, FillHasNoOperandsAndNoGradients) {
  Graph g;
  Builder b(g);
  Node *f = b.fill(2.0, {2, 2});
  Node *dy = g.addInput("dy", f->type);
  ASSERT_NE(f->info().grad, nullptr);
  EXPECT_TRUE(f->info().grad(b, *f, dy).empty());
}

TEST(GradientRule, UsesTheBuildersDeviceAndPrefix) {
  Graph g;
  Node *x = g.addInput("x", f32({2, 2}));
  Builder fwd(g);
  Node *y = fwd.create(OpKind::Sigmoid, {x}, {}, "y");
  Node *dy = g.addInput("dy", y->type);
  Builder b(g);
  b.device = "gpu:2";
  b.namePrefix = "y.grad";
  std::vector<Node *> gs = y->info().grad(b, *y, dy);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0]->device, "gpu:2");
  EXPECT_EQ(gs[0]->name.rfind("y.grad.", 0), 0u) << gs[0]->name;
  for (const auto &n : g.nodes())
    if (n->isOp() && n.get() != y) {
      EXPECT_EQ(n->device, "gpu:2") << n->name;
    }
}

} // namespace
} // namespace mpc::ir
