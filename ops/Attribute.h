//===- ops/Attribute.h - typed op attributes and their schema -----------===//
//
// Attributes are a small closed set of value types. Each op declares a schema
// (name, type, default, doc) in its record; the JSON reader checks user
// attributes against it and fills in defaults, so every node in a graph
// carries every attribute its op declares and later code never guesses.
// The IR's nodes and the plan's kernel instructions hold the same values
// (ir::AttrMap and plan::AttrMap are this AttrMap). C++17, as CUDA
// translation units include it through plan/Plan.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mpc::ops {

enum class AttrType : uint8_t { Bool, Int, Float, String, Ints };

const char *attrTypeName(AttrType t);

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;
/// Sorted by name, which keeps printing deterministic.
using AttrMap = std::map<std::string, AttrValue>;

AttrType attrTypeOf(const AttrValue &v);
/// Text form used by the printer: true, 3, 0.001, "s", [0,1].
std::string attrValueStr(const AttrValue &v);

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> defaultValue; ///< nullopt: required
  std::string doc;
};

// Typed getters; throw RuleError when the attribute is missing or of
// another type (that is a bug in a caller once the reader has filled defaults).
bool getBool(const AttrMap &attrs, const std::string &name);
int64_t getInt(const AttrMap &attrs, const std::string &name);
double getFloat(const AttrMap &attrs, const std::string &name);
const std::string &getString(const AttrMap &attrs, const std::string &name);
const std::vector<int64_t> &getInts(const AttrMap &attrs, const std::string &name);

} // namespace mpc::ops
