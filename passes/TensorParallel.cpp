//===- passes/TensorParallel.cpp - groups of several devices, SPMD --------===//
//
// Tensor parallelism changes where work runs, never what it computes.
//
// Invariant established: no node sits on a device set ("cpu:0+cpu:1", a
// group mapped to t devices by --map or the model's "groups"). Each node of
// such a group is replaced by t members, member i on the set's device i,
// holding its part of the logical value in the value's layout
// (ops/Layout.h, recorded in Node::spmd). Every member reads its operands'
// member i; where an op needs another layout than its operand has, an
// explicit redistribution sits between them:
//   P -> R    all_reduce            R -> S(d) a local slice
//   P -> S(d) reduce_scatter        R -> P    member 0 keeps it, the others 0
//   S(d) -> R all_gather            (S(d) -> S(e) and S -> P through R)
// (for d > 0, a local transpose brings axis d to the front first, since the
// collectives split axis 0). Each value is redistributed to a layout once:
// its uses share the result, as copies are shared. Autodiff ran on the
// logical graph, so the backward's collectives fall out of the same rules.
//
// Algorithm, in one walk in topological order after a dry run:
//   0. The dry run finds the layouts the walk will find without building
//      anything, to learn which partial sums some use needs whole: their
//      linear users then read the reduced value, so each is reduced once.
//   1. Leaves. A param with "shard": D becomes t params, part i of t along
//      axis D each (Node::shardOf with its axis: the plan holds the tensor
//      whole); without, member 0 is the param itself and the others mirror
//      it (Node::mirrorOf). A state takes its parameter's layout when it
//      has its shape (momentum, Adam's moments), else R (a step counter).
//      An input stays whole on device 0; device i receives it (or its part
//      i, sliced on device 0) by a copy.
//   2. Ops. The op's sharding rule (ops::OpSchema::shard) is asked with the
//      operands' layouts; each operand is redistributed to the layout the
//      rule needs. A declared split (a param, input or state in S) is never
//      gathered: that would undo the split every step. When the rule would
//      move one, it is asked again with the other operands whole; if that
//      does not keep it either, it is an error naming the node, the op, both
//      layouts and the rule's reason. Then member i is the op on the
//      operands' members i, with the rule's local attributes (reshape's
//      shape of a part; dropout's part, the member's index) and its part's
//      type.
//   3. Copies. Into a group from one device: device i receives its own
//      copy. Out of a group: the value made R, member 0's part sent. Between
//      groups of one size: member i to member i, in any layout; of other
//      sizes: R, member i mod t sent.
//   4. The loss and the outputs are made R; member 0 of that takes the
//      logical name, so plans name them as before.
//   5. The logical nodes go, and member 0 of each op takes its name. A
//      member's origin (the forward node a backward node differentiates)
//      becomes its origin's member on its own device, and each parameter's
//      member has its gradient's member in the parameter's layout.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/Device.h"
#include "ops/Layout.h"
#include "ops/OpSchema.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <map>
#include <ostream>
#include <unordered_set>

namespace mpc::passes {

namespace {

using ir::Node;
using ops::Layout;
using ir::TensorType;

class Expander {
public:
  Expander(ir::Graph &g, PassContext &ctx) : g_(g), ctx_(ctx) {}

  bool run() {
    std::vector<Node *> order = g_.topoOrder();
    // Each logical node's devices, parsed once (empty: one device).
    sets_.resize(g_.idBound());
    bool any = false;
    for (Node *n : order) {
      sets_[size_t(n->id)] = ir::deviceSetMembers(n->device);
      any |= !sets_[size_t(n->id)].empty();
    }
    if (!any) return false;
    members_.resize(g_.idBound());
    layout_.resize(g_.idBound());
    planWholeUses(order);
    for (Node *n : order) {
      const std::vector<std::string> &devices = sets_[size_t(n->id)];
      if (devices.empty()) {
        connectSingle(n);
        continue;
      }
      if (n->isLeaf()) expandLeaf(n, devices);
      else if (n->isOp(ir::OpKind::Copy)) expandCopy(n, devices);
      else expandOp(n, devices);
    }
    finish();
    return true;
  }

private:
  ir::Graph &g_;
  PassContext &ctx_;
  /// By logical node id: its members (empty: the node is on one device)
  /// and its layout.
  std::vector<std::vector<Node *>> members_;
  std::vector<Layout> layout_;
  /// By logical node id: the devices of its group (empty: one device).
  std::vector<std::vector<std::string>> sets_;
  /// (logical node id, layout) -> the members of its redistribution.
  std::map<std::pair<int, std::string>, std::vector<Node *>> redistributed_;
  std::vector<const Node *> dead_;                   ///< logical nodes to erase
  std::vector<std::pair<Node *, std::string>> names_; ///< member 0 -> logical name
  std::map<std::string, int64_t> counts_;            ///< redistributions by kind
  std::vector<std::string> gathers_;                 ///< S -> R, for --stats

  /// By logical node id: a partial sum (P) that some use needs whole (R)
  /// anyway. Linear ops that could read it as P read the reduced value
  /// instead, so it is reduced once: LayerNorm's beta gradient, a sum over
  /// rows of dy, shares dy's all-reduce instead of adding its own.
  std::vector<char> wholeUse_;

  const std::vector<Node *> &of(const Node *n) { return members_[size_t(n->id)]; }

  /// The layout of leaf `n` given its parameter's (states follow it).
  Layout leafLayout(const Node *n, const std::vector<Layout> &layouts) {
    if (n->kind == ir::NodeKind::State) {
      const Node *p = g_.find(n->origin);
      MPC_ASSERT(p, "state '" + n->name + "' of an unknown parameter");
      return p->type.shape == n->type.shape ? layouts[size_t(p->id)] : Layout::r();
    }
    return n->shard ? Layout::s(int(*n->shard)) : Layout::r();
  }

  /// The devices of logical node `n`'s group; 0 for one device.
  size_t groupSize(const Node *n) const {
    return size_t(n->id) < sets_.size() ? sets_[size_t(n->id)].size() : 0;
  }

  /// The layout a rule is shown for operand `in` whose layout is `l`.
  Layout shown(const Node *in, Layout l) const {
    return l.partial() && wholeUse_[size_t(in->id)] ? Layout::r() : l;
  }

  /// The rule of op `n` over its operands' layouts. A declared split (a
  /// leaf in S) is kept if any choice allows: when the rule would move one,
  /// it is asked again with every other operand whole, and that answer
  /// wins if it keeps the leaves (the activations then move instead; the
  /// gradient of a row-parallel layer's input reads its weight as it lies).
  ops::ShardResult ruleOf(const Node *n, const std::vector<Layout> &layouts) {
    std::vector<TensorType> types;
    for (const Node *in : n->inputs) types.push_back(in->type);
    const ops::OpSchema &schema = ops::schema(n->op);
    auto ask = [&](const std::vector<Layout> &ls) {
      ops::ShardQuery q{types, ls, n->type, n->attrs, int64_t(groupSize(n))};
      return schema.shard ? schema.shard(q) : ops::replicatedRule(q);
    };
    ops::ShardResult rule = ask(layouts);
    auto movesLeaf = [&](const ops::ShardResult &r) {
      for (size_t k = 0; k < layouts.size(); ++k)
        if (n->inputs[k]->isLeaf() && layouts[k].split() && r.operands[k] != layouts[k]) return true;
      return false;
    };
    if (!movesLeaf(rule)) return rule;
    std::vector<Layout> whole = layouts;
    for (size_t k = 0; k < whole.size(); ++k)
      if (!n->inputs[k]->isLeaf()) whole[k] = Layout::r();
    ops::ShardResult other = ask(whole);
    return movesLeaf(other) ? rule : other;
  }

  /// Layouts as step 2 will find them, without building anything: which
  /// partial sums some use needs whole.
  void planWholeUses(const std::vector<Node *> &order) {
    wholeUse_.assign(g_.idBound(), 0);
    std::vector<Layout> planned(g_.idBound());
    auto onSet = [&](const Node *n) { return groupSize(n) > 0; };
    auto needWhole = [&](const Node *in) {
      if (planned[size_t(in->id)].partial()) wholeUse_[size_t(in->id)] = 1;
    };
    for (const Node *n : order) {
      if (!onSet(n)) {
        for (const Node *in : n->inputs)
          if (onSet(in)) needWhole(in);
        continue;
      }
      if (n->isLeaf()) {
        planned[size_t(n->id)] = leafLayout(n, planned);
        continue;
      }
      if (n->isOp(ir::OpKind::Copy)) {
        const Node *src = n->inputs[0];
        if (onSet(src) && groupSize(src) == groupSize(n)) planned[size_t(n->id)] = planned[size_t(src->id)];
        else if (onSet(src)) needWhole(src);
        continue;
      }
      std::vector<Layout> layouts;
      for (const Node *in : n->inputs) layouts.push_back(shown(in, planned[size_t(in->id)]));
      if (layouts.size() != n->inputs.size()) continue;
      ops::ShardResult rule = ruleOf(n, layouts);
      for (size_t k = 0; k < n->inputs.size(); ++k)
        if (rule.operands[k].replicated()) needWhole(n->inputs[k]);
      planned[size_t(n->id)] = rule.result;
    }
    for (const std::string &name : g_.outputs)
      if (const Node *n = g_.find(name); n && onSet(n)) needWhole(n);
    if (const Node *n = g_.find(g_.loss); n && onSet(n)) needWhole(n);
  }
  bool expanded(const Node *n) const {
    return size_t(n->id) < members_.size() && !members_[size_t(n->id)].empty();
  }

  /// A member of `logical` on device `device`.
  static void label(Node *m, const Node *logical, size_t i, size_t t, Layout l) {
    m->spmd = Node::Spmd{logical->name, int64_t(i), int64_t(t), l};
    m->microbatch = logical->microbatch;
  }

  ir::Builder builderFor(const Node *logical, const std::string &device) {
    ir::Builder b(g_);
    b.device = device;
    b.backward = logical->backward;
    b.origin = logical->origin;
    return b;
  }

  static std::string memberName(const std::string &base, size_t i) {
    return base + ".tp" + std::to_string(i);
  }

  // Step 1.
  void expandLeaf(Node *n, const std::vector<std::string> &devices) {
    const size_t t = devices.size();
    Layout l = leafLayout(n, layout_);
    if (n->shardOf)
      throw UserError(g_.sourceFile, n->where(),
                      n->describe() + " is a ZeRO-1 shard on the tensor-parallel group " +
                          n->device + ": --zero=1 does not compose with tensor parallelism yet");
    layout_[size_t(n->id)] = l;
    std::vector<Node *> &ms = members_[size_t(n->id)];
    if (n->kind == ir::NodeKind::Input) {
      n->device = devices[0];
      if (l.replicated()) {
        label(n, n, 0, t, l);
        ms.push_back(n);
        for (size_t i = 1; i < t; ++i) {
          ir::Builder b = builderFor(n, devices[i]);
          Node *c = b.copyTo(n, devices[i]);
          label(c, n, i, t, l);
          ms.push_back(c);
        }
        return;
      }
      TensorType part = localType(*n, l, t);
      int64_t len = part.shape[size_t(l.axis)];
      for (size_t i = 0; i < t; ++i) {
        ir::Builder b = builderFor(n, devices[0]);
        Node *s = b.create(ir::OpKind::Slice, {n},
                           {{"axis", int64_t(l.axis)},
                            {"start", int64_t(i) * len},
                            {"end", int64_t(i + 1) * len}},
                           n->name + ".part" + std::to_string(i));
        if (i == 0) {
          label(s, n, 0, t, l);
          ms.push_back(s);
          continue;
        }
        ir::Builder r = builderFor(n, devices[i]);
        Node *c = r.copyTo(s, devices[i]);
        label(c, n, i, t, l);
        ms.push_back(c);
      }
      return;
    }
    // Param or State.
    const TensorType part = localType(*n, l, t);
    std::string tensor = n->mirrorOf.empty() ? n->name : n->mirrorOf;
    // A state's parameter, whose members own the state's members.
    const Node *param = n->kind == ir::NodeKind::State ? g_.find(n->origin) : nullptr;
    for (size_t i = 0; i < t; ++i) {
      Node *m = nullptr;
      if (i == 0 && l.replicated()) {
        m = n;
        m->device = devices[0];
        if (param) m->origin = of(param)[0]->name;
      } else {
        std::string name = g_.uniqueName(memberName(n->name, i));
        if (n->kind == ir::NodeKind::Param) {
          m = g_.addParam(name, part, *n->init);
          m->lrMult = n->lrMult;
          m->wdMult = n->wdMult;
        } else {
          m = g_.addState(name, part, *n->init, of(param)[i]->name);
        }
        m->device = devices[i];
        m->jsonPath = n->jsonPath;
        // A split tensor's part i (of a data-parallel replica: mirroring
        // part i of the tensor); a replicated one's copy, a mirror.
        if (l.split()) m->shardOf = Node::ShardOf{tensor, int64_t(i), int64_t(t), n->type.shape, l.axis};
        if (!l.split() || !n->mirrorOf.empty()) m->mirrorOf = tensor;
      }
      label(m, n, i, t, l);
      ms.push_back(m);
    }
    if (l.split()) {
      dead_.push_back(n);
      if (n->kind == ir::NodeKind::Param && g_.gradients.count(n->name)) splitParams_.push_back(n);
    }
  }
  std::vector<Node *> splitParams_;

  // Step 3, into a group.
  void expandCopy(Node *n, const std::vector<std::string> &devices) {
    const size_t t = devices.size();
    Node *src = n->inputs[0];
    std::vector<Node *> &ms = members_[size_t(n->id)];
    std::vector<Node *> from;
    Layout l = Layout::r();
    if (!expanded(src)) {
      from.assign(t, src);
    } else if (of(src).size() == t) {
      from = of(src);
      l = layout_[size_t(src->id)];
    } else {
      const std::vector<Node *> &whole = redistribute(src, Layout::r(), n);
      for (size_t i = 0; i < t; ++i) from.push_back(whole[i % whole.size()]);
    }
    layout_[size_t(n->id)] = l;
    for (size_t i = 0; i < t; ++i) {
      Node *m = from[i];
      if (m->device != devices[i]) {
        ir::Builder b = builderFor(n, devices[i]);
        m = b.copyTo(from[i], devices[i], g_.uniqueName(memberName(n->name, i)));
        m->microbatch = n->microbatch;
        label(m, n, i, t, l);
        if (i == 0) names_.push_back({m, n->name});
      }
      ms.push_back(m);
    }
    dead_.push_back(n);
  }

  // Step 3, out of a group: a node on one device reading a group's value.
  void connectSingle(Node *n) {
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      Node *in = n->inputs[k];
      if (!expanded(in)) continue;
      if (!n->isOp(ir::OpKind::Copy))
        throw InternalError(n->describe() + " on " + n->device + " reads " + in->describe() +
                            " of a tensor-parallel group without a copy");
      const std::vector<Node *> &whole = redistribute(in, Layout::r(), n);
      size_t j = 0;
      for (size_t i = 0; i < whole.size(); ++i)
        if (whole[i]->device == n->device) j = i;
      if (whole[j]->device == n->device) {
        // The group holds it here already: no copy.
        g_.replaceAllUses(n, whole[j]);
        dead_.push_back(n);
        continue;
      }
      n->inputs[k] = whole[j];
    }
  }

  // Step 2.
  void expandOp(Node *n, const std::vector<std::string> &devices) {
    const size_t t = devices.size();
    std::vector<Layout> layouts;
    for (Node *in : n->inputs) {
      if (!expanded(in))
        throw InternalError(n->describe() + " on " + n->device + " reads " + in->describe() +
                            " on " + in->device + " without a copy");
      if (of(in).size() != t)
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() + " on " + n->device + " reads " + in->describe() + " of " +
                            in->device + ", a group of another size");
      layouts.push_back(shown(in, layout_[size_t(in->id)]));
    }
    ops::ShardResult rule = ruleOf(n, layouts);
    std::vector<std::vector<Node *>> operands;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      Node *in = n->inputs[k];
      const Layout &need = rule.operands[k];
      if (need != layouts[k] && in->isLeaf() && layouts[k].split())
        throw UserError(g_.sourceFile, n->where(),
                        n->describe() + " on " + n->device + " cannot take " + in->describe() +
                            " split along axis " + std::to_string(layouts[k].axis) + " (" +
                            layouts[k].str() + "): it needs " + need.str() + " (" +
                            (rule.why.empty() ? std::string("its sharding rule") : rule.why) +
                            "); declare \"shard\" on another axis, or none");
      operands.push_back(redistribute(in, need, n));
    }
    layout_[size_t(n->id)] = rule.result;
    TensorType want;
    try {
      want = ops::localType(n->type, rule.result, int64_t(t));
    } catch (const RuleError &e) {
      throw UserError(g_.sourceFile, n->where(),
                      n->describe() + " on " + n->device + " would be " + rule.result.str() +
                          ", but " + e.what());
    }
    ir::AttrMap attrs = rule.localAttrs.empty() ? n->attrs : rule.localAttrs;
    if (n->info().drawsMask(attrs) && std::get<std::string>(attrs.at("key")).empty())
      attrs["key"] = ir::dropoutKeyName(*n);
    std::vector<Node *> &ms = members_[size_t(n->id)];
    for (size_t i = 0; i < t; ++i) {
      std::vector<Node *> ins;
      for (size_t k = 0; k < operands.size(); ++k) {
        // A collective's operand k is its group's device k: here, the other
        // replicas' parts i.
        ins.push_back(operands[k][i]);
      }
      ir::Builder b = builderFor(n, devices[i]);
      if (!rule.memberAttr.empty()) attrs[rule.memberAttr] = int64_t(i);
      Node *m = b.create(n->op, ins, attrs, memberName(n->name, i));
      m->microbatch = n->microbatch;
      if (m->type != want)
        throw InternalError("tensor-parallel: member " + std::to_string(i) + " of " +
                            n->describe() + " is " + m->type.str() + ", expected " + want.str() +
                            " (" + rule.result.str() + ")");
      label(m, n, i, t, rule.result);
      if (i == 0) names_.push_back({m, n->name});
      ms.push_back(m);
    }
    dead_.push_back(n);
  }

  /// The members of `x` in layout `to`, made once per (value, layout).
  const std::vector<Node *> &redistribute(Node *x, Layout to, const Node *user) {
    const Layout from = layout_[size_t(x->id)];
    if (from == to) return of(x);
    auto key = std::make_pair(x->id, to.str());
    if (auto it = redistributed_.find(key); it != redistributed_.end()) return it->second;
    std::vector<Node *> out = convert(x, of(x), from, to, user);
    return redistributed_[key] = std::move(out);
  }

  std::vector<Node *> convert(Node *x, const std::vector<Node *> &xs, Layout from, Layout to,
                              const Node *user) {
    const size_t t = xs.size();
    if (from == to) return xs;
    if (from.split() && !to.replicated()) {
      std::vector<Node *> whole = redistribute(x, Layout::r(), user);
      return convert(x, whole, Layout::r(), to, user);
    }
    if (from.replicated() && to.split()) return slices(x, xs, to);
    if (from.replicated() && to.partial()) {
      ++counts_["zero-fills"];
      std::vector<Node *> out;
      const std::string base = g_.uniqueName(x->name + ".partial");
      for (size_t i = 0; i < t; ++i) {
        ir::Builder b = builderFor(x, xs[i]->device);
        Node *m = i == 0 ? b.create(ir::OpKind::Scale, {xs[0]}, {{"value", 1.0}}, base)
                         : b.create(ir::OpKind::Fill, {},
                                    {{"value", 0.0}, {"shape", xs[i]->type.shape}},
                                    memberName(base, i));
        label(m, x, i, t, Layout::p());
        m->spmd->of = base;
        out.push_back(m);
      }
      return out;
    }
    // A collective: P -> R, P -> S(d), S(d) -> R.
    int axis = from.split() ? from.axis : to.split() ? to.axis : 0;
    std::vector<Node *> front = xs;
    std::vector<int64_t> perm;
    if (axis > 0) {
      // Axis `axis` to the front: the collectives split and join axis 0.
      perm.push_back(axis);
      for (int a = 0; a < int(x->type.rank()); ++a)
        if (a != axis) perm.push_back(a);
      front = transposed(x, xs, perm, from, ".front");
    }
    ir::OpKind kind = from.partial() ? (to.replicated() ? ir::OpKind::AllReduce
                                                        : ir::OpKind::ReduceScatter)
                                     : ir::OpKind::AllGather;
    const char *suffix = kind == ir::OpKind::AllReduce       ? ".allreduce"
                         : kind == ir::OpKind::ReduceScatter ? ".reducescatter"
                                                             : ".allgather";
    ++counts_[kind == ir::OpKind::AllReduce       ? "all-reduces"
              : kind == ir::OpKind::ReduceScatter ? "reduce-scatters"
                                                  : "all-gathers"];
    if (kind == ir::OpKind::AllGather)
      gathers_.push_back("'" + x->name + "' " + from.str() + " -> R for " + user->describe());
    std::vector<Node *> out;
    const std::string base = g_.uniqueName(x->name + suffix);
    Layout after = kind == ir::OpKind::AllReduce ? Layout::r()
                   : kind == ir::OpKind::ReduceScatter ? Layout::s(0)
                                                       : Layout::r();
    const ir::DType low = front[0]->type.dtype;
    if (ops::isLowPrecision(low)) {
      Layout l = front[0]->spmd ? front[0]->spmd->layout : from;
      front = castAll(x, front, ir::DType::F32, l);
    }
    for (size_t i = 0; i < t; ++i) {
      ir::Builder b = builderFor(x, xs[i]->device);
      ir::AttrMap attrs;
      if (kind == ir::OpKind::ReduceScatter) attrs["shard"] = int64_t(i);
      Node *m = b.create(kind, front, attrs, i == 0 ? base : memberName(base, i));
      label(m, x, i, t, after);
      m->spmd->of = base;
      out.push_back(m);
    }
    if (ops::isLowPrecision(low)) out = castAll(x, out, low, after);
    if (axis > 0) {
      std::vector<int64_t> back(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) back[size_t(perm[k])] = int64_t(k);
      out = transposed(x, out, back, to.split() ? Layout::s(0) : Layout::r(), ".back");
    }
    return out;
  }

  /// Each member cast to `to`, labelled as a value of its own in layout
  /// `l`: collectives add and move f32 (a bf16 or f16 value crosses them in
  /// f32 and is cast back after).
  std::vector<Node *> castAll(Node *x, const std::vector<Node *> &xs, ir::DType to, Layout l) {
    std::vector<Node *> out;
    std::string base = g_.uniqueName(xs[0]->name + "." + ops::dtypeName(to));
    for (size_t i = 0; i < xs.size(); ++i) {
      ir::Builder b = builderFor(x, xs[i]->device);
      Node *m = b.create(ir::OpKind::Cast, {xs[i]}, {{"to", std::string(ops::dtypeName(to))}},
                         i == 0 ? base : memberName(base, i));
      m->spmd = Node::Spmd{base, int64_t(i), int64_t(xs.size()), l};
      m->microbatch = x->microbatch;
      out.push_back(m);
    }
    return out;
  }

  /// Each member's transpose by `perm`, labelled as a value of its own.
  std::vector<Node *> transposed(Node *x, const std::vector<Node *> &xs,
                                 const std::vector<int64_t> &perm, Layout from,
                                 const std::string &suffix) {
    std::vector<Node *> out;
    Layout l = from;
    if (l.split())
      for (size_t k = 0; k < perm.size(); ++k)
        if (perm[k] == from.axis) l = Layout::s(int(k));
    std::string base = g_.uniqueName(xs[0]->name + suffix);
    for (size_t i = 0; i < xs.size(); ++i) {
      ir::Builder b = builderFor(x, xs[i]->device);
      Node *m = b.create(ir::OpKind::Transpose, {xs[i]}, {{"perm", perm}},
                         i == 0 ? base : memberName(base, i));
      m->spmd = Node::Spmd{base, int64_t(i), int64_t(xs.size()), l};
      m->microbatch = x->microbatch;
      out.push_back(m);
    }
    return out;
  }

  std::vector<Node *> slices(Node *x, const std::vector<Node *> &xs, Layout to) {
    ++counts_["slices"];
    const size_t t = xs.size();
    TensorType part = ops::localType(x->type, to, int64_t(t));
    int64_t len = part.shape[size_t(to.axis)];
    std::vector<Node *> out;
    std::string base = g_.uniqueName(x->name + ".part" + std::to_string(to.axis));
    for (size_t i = 0; i < t; ++i) {
      ir::Builder b = builderFor(x, xs[i]->device);
      Node *m = b.create(ir::OpKind::Slice, {xs[i]},
                         {{"axis", int64_t(to.axis)},
                          {"start", int64_t(i) * len},
                          {"end", int64_t(i + 1) * len}},
                         i == 0 ? base : memberName(base, i));
      m->spmd = Node::Spmd{base, int64_t(i), int64_t(t), to};
      m->microbatch = x->microbatch;
      out.push_back(m);
    }
    return out;
  }

  static TensorType localType(const Node &n, Layout l, size_t t) {
    return ops::localType(n.type, l, int64_t(t));
  }

  // Steps 4 and 5.
  void finish() {
    // Step 4: the loss and the outputs whole, under their own names.
    std::vector<std::string> named = g_.outputs;
    if (!g_.loss.empty()) named.push_back(g_.loss);
    std::map<std::string, Node *> wholeOf;
    for (const std::string &name : named) {
      Node *n = g_.find(name);
      if (!n || !expanded(n) || layout_[size_t(n->id)].replicated()) continue;
      wholeOf[name] = redistribute(n, Layout::r(), n)[0];
    }
    // Each member of a parameter: its gradient's member in its layout
    // (what its update reads).
    std::vector<std::pair<Node *, Node *>> memberGrads;
    for (const auto &n : g_.nodes()) {
      if (n->kind != ir::NodeKind::Param || !n->spmd) continue;
      const std::string &logical = n->spmd->of;
      Node *p = n->shardOf ? findDead(logical) : g_.find(logical);
      if (!p || !g_.gradients.count(logical)) continue;
      Node *gn = g_.find(g_.gradients.at(logical));
      if (!gn || !expanded(gn)) continue;
      memberGrads.push_back(
          {n.get(), redistribute(gn, layout_[size_t(p->id)], p)[size_t(n->spmd->index)]});
    }
    for (Node *p : splitParams_) g_.gradients.erase(p->name);
    // Step 5. A member's origin (the forward node a backward node
    // differentiates, the parameter of an update) is its origin's member on
    // its own device, named once the renames are done.
    std::vector<std::pair<Node *, const std::vector<Node *> *>> origins;
    std::map<std::string, const Node *> logical;
    for (const auto &n : g_.nodes())
      if (expanded(n.get())) logical[n->name] = n.get();
    for (const auto &n : g_.nodes()) {
      if (!n->spmd || n->origin.empty()) continue;
      auto it = logical.find(n->origin);
      if (it == logical.end()) continue;
      const std::vector<Node *> &ms = of(it->second);
      if (size_t(n->spmd->index) < ms.size() && ms.size() == size_t(n->spmd->size))
        origins.push_back({n.get(), &ms});
    }
    std::unordered_set<const Node *> dead(dead_.begin(), dead_.end());
    g_.eraseAll(dead);
    for (auto &[m, name] : names_) {
      if (wholeOf.count(name)) continue;
      if (!g_.find(name)) g_.rename(m, name);
    }
    for (auto &[name, m] : wholeOf) {
      Node *part = g_.find(name);
      if (part && part != m) g_.rename(part, g_.uniqueName(name + ".part"));
      g_.rename(m, name);
    }
    for (auto &[param, grad] : memberGrads) g_.gradients.set(param->name, grad->name);
    for (auto &[m, ms] : origins) m->origin = (*ms)[size_t(m->spmd->index)]->name;
    report();
  }

  /// A split parameter's logical node, which step 5 erases.
  Node *findDead(const std::string &name) {
    for (Node *p : splitParams_)
      if (p->name == name) return p;
    return nullptr;
  }

  void report() {
    for (const auto &[kind, n] : counts_) ctx_.count("tensor-parallel", kind, n);
    if (!ctx_.options.stats || !ctx_.log) return;
    std::string line;
    for (const auto &[kind, n] : counts_)
      line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    *ctx_.log << "tensor-parallel: redistributions: " << (line.empty() ? "none" : line) << "\n";
    for (const std::string &g : gathers_) *ctx_.log << "tensor-parallel: all-gather of " << g << "\n";
  }
};

class TensorParallelPass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    if (!g.has(ir::kPlaced) || !g.has(ir::kCopiesExplicit)) {
      for (const auto &n : g.nodes())
        if (ir::parseDeviceSet(n->device))
          throw UserError(g.sourceFile, "--passes",
                          "tensor-parallel needs a placed graph with explicit copies: run "
                          "'place' and 'insert-copies' first");
      return false;
    }
    return Expander(g, ctx).run();
  }
};

} // namespace

std::unique_ptr<Pass> createTensorParallelPass() { return std::make_unique<TensorParallelPass>(); }

} // namespace mpc::passes
