//===- ir/Collectives.cpp - the members of collectives, checked ---------===//
#include "ir/Collectives.h"

#include <algorithm>
#include <map>
#include <optional>

namespace mpc::ir {

namespace {

std::string groupText(const std::vector<const Node *> &contributions) {
  std::string s;
  for (const Node *c : contributions) s += (s.empty() ? "" : ", ") + c->device;
  return "[" + s + "]";
}

void checkMember(const Node &n, std::vector<CollectiveProblem> &out) {
  std::optional<size_t> self;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Node *in = n.inputs[i];
    for (size_t j = 0; j < i; ++j)
      if (n.inputs[j]->device == in->device)
        out.push_back({&n, "operands " + std::to_string(j) + " and " + std::to_string(i) +
                               " both lie on '" + in->device + "': a collective takes one " +
                               "contribution per device"});
    if (in->device == n.device) self = i;
  }
  if (!self) {
    out.push_back({&n, "runs on '" + n.device + "', where none of its operands lies: a member " +
                           "runs on a device of its group"});
    return;
  }
  if (n.isOp(OpKind::ReduceScatter)) {
    auto it = n.attrs.find("shard");
    if (it != n.attrs.end() && std::holds_alternative<int64_t>(it->second) &&
        std::get<int64_t>(it->second) != int64_t(*self))
      out.push_back({&n, "keeps shard " + std::to_string(std::get<int64_t>(it->second)) +
                             ", but its device '" + n.device + "' is member " +
                             std::to_string(*self) + " of the group"});
  }
}

} // namespace

std::vector<CollectiveProblem> checkCollectives(const Graph &g) {
  std::vector<CollectiveProblem> out;
  std::map<std::pair<OpKind, std::vector<const Node *>>, std::vector<const Node *>> members;
  for (const auto &n : g.nodes()) {
    if (!n->isOp() || !n->info().has(kCollective)) continue;
    checkMember(*n, out);
    members[{n->op, {n->inputs.begin(), n->inputs.end()}}].push_back(n.get());
  }
  for (const auto &[key, nodes] : members) {
    const std::vector<const Node *> &contributions = key.second;
    for (const Node *c : contributions) {
      size_t on = size_t(std::count_if(nodes.begin(), nodes.end(),
                                       [&](const Node *m) { return m->device == c->device; }));
      if (on == 0)
        out.push_back({nodes[0], std::string(opName(key.first)) + " over " +
                                     groupText(contributions) + " has no member on '" +
                                     c->device + "': every device of the group must take part"});
      else if (on > 1)
        out.push_back({nodes[0], std::string(opName(key.first)) + " over " +
                                     groupText(contributions) + " has " + std::to_string(on) +
                                     " members on '" + c->device + "'"});
    }
  }
  return out;
}

} // namespace mpc::ir
