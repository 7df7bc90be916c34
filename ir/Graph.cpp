//===- ir/Graph.cpp - the mpc graph IR ----------------------------------===//
#include "ir/Graph.h"

#include "support/Error.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iterator>
#include <queue>
#include <unordered_map>

namespace mpc::ir {

const char *nodeKindName(NodeKind k) {
  switch (k) {
  case NodeKind::Input: return "input";
  case NodeKind::Param: return "param";
  case NodeKind::State: return "state";
  case NodeKind::Op: return "op";
  }
  return "?";
}

std::string pipelineScheduleList() {
  return choiceText({std::begin(kPipelineSchedules), std::end(kPipelineSchedules)});
}

std::string InitSpec::str() const {
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  switch (kind) {
  case Constant: return "constant(" + num(a) + ")";
  case Zeros: return "zeros";
  case Ones: return "ones";
  case Uniform: return "uniform(" + num(a) + "," + num(b) + ")";
  case Normal: return "normal(" + num(a) + "," + num(b) + ")";
  case Xavier: return "xavier(" + num(a) + ")";
  }
  return "?";
}

const OpInfo &Node::info() const {
  MPC_ASSERT(isOp(), "info() on a leaf node '" + name + "'");
  return opInfo(op);
}

std::string Node::describe() const {
  return "'" + name + "' (" + (isOp() ? std::string(info().name) : nodeKindName(kind)) + ")";
}

std::string Node::where() const { return jsonPath.empty() ? "'" + name + "'" : jsonPath; }

Node *Graph::add(std::unique_ptr<Node> node) {
  Node *raw = node.get();
  // One lookup registers the name and finds a clash (this runs per node).
  bool fresh = byName_.insert(raw);
  MPC_ASSERT(fresh, "duplicate node name '" + raw->name + "'");
  raw->id = nextId_++;
  byId_.push_back(raw);
  nodes_.push_back(std::move(node));
  return raw;
}

Node *Graph::addInput(const std::string &n, TensorType type) {
  auto node = std::make_unique<Node>();
  node->name = n;
  node->kind = NodeKind::Input;
  node->type = std::move(type);
  return add(std::move(node));
}

Node *Graph::addParam(const std::string &n, TensorType type, InitSpec init) {
  auto node = std::make_unique<Node>();
  node->name = n;
  node->kind = NodeKind::Param;
  node->type = std::move(type);
  node->init = init;
  return add(std::move(node));
}

Node *Graph::addState(const std::string &n, TensorType type, InitSpec init,
                      const std::string &param) {
  auto node = std::make_unique<Node>();
  node->name = n;
  node->kind = NodeKind::State;
  node->type = std::move(type);
  node->init = init;
  node->origin = param;
  return add(std::move(node));
}

Node *Graph::addOp(const std::string &n, OpKind op, std::vector<Node *> inputs,
                   AttrMap attrs, TensorType type) {
  auto node = std::make_unique<Node>();
  node->name = n;
  node->kind = NodeKind::Op;
  node->op = op;
  node->inputs = std::move(inputs);
  node->attrs = std::move(attrs);
  node->type = std::move(type);
  return add(std::move(node));
}

Node *Graph::find(const std::string &n) const {
  return byName_.find(n);
}

namespace {

/// Whether inputs[i] already appeared among inputs[0..i): a node using a
/// value twice counts it once. Operand lists are short, so a scan is cheaper
/// than a set.
bool repeated(const std::vector<Node *> &inputs, size_t i) {
  return std::find(inputs.begin(), inputs.begin() + long(i), inputs[i]) !=
         inputs.begin() + long(i);
}

} // namespace

bool Graph::namesRegistered() const {
  // Every node carries the name it is registered under, and the table
  // holds as many entries as there are nodes: a node registered twice would
  // leave another unregistered.
  if (byName_.size() != nodes_.size()) return false;
  for (const auto &n : nodes_)
    if (!NameTable::registeredUnderOwnName(*n)) return false;
  return true;
}

std::vector<Node *> Graph::topoOrder() const {
  // Per-node state lives in arrays indexed by creation id (ids are unique
  // and below nextId_), not in hash maps keyed by pointer: this runs before
  // and after every pass. The nodes themselves are read once, in creation
  // order, to collect the edges as id pairs; everything after works on
  // those arrays alone, so a large graph is not walked node by node again
  // (each node a cache miss once the graph outgrows the caches).
  const size_t ids = idBound();
  // An operand that is not a node of this graph (a broken graph on its way
  // to the verifier) never becomes ready: its user is reported.
  std::vector<int> pending(ids, 0);
  struct Edge {
    int from, to;
  };
  std::vector<Edge> edges;
  edges.reserve(nodes_.size() * 2);
  for (const auto &n : nodes_)
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (repeated(n->inputs, i)) continue;
      ++pending[size_t(n->id)];
      if (contains(n->inputs[i])) edges.push_back({n->inputs[i]->id, n->id});
    }
  // The users of each node in one array (CSR): usersOf[first[id] ..
  // first[id + 1]), in creation order.
  std::vector<size_t> first(ids + 1, 0);
  for (const Edge &e : edges) ++first[size_t(e.from) + 1];
  for (size_t i = 0; i < ids; ++i) first[i + 1] += first[i];
  std::vector<int> usersOf(edges.size());
  {
    std::vector<size_t> fill(first.begin(), first.end() - 1);
    for (const Edge &e : edges) usersOf[fill[size_t(e.from)]++] = e.to;
  }
  // Kahn's algorithm, always taking the ready node of least id. A scan
  // over the ids in order finds the least ready node at or after the scan
  // position; only a node that becomes ready behind the scan (a user
  // created before its operand, as when insert-copies rewires users to a
  // new copy) waits in a heap. When creation order is already topological,
  // as it mostly is, the heap stays empty and the whole order is one pass.
  std::priority_queue<int, std::vector<int>, std::greater<int>> behind;
  size_t scan = 0;
  std::vector<Node *> order;
  order.reserve(nodes_.size());
  for (;;) {
    while (scan < ids && (!byId_[scan] || pending[scan] != 0)) ++scan;
    // Everything in the heap lies behind the scan, so it comes first.
    size_t id;
    if (!behind.empty()) {
      id = size_t(behind.top());
      behind.pop();
    } else if (scan < ids) {
      id = scan++;
    } else {
      break;
    }
    order.push_back(byId_[id]);
    for (size_t k = first[id]; k < first[id + 1]; ++k) {
      int u = usersOf[k];
      if (--pending[size_t(u)] == 0 && size_t(u) < scan) behind.push(u);
    }
  }
  if (order.size() != nodes_.size()) {
    // Report the first node (by creation) that never became ready.
    for (const auto &n : nodes_)
      if (pending[size_t(n->id)] > 0)
        throw RuleError("cycle through node " + n->describe());
  }
  return order;
}

std::vector<Node *> Graph::users(const Node *n) const {
  std::vector<Node *> out;
  for (const auto &u : nodes_)
    if (std::find(u->inputs.begin(), u->inputs.end(), n) != u->inputs.end())
      out.push_back(u.get());
  return out;
}

std::unordered_map<const Node *, std::vector<Node *>> Graph::userMap() const {
  std::unordered_map<const Node *, std::vector<Node *>> out;
  for (const auto &u : nodes_)
    for (size_t i = 0; i < u->inputs.size(); ++i)
      if (!repeated(u->inputs, i)) out[u->inputs[i]].push_back(u.get());
  return out;
}

void Graph::replaceAllUses(Node *from, Node *to) {
  for (const auto &u : nodes_)
    if (u.get() != to)
      for (Node *&in : u->inputs)
        if (in == from) in = to;
  for (std::string &o : outputs)
    if (o == from->name) o = to->name;
  if (loss == from->name) loss = to->name;
}

void Graph::rename(Node *n, const std::string &newName) {
  MPC_ASSERT(!byName_.find(newName),
             "renaming '" + n->name + "' to the taken name '" + newName + "'");
  // The table's key is the node's name: out, rename, back in.
  bool registered = NameTable::registeredUnderOwnName(*n) && byName_.erase(n);
  MPC_ASSERT(registered, "renaming '" + n->name + "', which is not registered under its name");
  std::string old = std::move(n->name);
  n->name = newName;
  byName_.insert(n);
  nameFreed(old);
  for (std::string &o : outputs)
    if (o == old) o = newName;
  if (loss == old) loss = newName;
  gradients.renameValue(old, newName);
}

void Graph::erase(Node *n) {
  MPC_ASSERT(users(n).empty(), "erasing node '" + n->name + "' that still has users");
  MPC_ASSERT(contains(n), "erasing a node of another graph");
  byName_.erase(n);
  nameFreed(n->name);
  byId_[size_t(n->id)] = nullptr;
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [n](const auto &p) { return p.get() == n; });
  nodes_.erase(it);
}

void Graph::eraseAll(const std::unordered_set<const Node *> &dead) {
  if (dead.empty()) return;
  // Flags by id: one hash lookup per dead node, not one per node and
  // operand of the graph.
  std::vector<char> isDead(byId_.size(), 0);
  for (const Node *d : dead) {
    MPC_ASSERT(contains(d), "erasing nodes of another graph");
    isDead[size_t(d->id)] = 1;
  }
  for (const auto &n : nodes_) {
    if (isDead[size_t(n->id)]) continue;
    for (const Node *in : n->inputs)
      MPC_ASSERT(!contains(in) || !isDead[size_t(in->id)],
                 "erasing node '" + in->name + "' that '" + n->name + "' still uses");
  }
  for (auto &n : nodes_)
    if (isDead[size_t(n->id)]) {
      byName_.erase(n.get());
      nameFreed(n->name);
      byId_[size_t(n->id)] = nullptr;
      n.reset();
    }
  nodes_.erase(std::remove(nodes_.begin(), nodes_.end(), nullptr), nodes_.end());
}

std::string Graph::uniqueName(const std::string &base) const {
  if (!byName_.find(base)) return base;
  // The lowest free suffix, searched from the floor: from 1 each time, the
  // k-th node of one base probed k names, quadratic in the micro-batches
  // that each add one (`w.grad.partial`, `x.mb.N`).
  int &floor = suffixFloor_[base];
  for (int i = std::max(floor, 1);; ++i) {
    std::string cand = base + "." + std::to_string(i);
    if (!byName_.find(cand)) {
      floor = i;
      return cand;
    }
  }
}

void Graph::nameFreed(const std::string &name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size() || name.size() - dot > 10 ||
      name[dot + 1] == '0' || name.find_first_not_of("0123456789", dot + 1) != std::string::npos)
    return;
  auto it = suffixFloor_.find(name.substr(0, dot));
  int k = std::stoi(name.substr(dot + 1));
  if (it != suffixFloor_.end() && it->second > k) it->second = k;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->sourceFile = sourceFile;
  g->outputs = outputs;
  g->loss = loss;
  g->optimizer = optimizer;
  g->pipeline = pipeline;
  g->dataParallel = dataParallel;
  g->groups = groups;
  g->modelChecksum = modelChecksum;
  g->gradients = gradients;
  g->stages = stages;
  std::unordered_map<const Node *, Node *> map;
  for (const auto &n : nodes_) {
    auto c = std::make_unique<Node>(*n);
    map[n.get()] = c.get();
    g->byName_.insert(c.get());
    g->nodes_.push_back(std::move(c));
  }
  g->byId_.assign(byId_.size(), nullptr);
  for (const auto &c : g->nodes_) g->byId_[size_t(c->id)] = c.get();
  for (const auto &c : g->nodes_)
    for (Node *&in : c->inputs) in = map.at(in);
  g->nextId_ = nextId_;
  return g;
}

} // namespace mpc::ir
