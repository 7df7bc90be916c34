//===- ir/NameTable.cpp - a graph's nodes by name -----------------------===//
//
// Deletion shifts later entries of the probe run back (no tombstones), so
// a lookup stops at the first empty slot and the table never needs a
// rebuild to stay fast.
//
//===----------------------------------------------------------------------===//
#include "ir/NameTable.h"

#include "ir/Graph.h"

#include <functional>

namespace mpc::ir {

uint64_t NameTable::hashOf(std::string_view name) {
  // Never 0, which Node::registeredHash keeps for "not registered".
  uint64_t h = uint64_t(std::hash<std::string_view>{}(name));
  return h ? h : 1;
}

Node *NameTable::find(std::string_view name) const {
  if (size_ == 0) return nullptr;
  uint64_t h = hashOf(name);
  for (size_t i = home(h);; i = next(i)) {
    const Slot &s = slots_[i];
    if (!s.node) return nullptr;
    if (s.hash == h && s.node->name == name) return s.node;
  }
}

bool NameTable::insert(Node *n) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  uint64_t h = hashOf(n->name);
  size_t i = home(h);
  for (; slots_[i].node; i = next(i))
    if (slots_[i].hash == h && slots_[i].node->name == n->name) return false;
  slots_[i] = {h, n};
  n->registeredHash = h;
  ++size_;
  return true;
}

bool NameTable::erase(Node *n) {
  if (size_ == 0 || !n || n->registeredHash == 0) return false;
  size_t i = home(n->registeredHash);
  for (; slots_[i].node != n; i = next(i))
    if (!slots_[i].node) return false;
  // Backward shift: move each later entry of the run into the hole when
  // its home does not lie cyclically in (hole, its slot].
  size_t hole = i;
  for (size_t j = next(i); slots_[j].node; j = next(j)) {
    size_t want = home(slots_[j].hash);
    bool stays = hole <= j ? (hole < want && want <= j) : (hole < want || want <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = {};
  n->registeredHash = 0;
  --size_;
  return true;
}

void NameTable::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
  for (const Slot &s : old) {
    if (!s.node) continue;
    size_t i = home(s.hash);
    while (slots_[i].node) i = next(i);
    slots_[i] = s;
  }
}

bool NameTable::registeredUnderOwnName(const Node &n) {
  return n.registeredHash != 0 && n.registeredHash == hashOf(n.name);
}

} // namespace mpc::ir
