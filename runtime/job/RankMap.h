//===- runtime/job/RankMap.h - which rank hosts which device -----------===//
//
// Each rank of a job hosts some of the plan's devices. By default they go out
// in contiguous blocks in plan order, the first `D % R` ranks taking one more:
// three devices over two ranks give {cpu:0, cpu:1} and {cpu:2}. A rank map
// (`mpc run --rank-map cpu:0=0,cpu:1=0,cpu:2=1`) says it device by device.
// Every rank must host at least one device.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <string>
#include <vector>

namespace mpc::runtime::job {

/// The rank of every device of `plan` (by device index) in a job of `ranks`
/// ranks: the default blocks when `rankMap` is empty, else the map, which
/// must name every device once. Throws UserError naming --rank-map and the
/// entry, or the device and rank counts when there are more ranks than
/// devices.
std::vector<int> assignRanks(const plan::Plan &plan, int ranks, const std::string &rankMap);

/// "cpu:2, cpu:3": the devices rankOf puts on `rank`.
std::string devicesOfRank(const plan::Plan &plan, const std::vector<int> &rankOf, int rank);

} // namespace mpc::runtime::job
