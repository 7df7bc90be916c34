//===- ir/Interpreter.cpp - the reference evaluator ---------------------===//
//
// Evaluates a graph with the op records' float64 reference kernels:
//   1. params and state start from initialValues() (float32, widened), so the
//      interpreter starts from exactly the values codegen stores in a plan
//      (a data-parallel mirror or a shard from its tensor's, cut to its part);
//   2. step() checks the fed inputs, then evaluates the nodes in
//      graph.topoOrder(), except that optimizer updates (and anything that
//      uses their results) run after every other node: within one step all
//      reads of a parameter see its value from before the step, whatever the
//      order of independent nodes;
//   3. optimizer ops mutate the persistent() tensors in place;
//   4. dropout draws its mask from the seed and the step's number (1 for the
//      first step()), as a plan's runtime does.
// Values of params and state in the returned map are those after the step.
//
//===----------------------------------------------------------------------===//
#include "ir/Interpreter.h"


#include "ir/Init.h"
#include "ops/Shard.h"
#include "support/Error.h"

#include <set>

namespace mpc::ir {

namespace {

/// The initial values of `n`: its tensor's, whose name and shape a
/// data-parallel mirror or a shard (ZeRO-1's, or a tensor-parallel part)
/// takes from what it holds, cut to its part as a plan's runtime cuts it
/// (plan::extractPart).
RefTensor initialTensor(const Node &n, uint64_t seed) {
  InitSpec init = n.init.value_or(InitSpec{});
  RefTensor t(n.type.shape);
  if (!n.shardOf) {
    std::vector<float> values =
        initialValues(init, n.type.shape, n.mirrorOf.empty() ? n.name : n.mirrorOf, seed);
    for (size_t i = 0; i < values.size(); ++i) t.data[i] = double(values[i]);
    return t;
  }
  const Node::ShardOf &s = *n.shardOf;
  std::vector<float> whole = initialValues(init, s.shape, s.of, seed);
  ops::forEachPartRun(s.shape.data(), s.shape.size(), int(s.axis), s.count, s.index,
                      [&](int64_t w, int64_t p, int64_t count) {
                        for (int64_t k = 0; k < count; ++k)
                          t.data[size_t(p + k)] = double(whole[size_t(w + k)]);
                      });
  return t;
}

} // namespace

Interpreter::Interpreter(const Graph &graph, uint64_t seed) : graph_(graph), seed_(seed) {
  for (const auto &n : graph.nodes())
    if (n->kind == NodeKind::Param || n->kind == NodeKind::State)
      persistent_[n->name] = initialTensor(*n, seed);
}

std::map<std::string, RefTensor>
Interpreter::step(const std::map<std::string, RefTensor> &inputs) {
  std::map<std::string, RefTensor> values;
  std::map<const Node *, RefTensor *> slot;
  ++step_;

  std::vector<Node *> order = graph_.topoOrder();
  std::vector<Node *> now, deferred;
  std::set<const Node *> isDeferred;
  for (Node *n : order) {
    bool defer = n->isOp() && n->info().has(kOptimizer);
    for (const Node *in : n->inputs) defer = defer || isDeferred.count(in);
    if (defer) {
      deferred.push_back(n);
      isDeferred.insert(n);
    } else {
      now.push_back(n);
    }
  }
  now.insert(now.end(), deferred.begin(), deferred.end());

  for (Node *n : now) {
    switch (n->kind) {
    case NodeKind::Input: {
      auto it = inputs.find(n->name);
      if (it == inputs.end())
        throw UserError(graph_.sourceFile, "input '" + n->name + "'",
                        "no value given for input '" + n->name + "' of type " +
                            n->type.str());
      if (it->second.shape != n->type.shape ||
          it->second.numElements() != n->type.numElements())
        throw UserError(graph_.sourceFile, "input '" + n->name + "'",
                        "value for input '" + n->name + "' has shape " +
                            shapeText(it->second.shape) + ", expected " + n->type.str());
      slot[n] = &(values[n->name] = it->second);
      roundToType(values[n->name], n->type.dtype);
      break;
    }
    case NodeKind::Param:
    case NodeKind::State: {
      auto it = persistent_.find(n->name);
      MPC_ASSERT(it != persistent_.end(), "no persistent value for " + n->describe());
      slot[n] = &it->second;
      break;
    }
    case NodeKind::Op: {
      std::vector<RefTensor *> operands;
      operands.reserve(n->inputs.size());
      for (const Node *in : n->inputs) operands.push_back(slot.at(in));
      RefTensor &out = values[n->name] = RefTensor(n->type.shape);
      if (n->info().drawsMask(n->attrs)) {
        // The run's context, which a plan's runtime supplies (ops/DropoutMask.h).
        AttrMap attrs = n->attrs;
        attrs["key"] = dropoutKeyName(*n);
        attrs["seed"] = int64_t(seed_);
        attrs["step"] = step_;
        n->info().reference(operands, attrs, out);
      } else {
        n->info().reference(operands, n->attrs, out);
      }
      // A bf16 or f16 result holds what its two bytes can (ops/Float16.h),
      // as every backend stores it.
      roundToType(out, n->type.dtype);
      slot[n] = &out;
      break;
    }
    }
  }
  for (const auto &[name, t] : persistent_) values[name] = t;
  return values;
}

} // namespace mpc::ir
