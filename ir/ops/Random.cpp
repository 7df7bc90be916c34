//===- ir/ops/Random.cpp - dropout's gradient rule, kernel and mask key --===//
//
// dropout's gradient rule (dropout of dy with the forward's mask key), its
// float64 reference kernel, which draws the mask element by element from
// support/Philox.h, and dropoutKeyName, the key a dropout node's mask is
// drawn with. The schema is in ops/Random.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "ir/ops/OpHelpers.h"

#include "support/Philox.h"

namespace mpc::ir {

using namespace ophelpers;

namespace {

std::vector<Node *> dropoutGrad(Builder &b, const Node &n, Node *dy) {
  AttrMap attrs = n.attrs;
  attrs["key"] = dropoutKeyName(n);
  return {b.create(OpKind::Dropout, {dy}, attrs)};
}

void dropoutRef(RefOps o, const AttrMap &a, RefTensor &out) {
  const double p = getFloat(a, "p");
  const uint32_t threshold = philox::dropThreshold(p);
  const philox::Key key = philox::dropoutKey(
      uint64_t(a.count("seed") ? getInt(a, "seed") : 0), philox::nameHash(getString(a, "key")));
  const uint64_t step = uint64_t(a.count("step") ? getInt(a, "step") : 1);
  const uint64_t offset = uint64_t(getInt(a, "offset"));
  const double scale = 1.0 / (1.0 - p);
  // Element by element, with no shared block (the kernels share one Philox
  // block among four elements; the mask is the same).
  const uint64_t parts = uint64_t(getInt(a, "parts")), part = uint64_t(getInt(a, "part")),
                 inner = uint64_t(getInt(a, "inner"));
  for (size_t i = 0; i < out.data.size(); ++i) {
    const uint64_t whole = parts == 1 ? i : (i / inner * parts + part) * inner + i % inner;
    out.data[i] = philox::dropoutKeep(key, step, offset + whole, threshold)
                      ? o[0]->data[i] * scale
                      : 0.0;
  }
}

} // namespace

std::string dropoutKeyName(const Node &n) {
  const std::string &key = getString(n.attrs, "key");
  return key.empty() ? n.name : key;
}

void addRandomRules(RuleTable &t) { t[size_t(OpKind::Dropout)] = {dropoutGrad, dropoutRef}; }

} // namespace mpc::ir
