//===- runtime/job/Agreement.h - every rank starts the same run --------===//
//
// Each rank reads the plan and the flags itself, so a job can start with
// ranks that disagree: a stale plan.bin on one host, a different --steps in
// an MPMD command line. Ranks that disagree would deadlock or train a
// different model, so before anything runs every rank sends rank 0's record
// of what changes results (the plan's checksum, the flags) to all, and a
// difference ends the job with one message that names the rank and the key.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/job/ProcessGroup.h"

#include <string>
#include <utility>
#include <vector>

namespace mpc::runtime::job {

/// What one rank starts with: (key, value) pairs, e.g. ("plan checksum",
/// "0x1f..."), ("--steps", "20").
using StartupRecord = std::vector<std::pair<std::string, std::string>>;

std::string encodeRecord(const StartupRecord &record);
/// Decodes encodeRecord's output; InternalError on malformed bytes.
StartupRecord decodeRecord(const std::string &bytes);

/// "" when every record equals the first; otherwise the message for the
/// first difference (lowest rank, then first key).
std::string compareRecords(const std::vector<StartupRecord> &byRank);

/// Collective: gathers every rank's record and throws AgreedError (on every
/// rank alike) when one differs from rank 0's.
void checkAgreement(ProcessGroup &group, const StartupRecord &mine);

} // namespace mpc::runtime::job
