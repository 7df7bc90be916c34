//===- passes/FuseAttention.cpp - the `fuse-attention` pass --------------===//
//
// Invariant established: no chain
//   s = matmul(q, k^T); [s = scale(s)]; [s = causal_mask(s)];
//   p = softmax(s, last axis); [p = dropout(p)]; y = matmul(p, v)
// whose intermediates nothing else reads remains: each is one
// attention(q, k, v) {causal, scale, dropout_p} named y, computing the same
// function without the [T, S] scores in memory (ops/Attention.cpp), the
// dropout drawing the same mask (its key and offset carried over). Exporters and
// the GPT example write attention this way; FlashAttention-style kernels
// want it whole.
//
// Algorithm: for each softmax along the last axis, in topological order:
//   1. Walk up: an optional causal_mask whose value is at most -1e4 (so
//      exp of it underflows to 0 as attention's mask does: the same
//      function), an optional scale (or a mul or div by a one-element
//      fill: an exporter's Div by sqrt(d)), then a matmul(q, k) with
//      transpose_b only, or of q and a transpose of k's last two axes; q
//      and k of one rank with the same leading axes (no broadcasting).
//   2. Walk down: the softmax's one reader is a matmul(p, v) with no
//      transposes and no accumulator, v of q's rank and leading axes, or a
//      dropout (not yet a tensor-parallel part) whose one reader is.
//   3. Each intermediate (scores, scaled, masked, probabilities) has that
//      one reader and is no output or loss; all five nodes share a device.
//   4. Make attention(q, k, v) on that device, let it take y's readers and
//      name, and erase the chain.
// Running the pass again finds nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace mpc::passes {

using ir::Graph;
using ir::Node;
using ir::OpKind;

namespace {

/// The lowest causal_mask value that still masks exactly: exp(-1e4 + x)
/// is 0 in f32 and f64 for any score x a model meets.
constexpr double kMaskFloor = -1e4;

/// The factor a node applies to its first operand: scale's value, or a
/// mul or div by a one-element fill (an exporter's Div by sqrt(d)).
std::optional<double> scaleOf(const Node *n) {
  if (n->isOp(OpKind::Scale)) return ir::getFloat(n->attrs, "value");
  if ((n->isOp(OpKind::Mul) || n->isOp(OpKind::Div)) && n->inputs.size() == 2 &&
      n->inputs[1]->isOp(OpKind::Fill) && n->inputs[1]->type.numElements() == 1 &&
      n->type == n->inputs[0]->type) {
    double c = ir::getFloat(n->inputs[1]->attrs, "value");
    return n->isOp(OpKind::Mul) ? c : 1.0 / c;
  }
  return std::nullopt;
}

/// A transpose that swaps the last two axes and keeps the others.
bool swapsLastTwo(const Node *n) {
  if (!n->isOp(OpKind::Transpose)) return false;
  const std::vector<int64_t> &perm = ir::getInts(n->attrs, "perm");
  const int64_t r = int64_t(perm.size());
  if (r < 2) return false;
  for (int64_t a = 0; a + 2 < r; ++a)
    if (perm[size_t(a)] != a) return false;
  return perm[size_t(r - 2)] == r - 1 && perm[size_t(r - 1)] == r - 2;
}

class FuseAttentionPass : public Pass {
public:
  bool run(Graph &g, PassContext &ctx) override {
    auto users = g.userMap();
    auto only = [&](const Node *n, const Node *user) {
      auto it = users.find(n);
      if (it == users.end() || it->second.size() != 1 || it->second[0] != user) return false;
      if (n->name == g.loss) return false;
      return std::find(g.outputs.begin(), g.outputs.end(), n->name) == g.outputs.end();
    };
    auto sameLeading = [](const Node *a, const Node *b) {
      const ir::Shape &x = a->type.shape, &y = b->type.shape;
      return x.size() == y.size() && x.size() >= 2 &&
             std::equal(x.begin(), x.end() - 2, y.begin());
    };
    bool changed = false;
    std::unordered_set<const Node *> erased; // compared, never dereferenced
    for (Node *p : g.topoOrder()) {
      if (erased.count(p)) continue;
      if (!p->isOp(OpKind::Softmax) || p->type.dtype != ir::DType::F32) continue;
      if (*ops::normalizeAxis(ir::getInt(p->attrs, "axis"), p->type.rank()) !=
          p->type.rank() - 1)
        continue;
      // Step 1.
      Node *s = p->inputs[0];
      bool causal = false;
      double scale = 1.0;
      std::vector<Node *> chain = {p};
      if (s->isOp(OpKind::CausalMask)) {
        if (ir::getFloat(s->attrs, "value") > kMaskFloor || !only(s, chain.back())) continue;
        causal = true;
        chain.push_back(s);
        s = s->inputs[0];
      }
      if (std::optional<double> f = scaleOf(s)) {
        scale = *f;
        if (!(scale > 0) || !std::isfinite(scale) || !only(s, chain.back())) continue;
        chain.push_back(s);
        s = s->inputs[0];
      }
      if (!s->isOp(OpKind::MatMul) || s->inputs.size() != 2 || !only(s, chain.back()) ||
          ir::getBool(s->attrs, "transpose_a"))
        continue;
      chain.push_back(s);
      Node *q = s->inputs[0], *k = s->inputs[1];
      if (!ir::getBool(s->attrs, "transpose_b")) {
        // An exporter's explicit transpose of k's last two axes.
        if (!swapsLastTwo(k) || !only(k, s)) continue;
        chain.push_back(k);
        k = k->inputs[0];
      }
      if (!sameLeading(q, k)) continue;
      // Step 2.
      auto pu = users.find(p);
      if (pu == users.end() || pu->second.size() != 1) continue;
      Node *y = pu->second[0];
      Node *probs = p;  // what y multiplies: p, or its dropout
      Node *drop = nullptr;
      if (y->isOp(OpKind::Dropout)) {
        // Attention's own dropout draws this one's mask: the same key,
        // offset and (whole-tensor) indices; a part's is not taken.
        if (ir::getInt(y->attrs, "parts") != 1 || !only(p, y)) continue;
        drop = y;
        probs = y;
        auto du = users.find(drop);
        if (du == users.end() || du->second.size() != 1) continue;
        y = du->second[0];
      }
      if (!y->isOp(OpKind::MatMul) || y->inputs.size() != 2 || y->inputs[0] != probs ||
          ir::getBool(y->attrs, "transpose_a") || ir::getBool(y->attrs, "transpose_b") ||
          !only(probs, y) || (drop && !only(p, drop)))
        continue;
      if (drop) chain.insert(chain.begin(), drop); // erased before p, which it reads
      Node *v = y->inputs[1];
      if (!sameLeading(q, v) || v->type.shape[v->type.shape.size() - 2] !=
                                    k->type.shape[k->type.shape.size() - 2])
        continue;
      // Step 3.
      bool oneDevice = true;
      for (const Node *n : chain) oneDevice = oneDevice && n->device == y->device;
      if (!oneDevice) continue;
      // Step 4.
      ir::Builder b(g);
      b.device = y->device;
      ir::AttrMap attrs = {{"causal", causal}, {"scale", scale}};
      if (drop) {
        attrs["dropout_p"] = ir::getFloat(drop->attrs, "p");
        attrs["key"] = ir::dropoutKeyName(*drop);
        attrs["offset"] = ir::getInt(drop->attrs, "offset");
      }
      Node *a = b.create(OpKind::Attention, {q, k, v}, attrs, y->name + ".attention");
      a->jsonPath = y->jsonPath;
      const std::string name = y->name;
      g.replaceAllUses(y, a);
      erased.insert(y);
      g.erase(y);
      for (Node *n : chain) {
        erased.insert(n);
        g.erase(n);
      }
      g.rename(a, name); // the outputs, by name, now name it
      users = g.userMap();
      ctx.count("fuse-attention", "fused");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseAttentionPass() { return std::make_unique<FuseAttentionPass>(); }

} // namespace mpc::passes
