//===- tools/mpc/NumericFlags.cpp - validators for numeric flags -------===//
#include "tools/mpc/NumericFlags.h"

#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mpc::tool {

namespace {

/// Plain decimal digits, at most `max`; false for anything else (a sign,
/// "0x", a fraction) and for a value past `max`.
bool decimalAtMost(const std::string &text, uint64_t max, uint64_t &value) {
  if (text.empty()) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t d = uint64_t(c - '0');
    if (value > (max - d) / 10) return false;
    value = value * 10 + d;
  }
  return true;
}

/// A number another notation would read (C's "+3", "0x4"): the message says
/// which notation the flag takes.
std::string notationHint(const std::string &text) {
  bool other = text.starts_with('+') || text.starts_with("0x") || text.starts_with("0X");
  return other ? " (plain decimal digits only)" : "";
}

/// "-1", "12", "0.5", ".5", "1e-3", "2.5E+4": an optional '-' (so that the
/// message can say "positive"), digits with an optional fraction, an
/// optional exponent. No '+', hexadecimal, inf or nan.
bool decimalNumber(const std::string &text) {
  size_t i = text.starts_with('-') ? 1 : 0, digits = 0;
  auto run = [&] {
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  digits += run();
  if (i < text.size() && text[i] == '.') {
    ++i;
    digits += run();
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (run() == 0) return false;
  }
  return i == text.size();
}

CLI::Validator numberValidator(bool zeroAllowed, const std::string &desc) {
  return CLI::Validator(
      [zeroAllowed](std::string &text) -> std::string {
        std::string refused =
            std::string("must be ") + (zeroAllowed ? "a number >= 0" : "a positive number") +
            ", got '" + text + "'";
        if (!decimalNumber(text))
          return refused + (text.empty() ? "" : " (plain decimal, e.g. 0.01 or 1e-3)");
        double v = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(v)) return refused + " (too large)";
        if (v < 0 || (v == 0 && !zeroAllowed)) return refused;
        return "";
      },
      desc);
}

} // namespace

CLI::Validator integerIn(uint64_t min, uint64_t max, std::string whyMax) {
  std::string desc = min == 1 && max == uint64_t(INT64_MAX) ? "INT>0"
                     : min == 0 && max == UINT64_MAX       ? "UINT"
                         : "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [min, max, whyMax](std::string &text) -> std::string {
        uint64_t n = 0;
        if (decimalAtMost(text, max, n) && n >= min) {
          // CLI11 reads integers with strtoll(..., 0): "010" would be octal.
          text = std::to_string(n);
          return "";
        }
        std::string got = ", got '" + text + "'" + notationHint(text);
        if (min != 1) return "must be an integer in [" + std::to_string(min) + ", " +
                             std::to_string(max) + "]" + got;
        // All digits, not zero: only too large.
        bool digits = text.find_first_not_of("0123456789") == std::string::npos;
        if (!text.empty() && digits && text.find_first_not_of('0') != std::string::npos)
          return "must be a positive integer at most " + std::to_string(max) +
                 (whyMax.empty() ? "" : " (" + whyMax + ")") + got;
        return "must be a positive integer" + got;
      },
      desc);
}

const CLI::Validator &positiveInteger() {
  static const CLI::Validator v = integerIn(1, uint64_t(INT64_MAX));
  return v;
}

const CLI::Validator &unsignedInteger() {
  static const CLI::Validator v = integerIn(0, UINT64_MAX);
  return v;
}

const CLI::Validator &positiveNumber() {
  static const CLI::Validator v = numberValidator(false, "NUM>0");
  return v;
}

const CLI::Validator &nonNegativeNumber() {
  static const CLI::Validator v = numberValidator(true, "NUM>=0");
  return v;
}

int64_t parseByteSize(const std::string &text, const std::string &flag) {
  // Units start with a capital letter, which no decimal number holds.
  size_t unitAt = std::min(text.find_first_of("KMGB"), text.size());
  std::string number = text.substr(0, unitAt), unit = text.substr(unitAt);
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB") mult = 1024.0;
  else if (unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  double value = decimalNumber(number) ? std::strtod(number.c_str(), nullptr) : -1;
  if (mult == 0 || !std::isfinite(value) || value < 0 || value * mult > 9e18)
    throw UserError("", "", "invalid size '" + text + "' for " + flag +
                                " (use a plain decimal number with an optional B, KiB, MiB, "
                                "GiB, KB, MB or GB)");
  return int64_t(value * mult);
}

} // namespace mpc::tool
