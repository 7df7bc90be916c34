//===- plan/TraceEvents.h - a plan's timeline as Chrome trace-event JSON --===//
//
// The one writer of the trace-event layout (docs/profiling.md) that Perfetto
// (ui.perfetto.dev) and chrome://tracing open, for a measured run
// (`mpc run --trace`, runtime/train/Trace.h) and for the cost model's
// prediction of a step (`mpc compile --trace-predicted`,
// plan/StepSimulation.h), so the two open side by side:
//   * one process per device ("cpu:0"), named and ordered by metadata
//     events, one thread ("instructions") in it: a device runs its
//     instructions one after another, so its slices never overlap; a
//     process label gives the device's busy time per step and its idle
//     share (the bubble), also listed under otherData.bubble;
//   * one complete event ("ph": "X") per instruction run, named by its op
//     and value ("matmul %h1", "send %z0 -> cpu:1"), with args bytes, flops
//     (kernels), step, instr, and in a pipelined plan the micro-batch and the
//     schedule action ("F3", "B3", "W3", "U");
//   * a flow from each send to its receive, and from a collective's first
//     member to each other member, in the same step;
//   * an instant event at the start of each step, and a counter track per
//     device of the arena bytes live at each instruction (the memory plan's
//     buffers between their first write and last read in the step).
// Times are microseconds from the first span.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "plan/StepSimulation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::plan {

/// One instruction's run: device `device`'s instruction `instr` in step
/// `step` (1-based), from `begin` to `end` in nanoseconds of any one clock.
struct TraceSpan {
  int64_t step = 0;
  uint32_t device = 0;
  uint32_t instr = 0;
  int64_t begin = 0, end = 0;
};

/// The trace-event JSON of `spans` of `plan`; `source` says where the times
/// come from ("measured", "predicted by the cost model"), in otherData.
std::string traceEventJson(const Plan &plan, const std::vector<TraceSpan> &spans,
                           const std::string &source);

/// The cost model's step (plan/StepSimulation.h) as step 1's spans, in
/// nanoseconds from the step's start.
std::vector<TraceSpan> simulatedSpans(const SimulatedStep &sim);

/// The cost model's timeline of one step of `plan` as trace-event JSON,
/// source "predicted by the cost model".
std::string predictedTraceEventJson(const Plan &plan);

/// Per device: kernel (busy) nanoseconds summed over the steps of `spans`,
/// and the steps' windows (first begin to last end over all devices, or to
/// the next step's first begin when that came earlier: overlapped steps)
/// summed. The idle share, the bubble, is 1 - busy / window.
struct DeviceBusy {
  int64_t busyNs = 0;
  int64_t windowNs = 0;
  int64_t steps = 0;
};
std::vector<DeviceBusy> deviceBusy(const Plan &plan, const std::vector<TraceSpan> &spans);

} // namespace mpc::plan
