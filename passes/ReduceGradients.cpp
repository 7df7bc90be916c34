//===- passes/ReduceGradients.cpp - gradients all-reduced across replicas -===//
//
// Invariant established: in a data-parallel graph (passes/DataParallel.cpp),
// every replica's update of a parameter uses the same gradient, the sum of
// the replicas' gradients made in replica order by an all_reduce
// (ops/Collective.h) with one member on each replica. Each replica's
// gradient already carries the 1/(R·M) of a mean loss
// (passes/BatchSplit.cpp), so the sum is the full batch's gradient and the
// loss scale is applied once. Parameters and optimizer state then stay
// bit-identical across the replicas: the same updates of the same values.
//
// Gradients travel in buckets, as in PyTorch DDP: consecutive gradients in
// the order backward produces them, up to --bucket-size bytes (at least one
// gradient, at most 64), packed into one flat tensor per replica, reduced by
// one all_reduce, and unpacked. The sum is made element by element in
// replica order whatever the buckets, so bucketing changes the number of
// messages, never a bit of the result. Codegen runs a bucket's packing and
// all-reduce as soon as its last gradient exists (codegen/Schedule.cpp).
//
// Algorithm:
//   1. Group the parameters: a replica's copy names its parameter in
//      Node::mirrorOf; the copies follow in replica order (creation order).
//   2. Order the parameters with gradients by the position of replica 0's
//      gradient in topological order: the order backward produces them.
//   3. Cut that list into buckets, one open bucket per group of devices (a
//      replica spans its pipeline's devices, and a bucket lives on one
//      device per replica): a bucket takes the next gradient of its group
//      while its bytes stay within the bucket size (a larger gradient is a
//      bucket of its own) and it holds fewer than 64.
//   4. Per bucket: for a single gradient, the all_reduce members
//      `<gradient>.allreduce` over the replicas' gradients; for several,
//      per replica `bucket<b>.pack` = concat of the gradients reshaped
//      flat, the members `bucket<b>.allreduce` over the packs, and each
//      gradient's `<gradient>.reduced` = its slice of the sum reshaped
//      back. The result is that replica's gradient (Graph::gradients).
// Running it again, or on a graph without replicas, changes nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ops/OpSchema.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <map>
#include <ostream>

namespace mpc::passes {

namespace {

using ir::Node;

/// One parameter's gradient on every replica, in replica order.
struct Reduced {
  std::vector<Node *> params, grads;
  int64_t bytes = 0;
};

/// Whether `grad` is what step 4 makes: an all_reduce member, or a
/// gradient's part of a bucket's sum (reshape of a slice of one).
bool reducedAlready(const Node *grad) {
  if (grad->isOp(ir::OpKind::AllReduce)) return true;
  if (!grad->isOp(ir::OpKind::Reshape)) return false;
  const Node *part = grad->inputs[0];
  return part->isOp(ir::OpKind::Slice) && part->inputs[0]->isOp(ir::OpKind::AllReduce);
}

class ReduceGradientsPass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    // An optimized graph (read back after `mpc opt`) has its updates, fed
    // by what this pass made or by what shard-optimizer-state made of it.
    if (g.dataParallel.replicas <= 1 || g.has(ir::kOptimized)) return false;
    if (!g.has(ir::kDifferentiated))
      throw UserError(g.sourceFile, "--data-parallel",
                      "reduce-gradients needs gradients: run 'autodiff' first");
    // Step 1.
    std::vector<Node *> params;
    std::map<std::string, std::vector<Node *>> copies;
    for (const auto &n : g.nodes()) {
      if (n->kind != ir::NodeKind::Param) continue;
      if (n->mirrorOf.empty()) params.push_back(n.get());
      else copies[n->mirrorOf].push_back(n.get());
    }
    std::vector<Reduced> all;
    for (Node *p : params) {
      auto it = copies.find(p->name);
      if (it == copies.end() || !g.gradients.count(p->name)) continue;
      if (p->type.numElements() == 0) continue; // nothing to sum
      Reduced r;
      r.params.push_back(p);
      r.params.insert(r.params.end(), it->second.begin(), it->second.end());
      for (Node *replica : r.params) {
        if (!g.gradients.count(replica->name))
          throw InternalError("replica '" + replica->name + "' of '" + p->name +
                              "' has no gradient");
        Node *grad = g.find(g.gradients.at(replica->name));
        MPC_ASSERT(grad, "gradient of '" + replica->name + "' is not in the graph");
        if (reducedAlready(grad)) return false;
        r.grads.push_back(grad);
      }
      r.bytes = r.grads[0]->type.numElements() * 4;
      all.push_back(std::move(r));
    }
    if (all.empty()) return false;
    // Step 2.
    std::vector<Node *> order = g.topoOrder();
    std::map<const Node *, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
    std::stable_sort(all.begin(), all.end(), [&](const Reduced &a, const Reduced &b) {
      return position.at(a.grads[0]) < position.at(b.grads[0]);
    });
    // Step 3: one open bucket per group of devices.
    std::vector<std::vector<const Reduced *>> buckets;
    std::map<std::vector<std::string>, std::pair<size_t, int64_t>> open; // -> bucket, bytes
    for (const Reduced &r : all) {
      std::vector<std::string> group;
      for (const Node *p : r.params) group.push_back(p->device);
      // A tensor-parallel part ("shard") travels alone: flattened into a
      // pack it would have to be gathered whole first.
      if (r.params[0]->shard) group.push_back("#" + r.params[0]->name);
      auto it = open.find(group);
      if (it == open.end() || it->second.second + r.bytes > g.dataParallel.bucketBytes ||
          buckets[it->second.first].size() >= size_t(ops::OpSchema::kMaxVariadicArity)) {
        buckets.emplace_back();
        it = open.insert_or_assign(group, std::pair{buckets.size() - 1, int64_t(0)}).first;
      }
      buckets[it->second.first].push_back(&r);
      it->second.second += r.bytes;
    }
    // Step 4.
    for (size_t b = 0; b < buckets.size(); ++b) {
      reduceBucket(g, buckets[b], b);
      ctx.count("reduce-gradients", "all-reduces", 1);
      if (ctx.options.stats && ctx.log) {
        int64_t bytes = 0;
        std::string names;
        for (const Reduced *r : buckets[b]) {
          bytes += r->bytes;
          names += (names.empty() ? "" : ", ") + r->params[0]->name;
        }
        *ctx.log << "reduce-gradients: bucket " << b << ": " << byteSizeText(uint64_t(bytes))
                 << ", " << buckets[b].size() << " gradient" << (buckets[b].size() == 1 ? "" : "s")
                 << " (" << names << ")\n";
      }
    }
    ctx.count("reduce-gradients", "gradients", int64_t(all.size()));
    return true;
  }

private:
  static void reduceBucket(ir::Graph &g, const std::vector<const Reduced *> &bucket, size_t b) {
    const size_t replicas = bucket[0]->params.size();
    auto builder = [&](size_t r, const Node *grad) {
      ir::Builder bl(g);
      bl.device = bucket[0]->params[r]->device;
      bl.backward = true;
      bl.origin = grad->origin;
      return bl;
    };
    if (bucket.size() == 1) {
      const Reduced &one = *bucket[0];
      for (size_t r = 0; r < replicas; ++r) {
        ir::Builder bl = builder(r, one.grads[r]);
        Node *sum = bl.create(ir::OpKind::AllReduce, one.grads, {},
                              one.grads[r]->name + ".allreduce");
        g.gradients.set(one.params[r]->name, sum->name);
      }
      return;
    }
    // Several: pack each replica's gradients flat, in bucket order.
    std::string base = "bucket" + std::to_string(b);
    std::vector<Node *> packs;
    for (size_t r = 0; r < replicas; ++r) {
      ir::Builder bl = builder(r, bucket[0]->grads[r]);
      std::vector<Node *> flat;
      for (const Reduced *x : bucket)
        flat.push_back(bl.create(ir::OpKind::Reshape, {x->grads[r]},
                                 {{"shape", ir::Shape{x->grads[r]->type.numElements()}}},
                                 x->grads[r]->name + ".flat"));
      packs.push_back(bl.create(ir::OpKind::Concat, flat, {{"axis", int64_t(0)}},
                                base + (r ? ".dp" + std::to_string(r) : "") + ".pack"));
    }
    for (size_t r = 0; r < replicas; ++r) {
      ir::Builder bl = builder(r, bucket[0]->grads[r]);
      Node *sum = bl.create(ir::OpKind::AllReduce, packs, {},
                            base + (r ? ".dp" + std::to_string(r) : "") + ".allreduce");
      int64_t offset = 0;
      for (const Reduced *x : bucket) {
        const Node *grad = x->grads[r];
        int64_t n = grad->type.numElements();
        ir::Builder ul = builder(r, grad);
        Node *part = ul.create(ir::OpKind::Slice, {sum},
                               {{"axis", int64_t(0)}, {"start", offset}, {"end", offset + n}},
                               grad->name + ".part");
        Node *back = ul.create(ir::OpKind::Reshape, {part}, {{"shape", grad->type.shape}},
                               grad->name + ".reduced");
        g.gradients.set(x->params[r]->name, back->name);
        offset += n;
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> createReduceGradientsPass() {
  return std::make_unique<ReduceGradientsPass>();
}

} // namespace mpc::passes
