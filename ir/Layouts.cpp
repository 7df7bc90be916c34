//===- ir/Layouts.cpp - tensor-parallel layouts, proven -------------------===//
#include "ir/Layouts.h"

#include "ops/OpSchema.h"
#include "support/Error.h"

#include <map>
#include <set>

namespace mpc::ir {

namespace {

using ops::Layout;

Layout layoutOf(const Node *n) { return n->spmd ? n->spmd->layout : Layout::r(); }

/// The logical (whole) type of member `n`.
std::optional<TensorType> wholeType(const Node &n) {
  TensorType t = n.type;
  if (!n.spmd || !n.spmd->layout.split()) return t;
  size_t axis = size_t(n.spmd->layout.axis);
  if (axis >= t.shape.size()) return std::nullopt;
  t.shape[axis] *= n.spmd->size;
  return t;
}

std::string quoted(const Node *n) { return "'" + n->name + "'"; }

class LayoutChecker {
public:
  explicit LayoutChecker(const Graph &g) : g_(g) {}

  std::vector<LayoutProblem> run() {
    checkMembers();
    for (const auto &n : g_.nodes()) {
      if (!n->isOp()) continue;
      if (n->spmd) checkMember(*n);
      else checkWholeReader(*n);
    }
    std::vector<std::string> named = g_.outputs;
    if (!g_.loss.empty()) named.push_back(g_.loss);
    for (const std::string &name : named)
      if (const Node *n = g_.find(name); n && !layoutOf(n).replicated())
        problem(*n, "is " + std::string(name == g_.loss ? "the loss" : "an output") + " in layout " +
                        layoutOf(n).str() + ": the loss and the outputs must be whole (R)");
    return std::move(out_);
  }

private:
  const Graph &g_;
  std::vector<LayoutProblem> out_;

  void problem(const Node &n, std::string message) { out_.push_back({&n, std::move(message)}); }

  /// The members of one value: one per device, each index once, one size.
  void checkMembers() {
    struct Seen {
      const Node *first;
      std::set<int64_t> indices;
      std::set<std::string> devices;
    };
    std::map<std::string, Seen> values;
    for (const auto &n : g_.nodes()) {
      if (!n->spmd) continue;
      const Node::Spmd &s = *n->spmd;
      auto [it, fresh] = values.emplace(s.of, Seen{n.get(), {}, {}});
      const Node::Spmd &first = *it->second.first->spmd;
      if (!fresh && (first.size != s.size || first.layout != s.layout))
        problem(*n, "is a member of '" + s.of + "' unlike " + it->second.first->describe() + " (" +
                        s.layout.str() + " of " + std::to_string(s.size) + " vs " +
                        first.layout.str() + " of " + std::to_string(first.size) + ")");
      if (!it->second.indices.insert(s.index).second)
        problem(*n, "is member " + std::to_string(s.index) + " of '" + s.of + "' a second time");
      if (!it->second.devices.insert(n->device).second)
        problem(*n, "is a second member of '" + s.of + "' on " + n->device);
    }
  }

  /// A node outside the groups may read a group's value through a copy of
  /// its whole (R) value only.
  void checkWholeReader(const Node &n) {
    if (n.info().has(ops::kCollective)) return; // a data-parallel reduction of whole values
    for (const Node *in : n.inputs)
      if (in && !layoutOf(in).replicated())
        problem(n, "reads " + quoted(in) + " in layout " + layoutOf(in).str() +
                       " outside its group: only a whole (R) value leaves a group");
  }

  void checkMember(const Node &n) {
    const Node::Spmd &s = *n.spmd;
    std::vector<Layout> layouts;
    for (const Node *in : n.inputs) {
      if (!in) return; // reported by the verifier
      layouts.push_back(layoutOf(in));
    }
    if (n.isOp(OpKind::Copy)) {
      if (layouts[0] != s.layout && n.inputs[0]->spmd)
        problem(n, "copies " + quoted(n.inputs[0]) + " in layout " + layouts[0].str() +
                       " but claims " + s.layout.str());
      return;
    }
    if (n.info().has(ops::kCollective) && isRedistribution(n)) return checkCollective(n, layouts);
    if (n.isOp(OpKind::Slice) && layouts[0].replicated() && s.layout.split())
      return checkSlice(n);
    if (s.layout.partial() && layouts.size() <= 1 &&
        (n.isOp(OpKind::Fill) || (n.isOp(OpKind::Scale) && layouts[0].replicated())))
      return checkZeroFill(n);
    for (const Node *in : n.inputs)
      if (in->spmd && !n.info().has(ops::kCollective) &&
          (in->spmd->index != s.index || in->spmd->size != s.size))
        problem(n, "member " + std::to_string(s.index) + " of " + std::to_string(s.size) +
                       " reads " + quoted(in) + ", member " + std::to_string(in->spmd->index) +
                       " of " + std::to_string(in->spmd->size));
    std::vector<TensorType> types;
    for (const Node *in : n.inputs) {
      std::optional<TensorType> t = wholeType(*in);
      if (!t) return problem(n, "reads " + quoted(in) + " split along an axis it lacks");
      types.push_back(*t);
    }
    std::optional<TensorType> result = wholeType(n);
    if (!result) return problem(n, "is split along an axis its type lacks");
    const ops::OpSchema &schema = ops::schema(n.op);
    ops::ShardQuery q{types, layouts, *result, n.attrs, s.size};
    ops::ShardResult rule;
    try {
      rule = schema.shard ? schema.shard(q) : ops::replicatedRule(q);
    } catch (const RuleError &e) {
      return problem(n, std::string("sharding rule failed: ") + e.what());
    }
    for (size_t k = 0; k < layouts.size(); ++k)
      if (rule.operands[k] != layouts[k])
        problem(n, "reads " + quoted(n.inputs[k]) + " in layout " + layouts[k].str() + ", but " +
                       schema.name + " needs " + rule.operands[k].str() + " there" +
                       (layouts[k].partial() ? " (a partial sum read unreduced)" : "") +
                       (rule.why.empty() ? "" : ": " + rule.why));
    if (rule.result != s.layout)
      problem(n, "claims layout " + s.layout.str() + ", but " + schema.name + " of " +
                     "its operands' layouts gives " + rule.result.str());
    if (!rule.memberAttr.empty()) {
      auto it = n.attrs.find(rule.memberAttr);
      if (it == n.attrs.end() || !std::holds_alternative<int64_t>(it->second) ||
          std::get<int64_t>(it->second) != s.index)
        problem(n, "is member " + std::to_string(s.index) + " but its " + rule.memberAttr +
                       " says otherwise");
    }
  }

  /// A collective over the members of one value: a redistribution.
  static bool isRedistribution(const Node &n) {
    for (const Node *in : n.inputs)
      if (!in || !in->spmd || in->spmd->of != n.inputs[0]->spmd->of) return false;
    return true;
  }

  void checkCollective(const Node &n, const std::vector<Layout> &layouts) {
    const Layout want = n.isOp(OpKind::AllGather) ? Layout::s(0) : Layout::p();
    const Layout result = n.isOp(OpKind::ReduceScatter) ? Layout::s(0) : Layout::r();
    for (size_t k = 0; k < layouts.size(); ++k)
      if (layouts[k] != want)
        problem(n, std::string(opName(n.op)) + " reads " + quoted(n.inputs[k]) + " in layout " +
                       layouts[k].str() + ", but takes " + want.str() +
                       (want.partial() ? " (reducing a whole value would multiply it by " +
                                             std::to_string(layouts.size()) + ")"
                                       : ""));
    if (n.spmd->layout != result)
      problem(n, "claims layout " + n.spmd->layout.str() + ", but " + opName(n.op) + " gives " +
                     result.str());
  }

  /// R -> S(d): member i keeps part i along d.
  void checkSlice(const Node &n) {
    const Node::Spmd &s = *n.spmd;
    int64_t len = n.type.shape.size() > size_t(s.layout.axis) ? n.type.shape[size_t(s.layout.axis)] : -1;
    auto attr = [&](const char *k) {
      auto it = n.attrs.find(k);
      return it != n.attrs.end() && std::holds_alternative<int64_t>(it->second)
                 ? std::get<int64_t>(it->second)
                 : int64_t(-1);
    };
    if (attr("axis") != s.layout.axis || attr("start") != s.index * len ||
        attr("end") != (s.index + 1) * len)
      problem(n, "claims part " + std::to_string(s.index) + " of " + std::to_string(s.size) +
                     " along axis " + std::to_string(s.layout.axis) + " of " + quoted(n.inputs[0]) +
                     ", but slices another range");
  }

  /// R -> P: device 0 keeps the value (scale by 1), the others hold zeros.
  void checkZeroFill(const Node &n) {
    const Node::Spmd &s = *n.spmd;
    auto value = [&]() {
      auto it = n.attrs.find("value");
      return it != n.attrs.end() && std::holds_alternative<double>(it->second)
                 ? std::get<double>(it->second)
                 : -1.0;
    };
    bool ok = n.isOp(OpKind::Fill) ? s.index > 0 && value() == 0.0 : s.index == 0 && value() == 1.0;
    if (!ok)
      problem(n, "claims a partial sum of a whole value, but " +
                     std::string(n.isOp(OpKind::Fill) ? "a member other than 0 must hold zeros"
                                                      : "member 0 must hold the value itself"));
  }
};

} // namespace

std::vector<LayoutProblem> checkLayouts(const Graph &g) {
  for (const auto &n : g.nodes())
    if (n->spmd) return LayoutChecker(g).run();
  return {};
}

} // namespace mpc::ir
