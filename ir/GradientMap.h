//===- ir/GradientMap.h - parameter -> gradient value, both ways ----------===//
//
// Graph::gradients, filled by autodiff: each parameter's name mapped to the
// name of its gradient value. Renaming a value must update the entries that
// name it, and autodiff renames one value per node it differentiates, so the
// map keeps a reverse index (gradient value -> parameters) instead of
// walking every entry on each rename. Writes go through set() and erase(),
// which keep the two in step; reads look like a const std::map.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace mpc::ir {

class GradientMap {
public:
  using Map = std::map<std::string, std::string>;
  using const_iterator = Map::const_iterator;

  /// The gradient of `param` is the value `grad` (replacing any earlier one).
  void set(const std::string &param, const std::string &grad);
  /// Forgets the gradient of `param`; returns how many entries went (0 or 1).
  size_t erase(const std::string &param);
  /// Every entry whose gradient is the value `from` names `to` instead.
  void renameValue(const std::string &from, const std::string &to);

  const std::string &at(const std::string &param) const { return map_.at(param); }
  size_t count(const std::string &param) const { return map_.count(param); }
  const_iterator find(const std::string &param) const { return map_.find(param); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  /// Parameter order, as iteration gives it.
  const Map &entries() const { return map_; }

  bool operator==(const GradientMap &other) const { return map_ == other.map_; }

private:
  Map map_;
  /// Gradient value -> the parameters whose entry names it (one, unless a
  /// model file says otherwise).
  std::unordered_map<std::string, std::set<std::string>> paramsOf_;
};

} // namespace mpc::ir
