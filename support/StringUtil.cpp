//===- support/StringUtil.cpp - strings in diagnostics -------------------===//
#include "support/StringUtil.h"

#include <algorithm>
#include <cstdint>
#include <cinttypes>
#include <cstdio>

namespace mpc {

std::string hex64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates) {
  if (word.size() > 64) return "";
  const std::string *best = nullptr;
  size_t bestDist = SIZE_MAX;
  for (const std::string &c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDist) bestDist = d, best = &c;
  }
  if (!best || bestDist > std::min(word.size(), best->size()) / 3) return "";
  return *best;
}

std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates) {
  std::string best = closestMatch(word, candidates);
  return best.empty() ? best : "did you mean '" + best + "'?";
}

namespace {
/// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0.
size_t utf8Length(std::string_view s, size_t i) {
  auto cont = [&](size_t k) { return i + k < s.size() && (uint8_t(s[i + k]) & 0xC0) == 0x80; };
  uint8_t c = uint8_t(s[i]);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    uint8_t c1 = uint8_t(s[i + 1]);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0; // overlong, surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    uint8_t c1 = uint8_t(s[i + 1]);
    if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0; // overlong, > U+10FFFF
    return 4;
  }
  return 0;
}
} // namespace

std::string escapeForMessage(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint8_t c = uint8_t(text[i]);
    size_t n = utf8Length(text, i);
    // Newlines separate a diagnostic's note lines; every other control byte is escaped.
    if (n == 0 || (n == 1 && ((c < 0x20 && c != '\n') || c == 0x7F))) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string choiceText(const std::vector<std::string> &choices) {
  std::string s;
  for (size_t i = 0; i < choices.size(); ++i)
    s += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return s;
}

std::string joinText(const std::vector<std::string> &parts, std::string_view separator) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += separator;
    s += parts[i];
  }
  return s;
}

std::string byteSizeText(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string escapeForLine(std::string_view text) {
  std::string out;
  for (char c : escapeForMessage(text)) {
    if (c == '\n') out += "\\x0a";
    else out += c;
  }
  return out;
}

std::string quoteName(std::string_view text, std::string_view quote) {
  // Characters as the message shows them: a valid UTF-8 sequence, or one
  // byte that escapeForMessage writes as \xNN.
  size_t chars = 0, cut = text.size();
  for (size_t i = 0; i < text.size(); ++chars) {
    if (chars == kMaxQuotedChars) cut = i;
    i += std::max<size_t>(1, utf8Length(text, i));
  }
  std::string out(quote);
  out += escapeForLine(text.substr(0, cut));
  if (cut == text.size()) return out.append(quote);
  out += "...";
  out.append(quote);
  return out + " (" + std::to_string(chars) + " characters)";
}

} // namespace mpc
