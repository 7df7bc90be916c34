//===- frontend/mxnet/AttrParse.cpp - MXNet attribute strings ------------===//
//
// Whole-string parses only: "3x" or "(1, 2" are errors, never a prefix read.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/AttrParse.h"

#include "support/Error.h"
#include "support/StrictJson.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace mpc::frontend::mxnet {

namespace {

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

} // namespace

bool isNoneAttr(const std::string &s) { return trim(s) == "None"; }

int64_t parseIntAttr(const std::string &text) {
  std::string s = trim(text);
  if (!s.empty() && (s.back() == 'L' || s.back() == 'l')) s.pop_back(); // Python 2 long
  if (s.empty()) throw RuleError("expected an integer, got " + quoteName(text, "\""));
  size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (i == s.size()) throw RuleError("expected an integer, got " + quoteName(text, "\""));
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k])))
      throw RuleError("expected an integer, got " + quoteName(text, "\""));
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) throw RuleError("integer " + quoteName(text, "\"") + " out of range");
  return v;
}

double parseFloatAttr(const std::string &text) {
  std::string s = trim(text);
  if (s.empty()) throw RuleError("expected a number, got " + quoteName(text, "\""));
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
    throw RuleError("expected a finite number, got " + quoteName(text, "\""));
  return v;
}

bool parseBoolAttr(const std::string &text) {
  std::string s = trim(text);
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  throw RuleError("expected True or False, got " + quoteName(text, "\""));
}

std::vector<int64_t> parseTupleAttr(const std::string &text) {
  std::string s = trim(text);
  // A bare integer is a one-element tuple (dmlc reads "3" for (3,)).
  if (!s.empty() && s[0] != '(' && s[0] != '[') {
    try {
      return {parseIntAttr(s)};
    } catch (const RuleError &) {
      throw RuleError("expected a tuple like (2, 2), got " + quoteName(text, "\""));
    }
  }
  char close = s.empty() ? 0 : (s[0] == '(' ? ')' : ']');
  if (s.size() < 2 || s.back() != close)
    throw RuleError("expected a tuple like (2, 2), got " + quoteName(text, "\""));
  std::string body = trim(s.substr(1, s.size() - 2));
  std::vector<int64_t> out;
  if (body.empty()) return out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string item =
        trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) {
      // Only the trailing comma of "(5,)" may leave an empty item.
      if (comma == std::string::npos && !out.empty()) break;
      throw RuleError("expected a tuple like (2, 2), got " + quoteName(text, "\""));
    }
    try {
      out.push_back(parseIntAttr(item));
    } catch (const RuleError &) {
      throw RuleError("expected a tuple of integers, got " + quoteName(text, "\""));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool AttrReader::has(const std::string &key) const { return node_.attrs.count(key) != 0; }

const std::string *AttrReader::find(const std::string &key) {
  read_.insert(key);
  auto it = node_.attrs.find(key);
  return it == node_.attrs.end() ? nullptr : &it->second;
}

void AttrReader::fail(const std::string &key, const std::string &msg) const {
  std::string where = node_.pointer + (node_.op == "null" ? "" : "/attrs/" + ptrToken(key));
  throw UserError(file_.file, where,
                  "attribute " + quoteName(key) + " of " + node_.describe() + ": " + msg);
}

void AttrReader::failNode(const std::string &msg) const {
  throw UserError(file_.file, node_.pointer, node_.describe() + ": " + msg);
}

#define MPC_ATTR_READ(expr)                                                                        \
  try {                                                                                            \
    return expr;                                                                                   \
  } catch (const RuleError &e) {                                                                   \
    fail(key, e.what());                                                                           \
  }

int64_t AttrReader::getInt(const std::string &key, std::optional<int64_t> dflt) {
  const std::string *s = find(key);
  if (!s) {
    if (!dflt) failNode("missing required attribute '" + key + "'");
    return *dflt;
  }
  MPC_ATTR_READ(parseIntAttr(*s))
}

double AttrReader::getFloat(const std::string &key, std::optional<double> dflt) {
  const std::string *s = find(key);
  if (!s) {
    if (!dflt) failNode("missing required attribute '" + key + "'");
    return *dflt;
  }
  MPC_ATTR_READ(parseFloatAttr(*s))
}

bool AttrReader::getBool(const std::string &key, bool dflt) {
  const std::string *s = find(key);
  if (!s) return dflt;
  MPC_ATTR_READ(parseBoolAttr(*s))
}

std::string AttrReader::getString(const std::string &key, std::optional<std::string> dflt) {
  const std::string *s = find(key);
  if (!s) {
    if (!dflt) failNode("missing required attribute '" + key + "'");
    return *dflt;
  }
  return *s;
}

std::vector<int64_t> AttrReader::getTuple(const std::string &key,
                                          std::optional<std::vector<int64_t>> dflt) {
  const std::string *s = find(key);
  if (!s) {
    if (!dflt) failNode("missing required attribute '" + key + "'");
    return *dflt;
  }
  MPC_ATTR_READ(parseTupleAttr(*s))
}

std::optional<int64_t> AttrReader::getOptInt(const std::string &key) {
  const std::string *s = find(key);
  if (!s || isNoneAttr(*s)) return std::nullopt;
  MPC_ATTR_READ(parseIntAttr(*s))
}

std::optional<bool> AttrReader::getOptBool(const std::string &key) {
  const std::string *s = find(key);
  if (!s || isNoneAttr(*s)) return std::nullopt;
  MPC_ATTR_READ(parseBoolAttr(*s))
}

std::optional<double> AttrReader::getOptFloat(const std::string &key) {
  const std::string *s = find(key);
  if (!s || isNoneAttr(*s)) return std::nullopt;
  MPC_ATTR_READ(parseFloatAttr(*s))
}

#undef MPC_ATTR_READ

void AttrReader::ignore(std::initializer_list<const char *> keys) {
  for (const char *k : keys) read_.insert(k);
}

void AttrReader::finish() const {
  for (const auto &[key, value] : node_.attrs) {
    if (read_.count(key)) continue;
    // Hidden annotations ("__profiler_scope__", "__storage_type__") do not
    // change the computation.
    if (key.size() > 4 && key.rfind("__", 0) == 0) continue;
    fail(key, "unsupported attribute (value " + quoteName(value, "\"") +
                  "); mpc would not compute what MXNet computes");
  }
}

std::string tupleText(const std::vector<int64_t> &shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

} // namespace mpc::frontend::mxnet
