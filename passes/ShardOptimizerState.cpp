//===- passes/ShardOptimizerState.cpp - ZeRO-1: optimizer state in shards -===//
//
// Invariant established: in a data-parallel graph with --zero=1, each
// replica keeps 1/R of every parameter's optimizer state (Node::ShardOf, in
// the layout of ops::shardElements: the flat tensor zero-padded to R equal
// parts, replica r holding part r). A step:
//   gradients --reduce_scatter--> replica r's part of the summed gradient
//   --update of part r of the parameter--> --all_gather--> every replica's
//   parameter, written back by `assign`.
// reduce_scatter sums element k in replica order exactly as all_reduce does
// (ops/Collective.h), and the updates are elementwise, so parameters,
// optimizer state and losses are bit for bit those of plain data
// parallelism; only where the state lives, and what travels, changes. The
// step counters (f32[1]) stay whole on every replica, mirrored. The padding
// stays zero: a zero gradient moves neither a zero parameter nor zero state.
//
// Input: the graph after reduce-gradients and optimize-step, whose buckets
// are either one gradient all-reduced (`<grad>.allreduce`) or a packed
// bucket (concat of flat gradients, all-reduced, each gradient a
// reshape(slice) of the sum; passes/ReduceGradients.cpp, step 4).
//
// Algorithm:
//   1. Find each parameter's update and, per replica, where its gradient
//      comes from: the bucket's all_reduce, the gradient's offset in it,
//      and the replica's own flat gradient (the pack's operand).
//   2. Group the parameters by bucket, in pack order; each parameter i has
//      N_i elements and parts of S_i = ceil(N_i / R); a bucket's part is
//      T = sum S_i.
//   3. Erase the old updates, the bucket's all_reduce, packing and
//      unpacking, and the state that is now sharded.
//   4. Per bucket and replica r:
//        a. pack: for each part q, for each parameter i, the elements of
//           part q of its flat gradient (zeros past its end): R·T elements;
//        b. reduce_scatter with shard r: part r of every gradient, summed;
//        c. per parameter: its part r of the gradient and of the parameter
//           (padded), new state shards, and the update (the same op and
//           attributes as before) of that part;
//        d. the updated parts joined, all_gather: every part q of every
//           parameter, in the pack's order;
//        e. per parameter: its parts joined, trimmed and reshaped, and
//           `<param>.update` = assign(param, that).
//      A replica's gradient entry (Graph::gradients) names its own
//      contribution: the whole summed gradient exists on no device.
// Running it again changes nothing: no update is fed by an all_reduce.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/Device.h"
#include "ops/OpSchema.h"
#include "ops/Shard.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <unordered_set>

namespace mpc::passes {

namespace {

using ir::Node;

/// One parameter of a bucket, on every replica.
struct Entry {
  std::vector<Node *> params, updates;
  std::vector<Node *> flats;  ///< the replica's flat gradient (before the sum)
  std::vector<Node *> locals; ///< the replica's gradient, the parameter's shape
  int64_t offset = 0;         ///< in the all_reduce's flat sum
  int64_t n = 0, s = 0;       ///< elements; elements of each part
};

struct Bucket {
  std::vector<Node *> reduces; ///< the all_reduce member of each replica
  std::vector<Entry> entries;
};

/// A replica's update of a parameter, as optimize-step made it.
struct Update {
  ir::OpKind op;
  ir::AttrMap attrs;
  std::vector<Node *> operands;        ///< nullptr where a state shard comes
  std::vector<std::string> stateNames; ///< the sharded state's tensor, by operand
};
using Updates = std::map<const Node *, Update>; // param -> its update

/// The optimizer state operands of an update that are sharded: those read
/// element by element with the parameter (momentum_buf, m, v), not the step
/// counter, which every element's update reads whole. By the operand's
/// name in the op's schema, not its shape: a parameter of one element has
/// the step counter's type.
bool shardedOperand(const Node *update, size_t k) {
  const std::vector<std::string> &names = update->info().operands;
  return k >= 2 && k < names.size() && names[k] != "step" &&
         update->inputs[k]->kind == ir::NodeKind::State &&
         update->inputs[k]->type == update->inputs[0]->type;
}

/// `parts` joined along axis 0 (concat takes at most kMaxVariadicArity).
Node *join(ir::Builder &b, std::vector<Node *> parts, const std::string &name) {
  const size_t most = size_t(ops::OpSchema::kMaxVariadicArity);
  while (parts.size() > most) {
    std::vector<Node *> next;
    for (size_t i = 0; i < parts.size(); i += most)
      next.push_back(i + 1 == parts.size()
                         ? parts[i]
                         : b.concat(std::vector<Node *>(parts.begin() + long(i),
                                                        parts.begin() + long(std::min(parts.size(), i + most))),
                                    0));
    parts = std::move(next);
  }
  if (parts.size() == 1) return parts[0];
  return b.create(ir::OpKind::Concat, parts, {{"axis", int64_t(0)}}, name);
}

class ShardOptimizerStatePass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    const int64_t replicas = g.dataParallel.replicas;
    if (replicas <= 1 || g.dataParallel.zero != 1 || !g.has(ir::kOptimized)) return false;
    for (const auto &n : g.nodes())
      if (n->kind == ir::NodeKind::Param && ir::parseDeviceSet(n->device))
        throw UserError(g.sourceFile, "--zero",
                        "--zero=1 does not compose with tensor parallelism yet: " + n->describe() +
                            " is on the tensor-parallel group " + n->device);
    // Step 1.
    std::map<const Node *, Node *> updateOf;
    for (const auto &n : g.nodes())
      if (n->isOp(ir::OpKind::SgdUpdate) || n->isOp(ir::OpKind::AdamUpdate)) {
        if (n->inputs[0]->kind != ir::NodeKind::Param) return false; // sharded already
        updateOf[n->inputs[0]] = n.get();
      }
    std::map<std::string, std::vector<Node *>> copies;
    std::vector<Node *> originals;
    for (const auto &n : g.nodes()) {
      if (n->kind != ir::NodeKind::Param || !updateOf.count(n.get())) continue;
      if (n->mirrorOf.empty()) originals.push_back(n.get());
      else copies[n->mirrorOf].push_back(n.get());
    }
    std::vector<Bucket> buckets;
    std::map<const Node *, size_t> bucketOf; // replica 0's all_reduce -> bucket
    for (Node *p : originals) {
      Entry e;
      e.params.push_back(p);
      for (Node *c : copies[p->name]) e.params.push_back(c);
      if (int64_t(e.params.size()) != replicas)
        throw InternalError("'" + p->name + "' has " + std::to_string(e.params.size()) +
                            " replicas, not " + std::to_string(replicas));
      std::vector<Node *> reduces;
      for (int64_t r = 0; r < replicas; ++r) {
        Node *u = updateOf.at(e.params[size_t(r)]);
        Node *reduce = nullptr;
        if (!source(u->inputs[1], size_t(r), reduce, e)) {
          if (u->inputs[1]->isOp(ir::OpKind::AllReduce) || r > 0)
            throw InternalError("the gradient of '" + e.params[size_t(r)]->name +
                                "' is not what reduce-gradients makes");
          reduce = nullptr;
          break;
        }
        e.updates.push_back(u);
        reduces.push_back(reduce);
      }
      if (reduces.empty()) continue; // not reduced: nothing to shard
      e.n = p->type.numElements();
      e.s = ops::shardElements(e.n, replicas);
      auto [it, fresh] = bucketOf.emplace(reduces[0], buckets.size());
      if (fresh) buckets.push_back({reduces, {}});
      buckets[it->second].entries.push_back(std::move(e));
    }
    if (buckets.empty()) return false;
    // Step 2: pack order.
    for (Bucket &b : buckets)
      std::stable_sort(b.entries.begin(), b.entries.end(),
                       [](const Entry &a, const Entry &c) { return a.offset < c.offset; });
    // Step 3.
    std::unordered_set<const Node *> dead;
    for (const Bucket &b : buckets) {
      for (Node *reduce : b.reduces) {
        dead.insert(reduce);
        for (const Node *pack : reduce->inputs)
          if (pack->isOp(ir::OpKind::Concat)) dead.insert(pack);
      }
      for (const Entry &e : b.entries)
        for (Node *u : e.updates) {
          dead.insert(u);
          if (!u->inputs[1]->isOp(ir::OpKind::AllReduce)) {
            dead.insert(u->inputs[1]);            // reshape
            dead.insert(u->inputs[1]->inputs[0]); // slice
          }
          for (size_t k = 0; k < u->inputs.size(); ++k)
            if (shardedOperand(u, k)) dead.insert(u->inputs[k]);
        }
    }
    auto users = g.userMap();
    for (const Node *d : dead) {
      if (std::find(g.outputs.begin(), g.outputs.end(), d->name) != g.outputs.end())
        throw UserError(g.sourceFile, "--zero",
                        "--zero=1 keeps no whole reduced gradient or optimizer state, and '" +
                            d->name + "' is an output of the model");
      for (const Node *u : users[d])
        if (!dead.count(u))
          throw InternalError("'" + d->name + "' is used by '" + u->name +
                              "' outside what ZeRO-1 replaces");
    }
    // The updates' operands and the sharded state's names, before erasing.
    Updates kept;
    for (const Bucket &b : buckets)
      for (const Entry &e : b.entries)
        for (size_t r = 0; r < size_t(replicas); ++r) {
          Node *u = e.updates[r];
          Update k{u->op, u->attrs, u->inputs, std::vector<std::string>(u->inputs.size())};
          for (size_t i = 0; i < u->inputs.size(); ++i)
            if (shardedOperand(u, i)) {
              // Shards name the tensor replica 0's state is (mirrors name it too).
              const Node *s = u->inputs[i];
              k.stateNames[i] = s->mirrorOf.empty() ? s->name : s->mirrorOf;
              k.operands[i] = nullptr;
            }
          kept[e.params[r]] = std::move(k);
        }
    g.eraseAll(dead);
    // Step 4.
    for (size_t bi = 0; bi < buckets.size(); ++bi) {
      shardBucket(g, buckets[bi], kept, "zero" + std::to_string(bi), replicas);
      ctx.count("shard-optimizer-state", "buckets");
    }
    for (const auto &[param, k] : kept)
      for (const std::string &s : k.stateNames)
        if (!s.empty()) ctx.count("shard-optimizer-state", "sharded-states");
    if (ctx.options.stats && ctx.log) {
      int64_t whole = 0, part = 0;
      for (const Bucket &b : buckets)
        for (const Entry &e : b.entries) {
          const Update &k = kept.at(e.params[0]);
          for (const std::string &s : k.stateNames)
            if (!s.empty()) whole += e.n * 4, part += e.s * 4;
        }
      *ctx.log << "shard-optimizer-state: " << byteSizeText(uint64_t(part))
               << " of optimizer state per replica instead of " << byteSizeText(uint64_t(whole))
               << " (" << replicas << " shards)\n";
    }
    return true;
  }

private:
  /// Where replica r's gradient `grad` of entry `e` comes from: an
  /// all_reduce of one gradient, or a reshape(slice) of a packed bucket's.
  static bool source(Node *grad, size_t r, Node *&reduce, Entry &e) {
    if (grad->isOp(ir::OpKind::AllReduce)) {
      reduce = grad;
      Node *local = grad->inputs[r];
      e.locals.push_back(local);
      e.flats.push_back(nullptr); // made flat in step 4
      e.offset = 0;
      return true;
    }
    if (!grad->isOp(ir::OpKind::Reshape) || !grad->inputs[0]->isOp(ir::OpKind::Slice)) return false;
    Node *slice = grad->inputs[0];
    if (!slice->inputs[0]->isOp(ir::OpKind::AllReduce)) return false;
    reduce = slice->inputs[0];
    int64_t start = std::get<int64_t>(slice->attrs.at("start"));
    Node *pack = reduce->inputs[r];
    MPC_ASSERT(pack->isOp(ir::OpKind::Concat), "a bucket's pack is not a concat");
    int64_t at = 0;
    for (Node *flat : pack->inputs) {
      if (at == start) {
        e.flats.push_back(flat);
        e.locals.push_back(flat->isOp(ir::OpKind::Reshape) ? flat->inputs[0] : flat);
        e.offset = start;
        return true;
      }
      at += flat->type.numElements();
    }
    throw InternalError("no gradient at offset " + std::to_string(start) + " of '" + pack->name + "'");
  }

  static void shardBucket(ir::Graph &g, Bucket &b, const Updates &kept, const std::string &base,
                          int64_t replicas) {
    std::vector<Entry> &entries = b.entries;
    int64_t t = 0;
    std::vector<int64_t> at; // each entry's offset in a part of the bucket
    for (const Entry &e : entries) at.push_back(t), t += e.s;
    auto suffix = [&](int64_t r) { return r ? ".dp" + std::to_string(r) : std::string(); };
    auto builder = [&](int64_t r, bool backward) {
      ir::Builder bl(g);
      bl.device = entries[0].params[size_t(r)]->device;
      bl.backward = backward;
      bl.origin = entries[0].params[size_t(r)]->name;
      return bl;
    };
    // The elements of part q of a flat tensor of n elements, padded to s.
    auto part = [](ir::Builder &bl, Node *flat, int64_t n, int64_t q, int64_t parts,
                   std::vector<Node *> &out) {
      ops::ElementRange range = ops::shardRange(n, parts, q);
      int64_t s = ops::shardElements(n, parts);
      if (range.size() > 0) out.push_back(bl.slice(flat, 0, range.begin, range.end));
      if (range.size() < s) out.push_back(bl.fill(0.0, {s - range.size()}));
    };
    // a. Packs.
    std::vector<Node *> packs;
    for (int64_t r = 0; r < replicas; ++r) {
      ir::Builder bl = builder(r, true);
      for (Entry &e : entries)
        if (!e.flats[size_t(r)])
          e.flats[size_t(r)] = e.locals[size_t(r)]->type.shape == ir::Shape{e.n}
                                   ? e.locals[size_t(r)]
                                   : bl.reshape(e.locals[size_t(r)], {e.n});
      std::vector<Node *> pieces;
      for (int64_t q = 0; q < replicas; ++q)
        for (const Entry &e : entries) part(bl, e.flats[size_t(r)], e.n, q, replicas, pieces);
      packs.push_back(join(bl, pieces, base + suffix(r) + ".pack"));
    }
    std::vector<Node *> mine(static_cast<size_t>(replicas)); // each replica's updated parts
    for (int64_t r = 0; r < replicas; ++r) {
      // b. This replica's part of the sum.
      ir::Builder bl = builder(r, true);
      Node *sum = bl.create(ir::OpKind::ReduceScatter, packs, {{"shard", r}},
                            base + suffix(r) + ".reduce_scatter");
      // c. The updates of part r.
      ir::Builder ul = builder(r, false);
      std::vector<Node *> updated;
      for (size_t i = 0; i < entries.size(); ++i) {
        const Entry &e = entries[i];
        Node *param = e.params[size_t(r)];
        ul.origin = param->name;
        Node *grad = entries.size() == 1 ? sum : ul.slice(sum, 0, at[i], at[i] + e.s);
        std::vector<Node *> pieces;
        Node *flat = param->type.shape == ir::Shape{e.n} ? param : ul.reshape(param, {e.n});
        part(ul, flat, e.n, r, replicas, pieces); // a slice or a fill: never the param itself
        Node *shard = join(ul, pieces, param->name + ".shard");
        const Update &k = kept.at(param);
        std::vector<Node *> operands = k.operands;
        operands[0] = shard;
        operands[1] = grad;
        for (size_t j = 0; j < operands.size(); ++j) {
          if (operands[j]) continue;
          Node *s = g.addState(g.uniqueName(k.stateNames[j] + ".shard" + std::to_string(r)),
                               ir::TensorType{ir::DType::F32, {e.s}},
                               ir::InitSpec{ir::InitSpec::Zeros}, param->name);
          s->device = param->device;
          s->shardOf = Node::ShardOf{k.stateNames[j], r, replicas, param->type.shape};
          operands[j] = s;
        }
        updated.push_back(ul.create(k.op, operands, k.attrs, param->name + ".shard_update"));
      }
      ul.origin = entries[0].params[size_t(r)]->name;
      mine[size_t(r)] = join(ul, updated, base + suffix(r) + ".updated");
    }
    for (int64_t r = 0; r < replicas; ++r) {
      // d. Every replica's updated parts.
      ir::Builder ul = builder(r, false);
      Node *all = ul.create(ir::OpKind::AllGather, mine, {}, base + suffix(r) + ".all_gather");
      // e. Each parameter whole again, and written back.
      for (size_t i = 0; i < entries.size(); ++i) {
        const Entry &e = entries[i];
        Node *param = e.params[size_t(r)];
        ul.origin = param->name;
        std::vector<Node *> pieces;
        for (int64_t q = 0; q < replicas; ++q) {
          ops::ElementRange range = ops::shardRange(e.n, replicas, q);
          if (range.size() > 0)
            pieces.push_back(ul.slice(all, 0, q * t + at[i], q * t + at[i] + range.size()));
        }
        Node *whole = join(ul, pieces, param->name + ".gathered");
        if (whole->type.shape != param->type.shape) whole = ul.reshape(whole, param->type.shape);
        ul.create(ir::OpKind::Assign, {param, whole}, {}, param->name + ".update");
        g.gradients.set(param->name, e.locals[size_t(r)]->name);
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> createShardOptimizerStatePass() {
  return std::make_unique<ShardOptimizerStatePass>();
}

} // namespace mpc::passes
