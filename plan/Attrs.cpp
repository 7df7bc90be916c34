//===- plan/Attrs.cpp - typed reads of instruction attributes -----------===//
#include "plan/Attrs.h"

#include "support/Error.h"

namespace mpc::plan {

namespace {
const AttrValue *find(const AttrMap &attrs, std::string_view name) {
  auto it = attrs.find(std::string(name));
  return it == attrs.end() ? nullptr : &it->second;
}
const AttrValue &get(const AttrMap &attrs, std::string_view name) {
  if (const AttrValue *v = find(attrs, name)) return *v;
  throw RuleError("instruction without its attribute '" + std::string(name) + "'");
}
[[noreturn]] void wrongKind(std::string_view name, const char *want) {
  throw RuleError("attribute '" + std::string(name) + "' must be " + want);
}
} // namespace

bool hasAttr(const AttrMap &attrs, std::string_view name) { return find(attrs, name); }

bool attrBool(const AttrMap &attrs, std::string_view name) {
  const AttrValue *v = &get(attrs, name);
  if (const bool *b = std::get_if<bool>(v)) return *b;
  wrongKind(name, "a bool");
}

int64_t attrInt(const AttrMap &attrs, std::string_view name) {
  const AttrValue *v = &get(attrs, name);
  if (const int64_t *i = std::get_if<int64_t>(v)) return *i;
  wrongKind(name, "an integer");
}

double attrFloat(const AttrMap &attrs, std::string_view name) {
  const AttrValue *v = &get(attrs, name);
  if (const double *d = std::get_if<double>(v)) return *d;
  if (const int64_t *i = std::get_if<int64_t>(v)) return double(*i);
  wrongKind(name, "a number");
}

std::string attrString(const AttrMap &attrs, std::string_view name) {
  const AttrValue *v = &get(attrs, name);
  if (const std::string *s = std::get_if<std::string>(v)) return *s;
  wrongKind(name, "a string");
}

std::vector<int64_t> attrInts(const AttrMap &attrs, std::string_view name) {
  const AttrValue *v = &get(attrs, name);
  if (const auto *l = std::get_if<std::vector<int64_t>>(v)) return *l;
  wrongKind(name, "a list of integers");
}

} // namespace mpc::plan
