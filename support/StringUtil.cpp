//===- support/StringUtil.cpp - "did you mean" suggestions --------------===//
#include "support/StringUtil.h"

#include <algorithm>

namespace mpc {

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

std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates,
                         size_t maxDistance) {
  const std::string *best = nullptr;
  size_t bestDist = maxDistance + 1;
  for (const std::string &c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDist) bestDist = d, best = &c;
  }
  return best ? *best : std::string();
}

} // namespace mpc
