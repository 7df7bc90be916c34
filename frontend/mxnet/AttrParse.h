//===- frontend/mxnet/AttrParse.h - MXNet attribute strings --------------===//
//
// MXNet keeps every op parameter as a string in the Python or dmlc spelling:
// "1", "0.001", "1e-3", "True"/"False" (also "true", "1", "0"), tuples
// "(5, 5)", "(5,)", "()", "[2, 2]" (old files add Python 2 longs: "(3L, 3L)"),
// and "None" for an unset optional. The functions throw RuleError with what
// is wrong; AttrReader wraps them with the file, the node and the attribute.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/mxnet/SymbolFile.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mpc::frontend::mxnet {

int64_t parseIntAttr(const std::string &s);
double parseFloatAttr(const std::string &s);
bool parseBoolAttr(const std::string &s);
std::vector<int64_t> parseTupleAttr(const std::string &s);
/// "(2, 3)", "(4,)": a shape as MXNet writes it, for messages about MXNet
/// files (the inverse of parseTupleAttr).
std::string tupleText(const std::vector<int64_t> &shape);
bool isNoneAttr(const std::string &s);

/// Typed reads of one node's op parameters with MXNet's defaults. Every
/// attribute the mapping does not read must be one it lists as harmless
/// (`ignore`), so no parameter that changes the meaning is dropped.
class AttrReader {
public:
  AttrReader(const SymbolFile &file, const SymbolNode &node) : file_(file), node_(node) {}

  bool has(const std::string &key) const;
  int64_t getInt(const std::string &key, std::optional<int64_t> dflt = std::nullopt);
  double getFloat(const std::string &key, std::optional<double> dflt = std::nullopt);
  bool getBool(const std::string &key, bool dflt);
  std::string getString(const std::string &key, std::optional<std::string> dflt = std::nullopt);
  std::vector<int64_t> getTuple(const std::string &key,
                                std::optional<std::vector<int64_t>> dflt = std::nullopt);
  /// An optional value: nullopt when absent or "None".
  std::optional<int64_t> getOptInt(const std::string &key);
  std::optional<bool> getOptBool(const std::string &key);
  std::optional<double> getOptFloat(const std::string &key);
  /// Marks attributes that do not change the result (workspace sizes, cuDNN
  /// tuning) as read.
  void ignore(std::initializer_list<const char *> keys);
  /// Throws for any attribute neither read nor ignored.
  void finish() const;

  [[noreturn]] void fail(const std::string &key, const std::string &msg) const;
  [[noreturn]] void failNode(const std::string &msg) const;

private:
  const std::string *find(const std::string &key);

  const SymbolFile &file_;
  const SymbolNode &node_;
  std::set<std::string> read_;
};

} // namespace mpc::frontend::mxnet
