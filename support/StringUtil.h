//===- support/StringUtil.h - strings in diagnostics ---------------------===//
//
// Diagnostics for unknown names (ops, passes, kernels, JSON keys) suggest
// the closest known name; the distance and the choice live here once. Every
// diagnostic's text is escaped here before it is printed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpc {

/// "[2,3]", "[]" for a scalar: a shape (or a list of integers) as every
/// message, printer and dump of mpc writes it.
std::string shapeText(const std::vector<int64_t> &shape);

/// "512 B", "1.5 KiB", "2.0 GiB": a size in bytes as every message, dump
/// and statistic of mpc writes it.
std::string byteSizeText(uint64_t bytes);

/// "0x00c0ffee00c0ffee": a 64-bit checksum as plans, checkpoints and
/// messages print it.
std::string hex64(uint64_t v);

/// "a, b, c": `parts` joined by `separator`, as lists in messages read.
std::string joinText(const std::vector<std::string> &parts, std::string_view separator = ", ");

/// "a, b or c": the choices a message offers.
std::string choiceText(const std::vector<std::string> &choices);

/// Levenshtein distance (insertions, deletions, substitutions).
size_t editDistance(std::string_view a, std::string_view b);

/// The first candidate at the smallest distance from `word`, when it is
/// close enough to be a typo of it: at most one edit per three characters of
/// the shorter of the two (short names get no suggestion, as nearly every
/// short name is close to another), for a `word` of at most 64 characters;
/// "" otherwise. The one rule of every "did you mean".
std::string closestMatch(std::string_view word, const std::vector<std::string> &candidates);

/// "did you mean 'x'?" for closestMatch's candidate, or "" when there is none.
std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates);

/// `text` made safe to print in a diagnostic: valid UTF-8 is kept, control
/// characters, DEL and bytes that are not part of valid UTF-8 become \xNN
/// (and a backslash stays a backslash), so a hostile file name or plan string
/// cannot garble a terminal or a log.
std::string escapeForMessage(std::string_view text);

/// escapeForMessage's text with newlines escaped too (\x0a): for a part of a
/// diagnostic that must stay on its line (a file name, a location, a quoted
/// name), as only a diagnostic's own note lines may break it.
std::string escapeForLine(std::string_view text);

/// Names and values echoed from user input are shown whole up to this many
/// characters; longer ones are cut, with their length.
constexpr size_t kMaxQuotedChars = 200;

/// `text` between `quote`s for a diagnostic that echoes user input (a name,
/// a key, an attribute value), escaped by escapeForLine, and cut after
/// kMaxQuotedChars characters with its length after the closing quote:
/// 'aaaa...' (26000 characters). `quote` may be "" for a bare value.
std::string quoteName(std::string_view text, std::string_view quote = "'");

} // namespace mpc
