//===- ops/Attribute.cpp - typed op attributes --------------------------===//
#include "ops/Attribute.h"

#include "support/Error.h"

#include <cstdio>

namespace mpc::ops {

const char *attrTypeName(AttrType t) {
  switch (t) {
  case AttrType::Bool: return "bool";
  case AttrType::Int: return "int";
  case AttrType::Float: return "float";
  case AttrType::String: return "string";
  case AttrType::Ints: return "int list";
  }
  return "?";
}

AttrType attrTypeOf(const AttrValue &v) { return AttrType(v.index()); }

std::string attrValueStr(const AttrValue &v) {
  switch (attrTypeOf(v)) {
  case AttrType::Bool: return std::get<bool>(v) ? "true" : "false";
  case AttrType::Int: return std::to_string(std::get<int64_t>(v));
  case AttrType::Float: {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", std::get<double>(v));
    return buf;
  }
  case AttrType::String: return "\"" + std::get<std::string>(v) + "\"";
  case AttrType::Ints: {
    std::string s = "[";
    const auto &xs = std::get<std::vector<int64_t>>(v);
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + std::to_string(xs[i]);
    return s + "]";
  }
  }
  return "?";
}

template <typename T>
static const T &getAs(const AttrMap &attrs, const std::string &name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) throw RuleError("missing attribute '" + name + "'");
  if (!std::holds_alternative<T>(it->second))
    throw RuleError("attribute '" + name + "' has type " +
                    attrTypeName(attrTypeOf(it->second)));
  return std::get<T>(it->second);
}

bool getBool(const AttrMap &a, const std::string &n) { return getAs<bool>(a, n); }
int64_t getInt(const AttrMap &a, const std::string &n) { return getAs<int64_t>(a, n); }
double getFloat(const AttrMap &a, const std::string &n) { return getAs<double>(a, n); }
const std::string &getString(const AttrMap &a, const std::string &n) {
  return getAs<std::string>(a, n);
}
const std::vector<int64_t> &getInts(const AttrMap &a, const std::string &n) {
  return getAs<std::vector<int64_t>>(a, n);
}

} // namespace mpc::ops
