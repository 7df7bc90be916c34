//===- plan/StepSimulation.h - one step of a plan on the cost model -------===//
//
// Runs every device's instruction list once on the cost model
// (plan/CostModel.h), each device on its own clock: a kernel advances it by
// its price, a send posts its message to arrive transferSeconds later, a
// receive waits for its message, and a collective starts when its last
// member comes to it and ends its price later for every member. The result
// is the predicted timeline of one step, in the shape a measured one has
// (runtime/Backend.h InstrSpan): per device, each instruction's span, a
// receive's or a collective's beginning when the device came to it, so its
// length is the predicted wait. `mpc compile --stats` reads the bubble and
// the collectives' hidden share from it, `mpc compile --trace-predicted`
// draws it, and `mpc run --profile` sets it next to the measured step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/CostModel.h"
#include "plan/Plan.h"

#include <cstdint>
#include <vector>

namespace mpc::plan {

struct SimulatedSpan {
  uint32_t instr = 0;
  double begin = 0, end = 0; ///< seconds from the step's start
};

/// Steps simulated to price overlapped steps (SimulationOptions::steps):
/// their period settles after a step or two, as the schedule repeats, and
/// the figure is per step between the first step's end and the last one's.
constexpr int64_t kOverlappedSteps = 6;

struct SimulationOptions {
  /// false: every collective is free (it still waits for its last member),
  /// to measure what the collectives add to the step.
  bool priceCollectives = true;
  /// The rank of each device (Plan::devices order) under mpirun; a
  /// collective whose group spans ranks is priced on MPI. Empty: one
  /// process (in-process between CPUs, NCCL between GPUs).
  std::vector<int> rankOf;
  /// Steps run back to back as runtime::Executor::runSteps overlaps them:
  /// a device starts its next step when it has finished its own and every
  /// device has finished the step before. The spans, busy time and
  /// collective time are the first step's.
  int64_t steps = 1;
};

struct SimulatedStep {
  double makespan = 0;                           ///< seconds of the (first) step
  std::vector<double> stepEnds; ///< per step: when its last device finished it
  std::vector<std::vector<SimulatedSpan>> spans; ///< per device, in execution order
  std::vector<double> busy;                      ///< kernel seconds per device
  double collectiveSeconds = 0;                  ///< each collective once, at its price
  /// Every instruction ran (a verified plan's always do; false means a
  /// receive or collective that nothing completes).
  bool complete = true;
  /// Seconds per step in a run of overlapped steps: the time between the
  /// first step's end and the last one's, per step (makespan for one step).
  double overlappedStep() const;
};

SimulatedStep simulateStep(const Plan &plan, const SimulationOptions &options = {});

} // namespace mpc::plan
