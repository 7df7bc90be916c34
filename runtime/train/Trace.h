//===- runtime/train/Trace.h - a run as Chrome trace-event JSON -----------===//
//
// `mpc run --trace FILE.json` and `mpc run --profile` record every
// instruction of every step. Trace keeps the spans, aligns the ranks' clocks
// and gathers every rank's spans on rank 0, which writes them in the layout
// of plan/TraceEvents.h (docs/profiling.md) or sums them into the profile
// (runtime/train/Profile.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "plan/TraceEvents.h"
#include "runtime/Backend.h"
#include "runtime/job/ProcessGroup.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::runtime::train {

class Trace {
public:
  explicit Trace(const plan::Plan &plan) : plan_(plan) {}

  /// The steady-clock offset of this rank against rank 0, in ns, estimated
  /// NTP-style: rank 0 sends a ping to each rank in turn, the rank answers
  /// with its clock, and rank 0 takes the rank's clock minus the midpoint of
  /// its send and receive, best of 8 round trips. Ranks on one host share
  /// CLOCK_MONOTONIC, and the offset comes out near zero (within the round
  /// trip's half). Every rank calls it; a one-process job does nothing.
  void alignClocks(job::ProcessGroup &group);

  /// Adds device `device`'s spans of step `step` (1-based).
  void add(int64_t step, uint32_t device, const std::vector<InstrSpan> &spans);

  /// Gathers every rank's spans on rank 0 (every rank calls it).
  void gather(job::ProcessGroup &group);

  /// The trace-event JSON of what was added (on rank 0 after gather()).
  std::string json() const;

  /// What was added, in steady-clock ns aligned to rank 0's clock.
  const std::vector<plan::TraceSpan> &spans() const { return spans_; }

private:
  const plan::Plan &plan_;
  std::vector<plan::TraceSpan> spans_;
  int64_t offsetNs_ = 0; ///< this rank's clock minus rank 0's
};

} // namespace mpc::runtime::train
