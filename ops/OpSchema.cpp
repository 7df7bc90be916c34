//===- ops/OpSchema.cpp - gathers the family tables into one table -------===//
//
// Registration is explicit (no static constructors): the family functions
// are called once, on first use, and the result is checked so that every
// OpKind in OpList.def has exactly one schema whose name matches the list.
//
//===----------------------------------------------------------------------===//
#include "ops/OpSchema.h"

#include "support/Error.h"

#include <array>
#include <cassert>
#include <optional>

namespace mpc::ops {

namespace {
constexpr std::array<std::string_view, kNumOps> kOpNames = {
#define MPC_OP(Kind, Name, Family) Name,
#include "ops/OpList.def"
};

std::vector<OpSchema> buildTable() {
  std::vector<OpSchema> records;
  addLinalgSchemas(records);
  addElementwiseSchemas(records);
  addReduceSchemas(records);
  addShapeSchemas(records);
  addSoftmaxSchemas(records);
  addAttentionSchemas(records);
  addLossSchemas(records);
  addNormSchemas(records);
  addEmbeddingSchemas(records);
  addRandomSchemas(records);
  addDeviceSchemas(records);
  addOptimizerSchemas(records);
  addConvSchemas(records);
  addPoolSchemas(records);
  addCollectiveSchemas(records);

  std::vector<OpSchema> table;
  table.reserve(kNumOps);
  std::vector<int> seen(kNumOps, 0);
  for (const OpSchema &r : records) {
    size_t k = size_t(r.kind);
    MPC_ASSERT(k < kNumOps, "op schema with an invalid kind");
    MPC_ASSERT(kOpNames[k] == r.name,
               "op schema name differs from OpList.def: " + std::string(r.name));
    MPC_ASSERT(r.infer, "op schema without a shape rule: " + std::string(r.name));
    MPC_ASSERT(!r.variadic || !r.operands.empty(),
               "variadic op schema without an operand to repeat: " + std::string(r.name));
    ++seen[k];
  }
  for (size_t k = 0; k < kNumOps; ++k) {
    MPC_ASSERT(seen[k] == 1, "op '" + std::string(kOpNames[k]) + "' has " +
                                 std::to_string(seen[k]) + " schemas, expected 1");
    for (const OpSchema &r : records)
      if (size_t(r.kind) == k) table.push_back(r);
  }
  return table;
}

const std::vector<OpSchema> &table() {
  static const std::vector<OpSchema> t = buildTable();
  return t;
}
} // namespace

const AttrSpec *OpSchema::findAttr(const std::string &n) const {
  for (const AttrSpec &a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

const AttrValue &OpSchema::defaultOf(const std::string &n) const {
  const AttrSpec *a = findAttr(n);
  assert(a && a->defaultValue && "defaultOf: an attribute the schema declares with a default");
  return *a->defaultValue;
}

const char *precisionText(Precision p) {
  switch (p) {
  case Precision::F32Only: return "f32";
  case Precision::Low: return "f32, bf16, f16 (autocast: low)";
  case Precision::Follow: return "f32, bf16, f16 (autocast: follows)";
  case Precision::Any: return "f32, bf16, f16 (converts)";
  }
  return "?";
}

TensorType OpSchema::resultType(std::span<const TensorType> operands, const AttrMap &attrs) const {
  if (precision == Precision::Any) return infer(operands, attrs);
  // The low type the operands share, if any; the check names the first
  // operand that does not fit.
  std::optional<DType> low;
  size_t lowAt = 0;
  auto differ = [&](size_t i) {
    return RuleError("type mismatch: " + std::string(name) + " operands '" + operandName(lowAt) +
                     "' " + operands[lowAt].str() + " and '" + operandName(i) + "' " +
                     operands[i].str() + " differ in precision (cast one)");
  };
  for (size_t i = 0; i < operands.size(); ++i) {
    DType t = operands[i].dtype;
    if (!isLowPrecision(t)) continue;
    if (precision == Precision::F32Only)
      throw RuleError("type mismatch: " + std::string(name) + " computes in f32 only: operand '" + operandName(i) +
                      "' is " + operands[i].str() + " (cast it to f32)");
    if (low && *low != t) throw differ(i);
    if (!low) low = t, lowAt = i;
  }
  if (!low) return infer(operands, attrs);
  std::vector<TensorType> asF32(operands.begin(), operands.end());
  bool accumulatesF32 = false;
  for (size_t i = 0; i < asF32.size(); ++i) {
    if (asF32[i].dtype == DType::F32) {
      if (int(i) == f32Accumulator) {
        accumulatesF32 = true;
        continue;
      }
      throw differ(i);
    }
    if (asF32[i].dtype == *low) asF32[i].dtype = DType::F32;
  }
  TensorType r = infer(asF32, attrs);
  if (r.dtype == DType::F32 && !accumulatesF32) r.dtype = *low;
  return r;
}

std::string OpSchema::arityText() const {
  if (minArity == maxArity()) return std::to_string(minArity);
  return std::to_string(minArity) + " to " + std::to_string(maxArity());
}

std::string OpSchema::operandName(size_t i) const {
  if (variadic && !operands.empty() && i + 1 >= operands.size())
    return operands.back() + std::to_string(i + 1 - operands.size());
  return i < operands.size() ? operands[i] : std::to_string(i);
}

const OpSchema &schema(OpKind kind) { return table()[size_t(kind)]; }

const OpSchema *lookupSchema(std::string_view name) {
  for (const OpSchema &r : table())
    if (name == r.name) return &r;
  return nullptr;
}

std::span<const OpSchema> allSchemas() { return table(); }

} // namespace mpc::ops
