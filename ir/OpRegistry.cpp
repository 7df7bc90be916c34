//===- ir/OpRegistry.cpp - gathers the family tables into one registry ---===//
//
// Registration is explicit (no static constructors): the family functions
// are called once, on first use, and the result is checked so that every
// OpKind in OpList.def has exactly one record whose name matches the list.
//
//===----------------------------------------------------------------------===//
#include "ir/OpInfo.h"

#include "support/Error.h"

#include <array>
#include <string_view>

namespace mpc::ir {

namespace {
constexpr std::array<std::string_view, kNumOps> kOpNames = {
#define MPC_OP(Kind, Name, Family) Name,
#include "ops/OpList.def"
};

std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> records;
  addLinalgOps(records);
  addElementwiseOps(records);
  addReduceOps(records);
  addShapeOps(records);
  addSoftmaxOps(records);
  addLossOps(records);
  addNormOps(records);
  addEmbeddingOps(records);
  addRandomOps(records);
  addDeviceOps(records);
  addOptimizerOps(records);
  addConvOps(records);
  addPoolOps(records);

  std::vector<OpInfo> table;
  table.reserve(kNumOps);
  std::vector<int> seen(kNumOps, 0);
  for (const OpInfo &r : records) {
    size_t k = size_t(r.kind);
    MPC_ASSERT(k < kNumOps, "op record with an invalid kind");
    MPC_ASSERT(kOpNames[k] == r.name, "op record name differs from OpList.def: " +
                                          std::string(r.name));
    MPC_ASSERT(r.infer && r.reference, "op record without shape rule or reference: " +
                                           std::string(r.name));
    MPC_ASSERT(!r.variadic || !r.operands.empty(),
               "variadic op record without an operand to repeat: " + std::string(r.name));
    ++seen[k];
  }
  for (size_t k = 0; k < kNumOps; ++k) {
    MPC_ASSERT(seen[k] == 1, "op '" + std::string(kOpNames[k]) + "' has " +
                                 std::to_string(seen[k]) + " records, expected 1");
    for (const OpInfo &r : records)
      if (size_t(r.kind) == k) table.push_back(r);
  }
  return table;
}

const std::vector<OpInfo> &table() {
  static const std::vector<OpInfo> t = buildTable();
  return t;
}
} // namespace

const AttrSpec *OpInfo::findAttr(const std::string &n) const {
  for (const AttrSpec &a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

std::string OpInfo::arityText() const {
  if (minArity == maxArity()) return std::to_string(minArity);
  return std::to_string(minArity) + " to " + std::to_string(maxArity());
}

std::string OpInfo::operandName(size_t i) const {
  if (variadic && !operands.empty() && i + 1 >= operands.size())
    return operands.back() + std::to_string(i + 1 - operands.size());
  return i < operands.size() ? operands[i] : std::to_string(i);
}

const OpInfo &opInfo(OpKind kind) { return table()[size_t(kind)]; }

const OpInfo *lookupOp(std::string_view name) {
  for (const OpInfo &r : table())
    if (name == r.name) return &r;
  return nullptr;
}

std::span<const OpInfo> allOps() { return table(); }

} // namespace mpc::ir
