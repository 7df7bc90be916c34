//===- passes/InsertCopies.cpp - explicit, deduplicated copies ----------===//
//
// Invariant established (kCopiesExplicit): an op consumes a value produced on
// another device only when it is a `copy` or a collective (whose operands
// are its group's contributions, one per device: ops/Collective.h), and there
// is at most one copy per (value, destination device). Loss and outputs are
// fetched from wherever they sit and need no copy.
//
// Algorithm:
//   1. Index the existing copies by (source value, destination device) so
//      they are reused; running the pass twice changes nothing.
//   2. Walk the op nodes in topological order and their operands in order;
//      for an operand on another device, take the copy of that value on the
//      consumer's device, creating it on first need as
//      `<value>.to.<device without ':'>` (z0.to.cpu1), and rewire the
//      operand. All consumers on one device share the copy.
//   3. Copies keep the `backward` flag and origin of the value they move, so
//      a gradient's copy is recognised as part of the backward graph.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/Device.h"
#include "support/Error.h"

#include <map>
#include <utility>

namespace mpc::passes {

using ir::Graph;
using ir::Node;

namespace {

class InsertCopiesPass : public Pass {
public:

  bool run(Graph &g, PassContext &ctx) override {
    std::vector<Node *> order = g.topoOrder();
    for (const Node *n : order)
      if (!ir::isPlacedDevice(n->device))
        throw UserError(g.sourceFile, n->where(),
                        n->describe() + " has no concrete device" +
                            (n->device.empty() ? std::string() : " ('" + n->device + "')") +
                            "; run 'place' before 'insert-copies'");

    // Step 1: existing copies.
    std::map<std::pair<const Node *, std::string>, Node *> copies;
    for (Node *n : order)
      if (n->isOp(ir::OpKind::Copy)) copies.emplace(std::pair{n->inputs[0], n->device}, n);

    // Step 2: rewire cross-device operands.
    bool changed = false;
    ir::Builder b(g);
    for (Node *user : order) {
      // A collective's operands are its group's contributions, each on its
      // own device: the collective moves them, not copies.
      if (!user->isOp() || user->isOp(ir::OpKind::Copy) || user->info().has(ir::kCollective))
        continue;
      for (Node *&operand : user->inputs) {
        if (operand->device == user->device) continue;
        auto key = std::pair<const Node *, std::string>{operand, user->device};
        auto it = copies.find(key);
        if (it == copies.end()) {
          // Step 3: the copy belongs to the same side of the graph as its value.
          b.backward = operand->backward;
          b.origin = operand->origin;
          Node *c = b.copyTo(operand, user->device);
          it = copies.emplace(key, c).first;
          ctx.count("insert-copies", "copies-inserted");
        } else {
          ctx.count("insert-copies", "copies-reused");
        }
        operand = it->second;
        changed = true;
      }
    }
    if (!g.has(ir::kCopiesExplicit)) {
      g.stages |= ir::kCopiesExplicit;
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createInsertCopiesPass() { return std::make_unique<InsertCopiesPass>(); }

} // namespace mpc::passes
