//===- support/StringUtil.h - "did you mean" suggestions ----------------===//
//
// Diagnostics for unknown names (ops, passes, kernels, JSON keys) suggest
// the closest known name; the distance and the choice live here once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mpc {

/// Levenshtein distance (insertions, deletions, substitutions).
size_t editDistance(std::string_view a, std::string_view b);

/// The first candidate at the smallest distance from `word`, when that
/// distance is at most `maxDistance`; "" otherwise.
std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates,
                         size_t maxDistance);

} // namespace mpc
