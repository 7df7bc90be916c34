//===- support/StringUtil.h - strings in diagnostics ---------------------===//
//
// Diagnostics for unknown names (ops, passes, kernels, JSON keys) suggest
// the closest known name; the distance and the choice live here once. Every
// diagnostic's text is escaped here before it is printed.
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

/// `text` made safe to print in a diagnostic: valid UTF-8 is kept, control
/// characters, DEL and bytes that are not part of valid UTF-8 become \xNN
/// (and a backslash stays a backslash), so a hostile file name or plan string
/// cannot garble a terminal or a log.
std::string escapeForMessage(std::string_view text);

} // namespace mpc
