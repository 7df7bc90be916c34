//===- frontend/common/ReadBack.h - an emitted model, read back ------------===//
//
// What the importers emit they also read back with the ir reader, which
// runs mpc's own shape rules, before writing anything. A reader error names
// a JSON pointer into the emitted model ("/nodes/12/attrs/value"); each
// importer keeps, for the pointers of what it emitted, the source node that
// made it, so that the error names the node of the user's file instead.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mpc::frontend {

using Shape = std::vector<int64_t>;

/// An mpc value an importer has emitted (or an input or parameter): its
/// name, shape and dtype.
struct Value {
  std::string name;
  Shape shape;
  bool i32 = false;
};

/// Reads `text` back (`file` names it in the reader's messages). On a
/// reader error calls `fail(source, what)`, which must throw: `source` is
/// the value `sources` holds for the longest pointer that is a prefix of the
/// error's (null if none), `what` says the emitted model is invalid, where
/// and why.
template <class Source>
std::unique_ptr<ir::Graph>
readBack(const std::string &text, const std::string &file,
         const std::map<std::string, Source> &sources,
         const std::function<void(const Source *, const std::string &)> &fail);

/// Not a template's business: the reader call and the message.
std::unique_ptr<ir::Graph> readBackOrMessage(const std::string &text, const std::string &file,
                                             std::string &where, std::string &what);

template <class Source>
std::unique_ptr<ir::Graph>
readBack(const std::string &text, const std::string &file,
         const std::map<std::string, Source> &sources,
         const std::function<void(const Source *, const std::string &)> &fail) {
  std::string where, what;
  std::unique_ptr<ir::Graph> g = readBackOrMessage(text, file, where, what);
  if (g) return g;
  const Source *source = nullptr;
  size_t best = 0;
  for (const auto &[ptr, s] : sources)
    if (where.rfind(ptr, 0) == 0 && ptr.size() > best &&
        (where.size() == ptr.size() || where[ptr.size()] == '/')) {
      source = &s;
      best = ptr.size();
    }
  fail(source, what);
  return nullptr;
}

} // namespace mpc::frontend
