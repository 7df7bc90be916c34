//===- ir/NameTable.h - a graph's nodes by name -------------------------===//
//
// The registry behind Graph::find: an open-addressing hash table (linear
// probing, power-of-two capacity, at most half full) of (hash of the name,
// node) pairs. The key is the node's own `name`, so registering a node
// copies and allocates nothing, and a lookup costs one probe of a flat
// array, plus a look at the node when a stored hash matches. With
// std::unordered_map every entry was a separate allocation holding a copy
// of the name, and a lookup walked a chain of them: compiling a 200k-node
// graph made about a million lookups, most missing the cache several
// times.
//
// Because the key lives in the node, a node's name must not change while it
// is registered: Graph::rename takes it out, renames it and puts it back.
// A name changed behind the table's back is not found under either name,
// and `registeredUnderOwnName` (the verifier's check) reports it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mpc::ir {

struct Node;

class NameTable {
public:
  /// The node registered under `name`, or nullptr.
  Node *find(std::string_view name) const;
  /// Registers `n` under its current name. Returns false, changing nothing,
  /// when a node is registered under that name already.
  bool insert(Node *n);
  /// Removes `n`, found through the hash it was registered under
  /// (Node::registeredHash). Returns false when it is not registered here.
  bool erase(Node *n);
  size_t size() const { return size_; }
  /// Whether `n` is registered (in some table) under the name it carries
  /// now: its Node::registeredHash, set by insert and cleared by erase, is
  /// the hash of its name. Reads the node alone, so a check of every node
  /// is one pass over the nodes in creation order.
  static bool registeredUnderOwnName(const Node &n);

private:
  struct Slot {
    uint64_t hash = 0;
    Node *node = nullptr; ///< nullptr: empty
  };
  static uint64_t hashOf(std::string_view name);
  size_t home(uint64_t hash) const { return size_t(hash) & (slots_.size() - 1); }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow();

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

} // namespace mpc::ir
