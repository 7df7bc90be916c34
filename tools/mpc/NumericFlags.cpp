//===- tools/mpc/NumericFlags.cpp - validators for integer flags -------===//
#include "tools/mpc/NumericFlags.h"

#include <cstdint>

namespace mpc::tool {

namespace {
/// Plain decimal digits (an optional leading '+'), at most `max`.
bool decimalAtMost(const std::string &text, uint64_t max, uint64_t &value) {
  size_t i = !text.empty() && text[0] == '+' ? 1 : 0;
  if (i == text.size()) return false;
  value = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = uint64_t(c - '0');
    if (value > (max - d) / 10) return false;
    value = value * 10 + d;
  }
  return true;
}
} // namespace

const CLI::Validator &positiveInteger() {
  static const CLI::Validator v(
      [](std::string &text) -> std::string {
        uint64_t n = 0;
        if (decimalAtMost(text, uint64_t(INT64_MAX), n) && n >= 1) return "";
        // All digits, not zero: only too large.
        bool digits = text.find_first_not_of("0123456789") == std::string::npos;
        if (digits && text.find_first_not_of('0') != std::string::npos)
          return "must be a positive integer at most " + std::to_string(INT64_MAX) + ", got '" +
                 text + "'";
        return "must be a positive integer, got '" + text + "'";
      },
      "INT>0");
  return v;
}

const CLI::Validator &unsignedInteger() {
  static const CLI::Validator v(
      [](std::string &text) -> std::string {
        uint64_t n = 0;
        if (decimalAtMost(text, UINT64_MAX, n)) return "";
        return "must be an integer in [0, " + std::to_string(UINT64_MAX) + "], got '" + text + "'";
      },
      "UINT");
  return v;
}

} // namespace mpc::tool
