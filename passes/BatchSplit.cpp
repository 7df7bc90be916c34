//===- passes/Microbatch.cpp - one forward replica per micro-batch ------===//
//
// Pipelining changes when work runs, never what it computes. This pass makes
// the micro-batches explicit in the graph; codegen then orders their work by
// the pipeline schedule (codegen/PipelineSchedule.cpp).
//
// Invariant established: with M > 1 micro-batches, every batched node of the
// forward graph exists M times, `<name>.mb<k>` with Node::microbatch = k, fed
// by `<input>.mb<k>` = slice(input, rows [k*N/M, (k+1)*N/M)); nodes that do
// not depend on the batch (parameters, their copies and transposes,
// constants) are shared. Autodiff, run afterwards, then gives each replica its
// own backward graph, and sums each shared value's gradient over the replicas
// in micro-batch order: that sum *is* gradient accumulation, and the
// optimizer still updates once per step.
//
// Algorithm:
//   1. Batch-axis analysis (ops/Batch.h). Every input is Batched (axis 0 is
//      the batch; all inputs have the same N, and M divides it); params and
//      state are Unbatched. Each op's record says what its result is; a node
//      that mixes rows of the batch is a user error naming it and why. A node
//      that uses a batch-reduced value (a loss) is computed once, from the
//      full-batch value, and must not also use batched data.
//   2. Replicas, for k = 0..M-1, in topological order. A dropout replica
//      keeps the original's mask: its key, and the element offset of its
//      micro-batch in the whole batch.
//   3. The full-batch value of every Reduced node that something outside the
//      replicas uses (the loss, an output, a node computed once) is the sum of
//      its replicas, scaled by 1/M for a mean. This is the one place where a
//      mean loss is rescaled; autodiff carries the 1/M into each replica's
//      backward. Batched outputs are the replicas joined along axis 0 (one
//      concat, chained past 64 micro-batches). Both keep the original node's
//      name, so `loss` is still the full-batch loss and outputs keep theirs.
//   4. The original batched nodes are erased.
// Running the pass on a split graph, or with M = 1, changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

namespace mpc::passes {

using ops::BatchClass;
using ir::Builder;
using ir::Graph;
using ir::Node;

namespace {

class Microbatcher {
public:
  Microbatcher(Graph &g, int64_t m) : g_(g), m_(m) {}

  void run() {
    order_ = g_.topoOrder();
    checkInputs();
    classify();
    for (int64_t k = 0; k < m_; ++k) replicate(k);
    std::vector<FullValue> full = fullBatchValues();
    for (const FullValue &f : full) g_.replaceAllUses(f.original, f.value);
    eraseOriginals();
    for (const FullValue &f : full) g_.rename(f.value, f.name);
  }

private:
  // Step 1: the inputs fix N.
  void checkInputs() {
    const Node *first = nullptr;
    for (Node *n : order_) {
      if (n->kind != ir::NodeKind::Input) continue;
      if (n->type.rank() == 0)
        throw UserError(g_.sourceFile, n->where(),
                        "input '" + n->name + "' is a scalar: it has no batch axis (axis 0) to " +
                            "split into micro-batches");
      if (!first) {
        first = n;
        batch_ = n->type.shape[0];
      } else if (n->type.shape[0] != batch_) {
        throw UserError(g_.sourceFile, n->where(),
                        "input '" + n->name + "' " + n->type.str() + " has size " +
                            std::to_string(n->type.shape[0]) + " along axis 0 where '" +
                            first->name + "' has " + std::to_string(batch_) +
                            ": every input's axis 0 must be the batch");
      }
      cls_[n] = BatchClass::Batched;
    }
    if (!first)
      throw UserError(g_.sourceFile, "/pipeline/microbatches",
                      "the model has no inputs, so there is no batch to split into " +
                          std::to_string(m_) + " micro-batches");
    if (batch_ % m_ != 0)
      throw UserError(g_.sourceFile, "/pipeline/microbatches",
                      std::to_string(m_) + " micro-batches do not divide the batch of " +
                          std::to_string(batch_) + " rows (input '" + first->name + "' " +
                          first->type.str() + ")");
  }

  void classify() {
    for (Node *n : order_) {
      if (!n->isOp()) {
        if (!cls_.count(n)) cls_[n] = BatchClass::Unbatched;
        continue;
      }
      std::vector<BatchClass> classes;
      std::vector<ir::TensorType> types;
      const Node *batched = nullptr, *reduced = nullptr;
      for (const Node *in : n->inputs) {
        BatchClass c = cls_.at(in);
        if (c == BatchClass::Batched && !batched) batched = in;
        if (c == BatchClass::Reduced && !reduced) reduced = in;
        // A node using a reduced value runs once, on the full-batch value.
        classes.push_back(c == BatchClass::Reduced ? BatchClass::Unbatched : c);
        types.push_back(in->type);
      }
      if (!batched) {
        cls_[n] = BatchClass::Unbatched;
        continue;
      }
      if (reduced)
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() + " mixes rows of the batch: it uses '" + reduced->name +
                            "', reduced over the whole batch, together with batched '" +
                            batched->name + "'");
      const ir::OpInfo &info = n->info();
      if (!info.batch)
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() + " cannot be split into micro-batches: the op does not " +
                            "declare how it treats the batch axis (operand '" + batched->name +
                            "' is batched)");
      ops::BatchQuery q{classes, types, n->type, n->attrs, batch_, m_};
      try {
        ops::BatchResult r = info.batch(q);
        cls_[n] = r.cls;
        combine_[n] = r.combine;
        if (!r.microAttrs.empty()) microAttrs_[n] = std::move(r.microAttrs);
      } catch (const RuleError &e) {
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() + " mixes rows of the batch: " + e.what());
      }
    }
  }

  bool replicated(const Node *n) const {
    return n->isOp() && cls_.at(n) != BatchClass::Unbatched;
  }

  // Step 2.
  void replicate(int64_t k) {
    const std::string suffix = ".mb" + std::to_string(k);
    std::map<const Node *, Node *> &rep = replicas_[k];
    const int64_t rows = batch_ / m_;
    for (Node *n : order_) {
      if (!replicated(n)) continue;
      std::vector<Node *> operands;
      for (Node *in : n->inputs) {
        if (in->kind == ir::NodeKind::Input) {
          if (!rep.count(in)) {
            Builder b(g_);
            b.device = in->device;
            rep[in] = b.create(ir::OpKind::Slice, {in},
                               {{"axis", int64_t(0)},
                                {"start", k * rows},
                                {"end", (k + 1) * rows}},
                               in->name + suffix);
            rep[in]->microbatch = int(k);
          }
          operands.push_back(rep.at(in));
        } else {
          operands.push_back(replicated(in) ? rep.at(in) : in);
        }
      }
      Builder b(g_);
      b.device = n->device;
      auto found = microAttrs_.find(n);
      ir::AttrMap attrs = found == microAttrs_.end() ? n->attrs : found->second;
      if (n->isOp(ir::OpKind::Dropout)) {
        // The replica draws the original's mask: the original's stream, and
        // its micro-batch's elements' indices in the whole batch (a batched
        // operand is micro-batch k's rows; a shared one is the same for all).
        attrs["key"] = ir::dropoutKeyName(*n);
        if (operands[0] != n->inputs[0])
          attrs["offset"] = ir::getInt(n->attrs, "offset") + k * operands[0]->type.numElements();
      }
      Node *r = nullptr;
      try {
        r = b.create(n->op, operands, attrs, n->name + suffix);
      } catch (const RuleError &e) {
        throw InternalError("micro-batch replica of " + n->describe() + " fails its shape rule: " +
                            e.what());
      }
      r->jsonPath = n->jsonPath;
      r->microbatch = int(k);
      rep[n] = r;
    }
  }

  /// An original node still used outside the replicas, and the value built
  /// from its replicas that takes its place (and, once it is erased, its name).
  struct FullValue {
    Node *original, *value;
    std::string name;
  };

  // Step 3.
  std::vector<FullValue> fullBatchValues() {
    std::set<std::string> outputs(g_.outputs.begin(), g_.outputs.end());
    std::vector<FullValue> full;
    // The nodes created below use replicas, never an original: the users of
    // the originals do not change in this loop.
    auto users = g_.userMap();
    for (Node *n : order_) {
      if (!replicated(n)) continue;
      bool usedOnce = n->name == g_.loss || outputs.count(n->name);
      for (const Node *u : users[n])
        if (!replicated(u) && u->microbatch < 0) usedOnce = true;
      if (!usedOnce) continue;
      Builder b(g_);
      b.device = n->device;
      Node *acc = replicas_[0].at(n);
      if (cls_.at(n) == BatchClass::Reduced) {
        for (int64_t k = 1; k < m_; ++k)
          acc = b.create(ir::OpKind::Add, {acc, replicas_[size_t(k)].at(n)}, {},
                         n->name + ".acc" + std::to_string(k));
      } else {
        // One concat of the replicas in micro-batch order (a chain of
        // concats of at most kMaxVariadicArity operands each when M is larger).
        const size_t most = size_t(ir::OpInfo::kMaxVariadicArity);
        acc = nullptr;
        int64_t k = 0;
        for (int piece = 0; k < m_; ++piece) {
          std::vector<Node *> parts;
          if (acc) parts.push_back(acc);
          while (parts.size() < most && k < m_) parts.push_back(replicas_[size_t(k++)].at(n));
          acc = b.create(ir::OpKind::Concat, parts, {{"axis", int64_t(0)}},
                         n->name + ".cat" + (piece ? std::to_string(piece) : ""));
        }
      }
      if (cls_.at(n) == BatchClass::Reduced && combine_.at(n) == ops::BatchCombine::Mean)
        acc = b.scale(acc, 1.0 / double(m_));
      acc->jsonPath = n->jsonPath;
      full.push_back({n, acc, n->name});
    }
    return full;
  }

  // Step 4: the originals are used only by originals by now.
  void eraseOriginals() {
    std::unordered_set<const Node *> originals;
    for (Node *n : order_)
      if (replicated(n)) originals.insert(n);
    g_.eraseAll(originals);
  }

  Graph &g_;
  int64_t m_;
  int64_t batch_ = 0;
  std::vector<Node *> order_;
  std::map<const Node *, BatchClass> cls_;
  std::map<const Node *, ops::BatchCombine> combine_;
  std::map<const Node *, ir::AttrMap> microAttrs_;
  std::map<int64_t, std::map<const Node *, Node *>> replicas_;
};

class MicrobatchPass : public Pass {
public:
  bool run(Graph &g, PassContext &ctx) override {
    ir::PipelineSpec spec = effectivePipeline(g, ctx.options);
    g.pipeline = spec;
    if (spec.microbatches <= 1) return false;
    if (g.has(ir::kDifferentiated))
      throw UserError(g.sourceFile, "/pipeline",
                      "microbatch must run before autodiff: the graph already has gradients");
    for (const auto &n : g.nodes())
      if (n->microbatch >= 0) return false; // already split
    Microbatcher(g, spec.microbatches).run();
    ctx.count("microbatch", "microbatches", spec.microbatches);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createMicrobatchPass() { return std::make_unique<MicrobatchPass>(); }

} // namespace mpc::passes
