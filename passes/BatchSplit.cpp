//===- passes/BatchSplit.cpp - one forward replica per part of the batch -===//
//
// Pipelining and data parallelism change when and where work runs, never
// what it computes. Both split the step's batch into parts along axis 0 and
// give each part its own replica of the batched forward graph: micro-batches
// run one after another on the same devices (codegen orders them by the
// pipeline schedule, codegen/PipelineSchedule.cpp), data-parallel replicas
// run at once, each on devices of its own (passes/DataParallel.cpp).
//
// Invariant established: with R replicas and M micro-batches (R·M > 1),
// every batched node of the forward graph exists R·M times, part
// k = r·M + j holding rows [k·N/(R·M), (k+1)·N/(R·M)) of every input: named
// `<name>.mb<j>` when R = 1, `<name>.dp<r>` when M = 1, `<name>.dp<r>.mb<j>`
// otherwise, with Node::microbatch = j, fed by `<input>.<same suffix>` =
// slice(input, those rows). Nodes that do not depend on the batch
// (parameters, state, their copies and transposes, constants) are shared by
// the micro-batches of a replica. Replica 0 keeps them; replica r > 0 gets
// its own copy of each, `<name>.dp<r>`, on its own devices (a parameter's or
// state's copy records what it mirrors: Node::mirrorOf). Autodiff, run
// afterwards, gives each part its own backward graph and sums each shared
// value's gradient over its replica's micro-batches in micro-batch order:
// that sum *is* gradient accumulation. Across replicas, reduce-gradients
// then all-reduces each parameter's gradient.
//
// Algorithm:
//   1. Batch-axis analysis (ops/Batch.h). Every input is Batched (axis 0 is
//      the batch; all inputs have the same N, and R·M divides it); params and
//      state are Unbatched. Each op's record says what its result is; a node
//      that mixes rows of the batch is a user error naming it and why. A node
//      that uses a batch-reduced value (a loss) is computed once, from the
//      full-batch value, and must not also use batched data.
//   2. Replicas of the unbatched nodes, for r = 1..R-1, on replica r's
//      devices, in topological order (inputs stay: they are sliced).
//   3. Parts, for k = 0..R·M-1, in topological order. A replica of an op
//      that draws a dropout mask (dropout; attention with dropout_p) keeps
//      the original's mask: its key, and the element offset of its part in
//      the whole batch.
//   4. The full-batch value of every Reduced node that something outside the
//      parts uses (the loss, an output, a node computed once) is the sum of
//      its parts in part order, scaled by 1/(R·M) for a mean. This is the one
//      place where a mean loss is rescaled; autodiff carries the 1/(R·M) into
//      each part's backward. Batched outputs are the parts joined along
//      axis 0 (one concat, chained past 64 parts). Both keep the original
//      node's name, so `loss` is still the full-batch loss and outputs keep
//      theirs; both sit on the original node's device (replica 0's).
//   5. The original batched nodes are erased.
// Running it on a split graph, or with R·M = 1, changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchSplit.h"

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

class BatchSplitter {
public:
  BatchSplitter(Graph &g, const BatchSplit &split)
      : g_(g), split_(split), parts_(split.replicas * split.microbatches) {}

  void run() {
    order_ = g_.topoOrder();
    checkInputs();
    classify();
    for (int64_t r = 1; r < split_.replicas; ++r) replicateShared(r);
    for (int64_t k = 0; k < parts_; ++k) replicate(k);
    std::vector<FullValue> full = fullBatchValues();
    for (const FullValue &f : full) g_.replaceAllUses(f.original, f.value);
    eraseOriginals();
    for (const FullValue &f : full) g_.rename(f.value, f.name);
  }

private:
  /// "--microbatches 4" or "--data-parallel=2 replicas of 4 micro-batches":
  /// how messages name the split.
  std::string splitText() const {
    if (split_.replicas == 1) return std::to_string(split_.microbatches) + " micro-batches";
    std::string s = std::to_string(split_.replicas) + " data-parallel replicas";
    if (split_.microbatches > 1)
      s += " of " + std::to_string(split_.microbatches) + " micro-batches each";
    return s;
  }

  // Step 1: the inputs fix N.
  void checkInputs() {
    const Node *first = nullptr;
    for (Node *n : order_) {
      if (n->kind != ir::NodeKind::Input) continue;
      if (n->type.rank() == 0)
        throw UserError(g_.sourceFile, n->where(),
                        "input '" + n->name + "' is a scalar: it has no batch axis (axis 0) to " +
                            "split into " +
                            (split_.replicas == 1 ? "micro-batches" : "data-parallel replicas"));
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
      throw UserError(g_.sourceFile, split_.where,
                      "the model has no inputs, so there is no batch to split into " +
                          splitText());
    if (batch_ % split_.replicas != 0)
      throw UserError(g_.sourceFile, split_.where,
                      std::to_string(split_.replicas) + " data-parallel replicas do not divide " +
                          "the batch of " + std::to_string(batch_) + " rows (input '" +
                          first->name + "' " + first->type.str() + ")");
    if (batch_ % parts_ != 0)
      throw UserError(g_.sourceFile, split_.where,
                      split_.replicas == 1
                          ? std::to_string(parts_) + " micro-batches do not divide the batch of " +
                                std::to_string(batch_) + " rows (input '" + first->name + "' " +
                                first->type.str() + ")"
                          : std::to_string(split_.microbatches) + " micro-batches do not " +
                                "divide a replica's " + std::to_string(batch_ / split_.replicas) +
                                " rows (the batch of " + std::to_string(batch_) + " rows of input '" +
                                first->name + "' over " + std::to_string(split_.replicas) +
                                " replicas)");
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
      ops::BatchQuery q{classes, types, n->type, n->attrs, batch_, parts_};
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

  /// The suffix of part k's nodes (step 3) or, with j < 0, of replica r's
  /// copies of the shared nodes (step 2).
  std::string suffix(int64_t r, int64_t j) const {
    std::string s;
    if (split_.replicas > 1) s += ".dp" + std::to_string(r);
    if (j >= 0 && split_.microbatches > 1) s += ".mb" + std::to_string(j);
    return s;
  }

  /// Replica r's device for a device of the placed model.
  const std::string &deviceIn(int64_t r, const std::string &device) const {
    if (r == 0) return device;
    return split_.devices.at(size_t(r - 1)).at(device);
  }

  /// Replica r's copy of a node of the model (replica 0: the node itself).
  Node *shared(int64_t r, Node *n) {
    if (r == 0) return n;
    auto it = shared_[size_t(r - 1)].find(n);
    return it == shared_[size_t(r - 1)].end() ? n : it->second;
  }

  // Step 2: replica r's own copies of what does not depend on the batch.
  void replicateShared(int64_t r) {
    std::map<const Node *, Node *> &rep = shared_.emplace_back();
    const std::string sfx = suffix(r, -1);
    for (Node *n : order_) {
      if (cls_.at(n) != BatchClass::Unbatched || n->kind == ir::NodeKind::Input) continue;
      const std::string &device = deviceIn(r, n->device);
      Node *c = nullptr;
      switch (n->kind) {
      case ir::NodeKind::Param:
        c = g_.addParam(g_.uniqueName(n->name + sfx), n->type, *n->init);
        c->lrMult = n->lrMult;
        c->wdMult = n->wdMult;
        c->mirrorOf = n->name;
        c->shard = n->shard;
        break;
      case ir::NodeKind::State: {
        // Its parameter's copy in this replica, when it has one.
        const Node *param = g_.find(n->origin);
        std::string owner = param && rep.count(param) ? rep.at(param)->name : n->origin;
        c = g_.addState(g_.uniqueName(n->name + sfx), n->type, *n->init, owner);
        c->mirrorOf = n->name;
        break;
      }
      case ir::NodeKind::Op: {
        // A node computed once from a full-batch value (a loss) is not the
        // replica's own: it stays where it is.
        std::vector<Node *> operands;
        for (Node *in : n->inputs)
          if (auto it = rep.find(in); it != rep.end()) operands.push_back(it->second);
        if (operands.size() != n->inputs.size()) continue;
        c = g_.addOp(g_.uniqueName(n->name + sfx), n->op, operands, n->attrs, n->type);
        break;
      }
      case ir::NodeKind::Input: break;
      }
      c->device = device;
      c->jsonPath = n->jsonPath;
      c->backward = n->backward;
      rep[n] = c;
    }
  }

  // Step 3.
  void replicate(int64_t k) {
    const int64_t r = k / split_.microbatches, j = k % split_.microbatches;
    const std::string sfx = suffix(r, j);
    std::map<const Node *, Node *> &rep = replicas_[k];
    const int64_t rows = batch_ / parts_;
    for (Node *n : order_) {
      if (!replicated(n)) continue;
      std::vector<Node *> operands;
      for (Node *in : n->inputs) {
        if (in->kind == ir::NodeKind::Input) {
          if (!rep.count(in)) {
            // Sliced where the input is; insert-copies moves the rows.
            Builder b(g_);
            b.device = in->device;
            rep[in] = b.create(ir::OpKind::Slice, {in},
                               {{"axis", int64_t(0)},
                                {"start", k * rows},
                                {"end", (k + 1) * rows}},
                               in->name + sfx);
            rep[in]->microbatch = int(j);
          }
          operands.push_back(rep.at(in));
        } else {
          operands.push_back(replicated(in) ? rep.at(in) : shared(r, in));
        }
      }
      Builder b(g_);
      b.device = deviceIn(r, n->device);
      auto found = microAttrs_.find(n);
      ir::AttrMap attrs = found == microAttrs_.end() ? n->attrs : found->second;
      if (n->info().drawsMask(n->attrs)) {
        // The replica draws the original's mask: the original's stream, and
        // its part's elements' indices in the whole batch (a batched operand
        // is part k's rows; a shared one is the same for all).
        attrs["key"] = ir::dropoutKeyName(*n);
        if (replicated(n->inputs[0]) || n->inputs[0]->kind == ir::NodeKind::Input) {
          std::vector<ops::TensorType> types;
          for (const Node *o : operands) types.push_back(o->type);
          attrs["offset"] = ir::getInt(n->attrs, "offset") +
                            k * *ops::checkedNumElements(n->info().mask.covers(types));
        }
      }
      Node *r0 = nullptr;
      try {
        r0 = b.create(n->op, operands, attrs, n->name + sfx);
      } catch (const RuleError &e) {
        throw InternalError("replica of " + n->describe() + " for part " + std::to_string(k) +
                            " of the batch fails its shape rule: " + e.what());
      }
      r0->jsonPath = n->jsonPath;
      r0->microbatch = int(j);
      rep[n] = r0;
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
        if (!replicated(u) && !isPart(u)) usedOnce = true;
      if (!usedOnce) continue;
      Builder b(g_);
      b.device = n->device;
      Node *acc = replicas_[0].at(n);
      if (cls_.at(n) == BatchClass::Reduced) {
        for (int64_t k = 1; k < parts_; ++k)
          acc = b.create(ir::OpKind::Add, {acc, replicas_[size_t(k)].at(n)}, {},
                         n->name + ".acc" + std::to_string(k));
      } else {
        // One concat of the replicas in micro-batch order (a chain of
        // concats of at most kMaxVariadicArity operands each when M is larger).
        const size_t most = size_t(ir::OpInfo::kMaxVariadicArity);
        acc = nullptr;
        int64_t k = 0;
        for (int piece = 0; k < parts_; ++piece) {
          std::vector<Node *> parts;
          if (acc) parts.push_back(acc);
          while (parts.size() < most && k < parts_) parts.push_back(replicas_[size_t(k++)].at(n));
          acc = b.create(ir::OpKind::Concat, parts, {{"axis", int64_t(0)}},
                         n->name + ".cat" + (piece ? std::to_string(piece) : ""));
        }
      }
      if (cls_.at(n) == BatchClass::Reduced && combine_.at(n) == ops::BatchCombine::Mean)
        acc = b.scale(acc, 1.0 / double(parts_));
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

  /// Whether `n` was made by this split (a part's node or slice).
  bool isPart(const Node *n) const { return n->microbatch >= 0; }

  Graph &g_;
  const BatchSplit &split_;
  int64_t parts_;
  int64_t batch_ = 0;
  std::vector<Node *> order_;
  std::map<const Node *, BatchClass> cls_;
  std::map<const Node *, ops::BatchCombine> combine_;
  std::map<const Node *, ir::AttrMap> microAttrs_;
  std::map<int64_t, std::map<const Node *, Node *>> replicas_;
  /// Replica r's copies of the shared nodes, at r - 1.
  std::vector<std::map<const Node *, Node *>> shared_;
};

} // namespace

void splitBatch(Graph &g, const BatchSplit &split) { BatchSplitter(g, split).run(); }

bool isBatchSplit(const Graph &g) {
  // Mirrors survive the JSON form (Node::microbatch does not).
  for (const auto &n : g.nodes())
    if (n->microbatch >= 0 || !n->mirrorOf.empty()) return true;
  return false;
}

} // namespace mpc::passes
