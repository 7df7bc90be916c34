//===- ir/GradientMap.cpp - parameter -> gradient value, both ways --------===//
#include "ir/GradientMap.h"

namespace mpc::ir {

void GradientMap::set(const std::string &param, const std::string &grad) {
  erase(param);
  map_.emplace(param, grad);
  paramsOf_[grad].insert(param);
}

size_t GradientMap::erase(const std::string &param) {
  auto it = map_.find(param);
  if (it == map_.end()) return 0;
  auto rev = paramsOf_.find(it->second);
  rev->second.erase(param);
  if (rev->second.empty()) paramsOf_.erase(rev);
  map_.erase(it);
  return 1;
}

void GradientMap::renameValue(const std::string &from, const std::string &to) {
  auto rev = paramsOf_.find(from);
  if (rev == paramsOf_.end() || from == to) return;
  std::set<std::string> params = std::move(rev->second);
  paramsOf_.erase(rev);
  for (const std::string &p : params) map_[p] = to;
  paramsOf_[to].insert(params.begin(), params.end());
}

} // namespace mpc::ir
