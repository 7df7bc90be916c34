//===- runtime/train/Trace.h - a run as Chrome trace-event JSON -----------===//
//
// `mpc run --trace FILE.json` records every instruction of every step and
// writes the Chrome trace-event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open (docs/profiling.md):
//   * one process per device ("cpu:0"), named and ordered by metadata
//     events, one thread ("instructions") in it: a device runs its
//     instructions one after another, so its slices never overlap;
//   * one complete event ("ph": "X") per executed instruction, named by its
//     op and node ("matmul %h1", "send %z0 -> cpu:1"), with args bytes,
//     flops (kernels), step, and in a pipelined plan the micro-batch and the
//     schedule action ("F3", "B3", "W3", "U");
//   * a flow from each send to its receive, and from a collective's first
//     member to each other member, in the same step;
//   * an instant event at the start of each step, and a counter track per
//     device of the arena bytes live at each instruction (the memory plan's
//     buffers between their first write and last read in the step).
// Times are microseconds from the first recorded instruction. Under mpirun,
// rank 0 gathers every rank's spans and writes the one file; ranks' clocks
// are aligned as Trace::alignClocks says.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
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

private:
  struct Recorded {
    int64_t step = 0;
    uint32_t device = 0;
    InstrSpan span;
  };
  const plan::Plan &plan_;
  std::vector<Recorded> spans_;
  int64_t offsetNs_ = 0; ///< this rank's clock minus rank 0's
};

} // namespace mpc::runtime::train
