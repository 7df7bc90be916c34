//===- ir/OpRegistry.cpp - joins the schemas with the IR's rules ---------===//
//
// Registration is explicit (no static constructors): on first use, each
// schema of ops/ is joined by OpKind with the gradient rule and reference
// kernel its family file in ir/ops/ adds, and the result is checked so that
// every op has a reference kernel.
//
//===----------------------------------------------------------------------===//
#include "ir/OpInfo.h"

#include "support/Error.h"

#include <string_view>

namespace mpc::ir {

namespace {
std::vector<OpInfo> buildTable() {
  RuleTable rules{};
  addLinalgRules(rules);
  addElementwiseRules(rules);
  addReduceRules(rules);
  addShapeRules(rules);
  addSoftmaxRules(rules);
  addAttentionRules(rules);
  addLossRules(rules);
  addNormRules(rules);
  addEmbeddingRules(rules);
  addRandomRules(rules);
  addDeviceRules(rules);
  addOptimizerRules(rules);
  addConvRules(rules);
  addPoolRules(rules);
  addCollectiveRules(rules);

  std::vector<OpInfo> table;
  table.reserve(kNumOps);
  for (const OpSchema &s : ops::allSchemas()) {
    const OpRules &r = rules[size_t(s.kind)];
    MPC_ASSERT(r.reference, "op without a reference kernel: " + std::string(s.name));
    table.push_back(OpInfo{s, r.grad, r.reference});
  }
  return table;
}

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> t = buildTable();
  return t;
}
} // namespace

const OpInfo &opInfo(OpKind kind) { return table()[size_t(kind)]; }

const OpInfo *lookupOp(std::string_view name) {
  const OpSchema *s = ops::lookupSchema(name);
  return s ? &opInfo(s->kind) : nullptr;
}

std::span<const OpInfo> allOps() { return table(); }

} // namespace mpc::ir
