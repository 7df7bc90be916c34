//===- support/StrictJson.h - JSON files parsed as untrusted input ------===//
//
// Every JSON file mpc reads (a model, an MXNet symbol file) is parsed here,
// with the same rules, before its reader looks at a value: object order is
// kept (nlohmann::ordered_json), and a duplicate key, nesting deeper than
// kMaxJsonDepth, a NUL byte, a syntax error or a number out of range is a
// UserError naming the file and the place. nlohmann's own parser keeps one
// of two duplicate keys silently and recurses without a limit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace mpc {

using OrderedJson = nlohmann::ordered_json;

/// Containers nested deeper than this are rejected while parsing; no file
/// mpc reads needs more than a handful of levels.
constexpr int kMaxJsonDepth = 64;

/// Parses `text`, the contents of `file`. Errors are UserErrors at "LINE:COL"
/// (syntax, NUL byte, number out of range) or at the JSON pointer of the
/// value (duplicate key, nesting too deep).
OrderedJson parseStrictJson(const std::string &text, const std::string &file);

/// "LINE:COL" (1-based) of the byte at 1-based offset `byte` of `text`.
std::string lineCol(const std::string &text, size_t byte);

/// Escapes one reference token of a JSON pointer (RFC 6901).
std::string ptrToken(const std::string &key);

} // namespace mpc
