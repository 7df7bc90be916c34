//===- support/Error.h - user and internal errors ------------------------===//
//
// mpc reports two kinds of failure, on distinct paths (see docs/architecture.md):
//   * UserError: the input is wrong (a model, a flag, a plan file). The message
//     names the file, a location inside it (a JSON pointer such as
//     /nodes/3/inputs/1, a node, a plan section) and what is wrong. Exit 1.
//   * InternalError: mpc itself is wrong (a verifier failure after a pass, a
//     broken invariant). Exit 2.
// Both are exceptions so that the layers between the place that detects a
// problem and the driver that prints it stay free of plumbing; the driver is
// the only place that catches them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/StringUtil.h"

#include <stdexcept>
#include <string>

namespace mpc {

/// A problem with the user's input. `file` and `where` may be empty.
class UserError : public std::runtime_error {
public:
  UserError(std::string file, std::string where, std::string message)
      : std::runtime_error(format(file, where, message)), file_(std::move(file)),
        where_(std::move(where)), message_(std::move(message)) {}
  explicit UserError(std::string message) : UserError("", "", std::move(message)) {}

  const std::string &file() const { return file_; }
  const std::string &where() const { return where_; }
  const std::string &message() const { return message_; }

  /// "FILE: error: WHERE: MESSAGE", dropping empty parts, with non-printable
  /// and non-UTF-8 bytes escaped (they come from untrusted files). FILE and
  /// WHERE stay on the first line (a newline in them is escaped); the
  /// message's own newlines start note lines, so user text inside it is
  /// quoted with quoteName.
  static std::string format(const std::string &file, const std::string &where,
                            const std::string &message) {
    std::string out;
    if (!file.empty()) out += escapeForLine(file) + ": ";
    out += "error: ";
    if (!where.empty()) out += escapeForLine(where) + ": ";
    out += message;
    return escapeForMessage(out);
  }

private:
  std::string file_, where_, message_;
};

/// A bug in mpc. The message starts with "internal error: " when printed.
class InternalError : public std::runtime_error {
public:
  explicit InternalError(const std::string &message) : std::runtime_error(message) {}
};

/// A rule violation detected by a component that does not know where its input
/// came from (a shape rule, an attribute check). Callers that know the
/// location catch it and rethrow a UserError that names file and JSON pointer.
class RuleError : public std::runtime_error {
public:
  explicit RuleError(const std::string &message) : std::runtime_error(message) {}
};

} // namespace mpc

/// Checks an invariant that no input can break; a failure is a bug in mpc.
#define MPC_ASSERT(cond, msg)                                                  \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::mpc::InternalError(std::string(__FILE__) + ":" +                 \
                                 std::to_string(__LINE__) + ": " + (msg));     \
  } while (0)
