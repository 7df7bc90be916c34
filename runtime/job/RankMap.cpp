//===- runtime/job/RankMap.cpp - which rank hosts which device ---------===//
#include "runtime/job/RankMap.h"

#include "support/Error.h"

#include <cstdlib>
#include <map>

namespace mpc::runtime::job {

namespace {

int parseRank(const std::string &text, const std::string &entry, int ranks) {
  bool digits = !text.empty() && text.size() <= 9;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits)
    throw UserError("", "--rank-map", "entry '" + entry + "': '" + text +
                                          "' is not a rank number (expected DEVICE=RANK)");
  int r = std::atoi(text.c_str());
  if (r >= ranks)
    throw UserError("", "--rank-map", "entry '" + entry + "': rank " + text +
                                          " is not in the job (ranks 0.." +
                                          std::to_string(ranks - 1) + ")");
  return r;
}

} // namespace

std::vector<int> assignRanks(const plan::Plan &plan, int ranks, const std::string &rankMap) {
  const int devices = int(plan.devices.size());
  if (ranks > devices)
    throw UserError("", "", "the job has " + std::to_string(ranks) + " ranks but the plan has " +
                                std::to_string(devices) + " device" + (devices == 1 ? "" : "s") +
                                " (" + plan::deviceList(plan) +
                                "); every rank must host a device, so run at most " +
                                std::to_string(devices) + " ranks (mpirun -np " +
                                std::to_string(devices) + ")");
  std::vector<int> rankOf(size_t(devices), -1);
  if (rankMap.empty()) {
    int base = devices / ranks, extra = devices % ranks, d = 0;
    for (int r = 0; r < ranks; ++r)
      for (int k = 0; k < base + (r < extra ? 1 : 0); ++k) rankOf[size_t(d++)] = r;
    return rankOf;
  }
  std::map<std::string, int> index;
  for (int d = 0; d < devices; ++d) index[plan.devices[size_t(d)].device] = d;
  size_t pos = 0;
  while (pos <= rankMap.size()) {
    size_t comma = rankMap.find(',', pos);
    if (comma == std::string::npos) comma = rankMap.size();
    std::string entry = rankMap.substr(pos, comma - pos);
    pos = comma + 1;
    size_t eq = entry.find('=');
    if (entry.empty() || eq == std::string::npos)
      throw UserError("", "--rank-map", "entry '" + entry + "' is not DEVICE=RANK (e.g. "
                                        "cpu:0=0,cpu:1=0,cpu:2=1)");
    std::string device = entry.substr(0, eq);
    auto it = index.find(device);
    if (it == index.end())
      throw UserError("", "--rank-map",
                      "entry '" + entry + "': the plan has no device '" + device +
                          "' (devices: " + plan::deviceList(plan) + ")");
    if (rankOf[size_t(it->second)] >= 0)
      throw UserError("", "--rank-map", "device '" + device + "' is given twice");
    rankOf[size_t(it->second)] = parseRank(entry.substr(eq + 1), entry, ranks);
  }
  std::string missing;
  for (int d = 0; d < devices; ++d)
    if (rankOf[size_t(d)] < 0) missing += (missing.empty() ? "" : ", ") + plan.devices[size_t(d)].device;
  if (!missing.empty())
    throw UserError("", "--rank-map", "no rank for device " + missing +
                                          "; the map must place every device of the plan");
  for (int r = 0; r < ranks; ++r) {
    bool any = false;
    for (int owner : rankOf) any = any || owner == r;
    if (!any)
      throw UserError("", "--rank-map", "rank " + std::to_string(r) +
                                            " hosts no device; every rank of the job must "
                                            "host one (or run fewer ranks)");
  }
  return rankOf;
}

std::string devicesOfRank(const plan::Plan &plan, const std::vector<int> &rankOf, int rank) {
  std::string s;
  for (size_t d = 0; d < rankOf.size(); ++d)
    if (rankOf[d] == rank) s += (s.empty() ? "" : ", ") + plan.devices[d].device;
  return s;
}

} // namespace mpc::runtime::job
