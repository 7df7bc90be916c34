//===- runtime/train/Profile.h - `mpc run --profile`: where a step's time went
//
// At the end of a run, a table per device of the measured step (the spans of
// runtime/train/Trace.h, gathered on rank 0) next to the cost model's
// prediction of the same step (plan/StepSimulation.h, priced by
// plan/CostModel.h), with the ratio measured/predicted:
//   * the step, the device's busy time (kernels) and its idle time, whose
//     share of the step is the device's bubble;
//   * the time blocked in receives, in collectives and in sends;
//   * the bytes the device sends and receives per step;
//   * the ops that took the most time, with the GFLOP/s they achieved.
// When steps overlap (a stage starts the next step while later ones finish
// this one), a step's window ends where the next one begins, and the
// prediction is the period of overlapped steps on the cost model.
// Figures are per step, averaged over the steps run, leaving out the first
// (a warm-up: first touches of memory, lazily started threads) when there
// are several. A ratio above 2 or below 1/2 is marked "!", and a closing
// line counts them: the cost model's constants are a rough CPU core's, so a
// mark says which of its assumptions this machine or this plan breaks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "plan/TraceEvents.h"

#include <ostream>
#include <vector>

namespace mpc::runtime::train {

/// Prints the profile of `measured` (every device's spans of the steps run)
/// of `plan`. `rankOf` maps each device to its rank under mpirun (empty: one
/// process), so the prediction prices collectives across ranks on MPI.
/// `overlapped`: the steps ran overlapped (runtime::Executor::runSteps), and
/// the predicted step is the period of overlapped steps.
void printProfile(const plan::Plan &plan, const std::vector<plan::TraceSpan> &measured,
                  const std::vector<int> &rankOf, bool overlapped, std::ostream &os);

} // namespace mpc::runtime::train
