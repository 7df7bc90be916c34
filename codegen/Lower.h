//===- codegen/Lower.h - training graph -> execution plan ---------------===//
//
// Lowers a verified, placed graph with explicit copies (and, for training,
// gradients and optimizer updates) into a runtime::plan::Plan: one flat
// instruction list per device, buffers with fixed offsets in a per-device
// arena (reused once a value is dead) or in the persistent region (params,
// state, inputs, outputs, loss), send/recv pairs for every copy, initial
// parameter values drawn with ir::initialValues.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "plan/Plan.h"

#include <cstdint>
#include <ostream>

namespace mpc::codegen {

struct LowerOptions {
  uint64_t seed = 0; ///< seed for the initial parameter values
  /// Elementwise results may take over a dying operand's arena slot
  /// (codegen/InPlace.cpp); off, every arena buffer gets bytes of its own.
  bool inPlace = true;
};

/// Throws UserError when the graph cannot be lowered (not placed, copies not
/// explicit), InternalError on broken invariants.
plan::Plan lowerToPlan(const ir::Graph &graph, const LowerOptions &options);

/// Sets plan.ops, the op table's entries (operand counts, attributes and their
/// kinds, from the ops' records) for every op the plan's kernels name. The
/// lowering calls it; so do tests that build plans by hand.
void fillOpTable(plan::Plan &plan);

/// `mpc compile --stats`: per device, peak arena bytes, persistent bytes and
/// the bytes a no-reuse plan would need; instruction counts; transfers.
void printPlanStats(const plan::Plan &plan, std::ostream &os);
/// `mpc compile --stats --recompute=...`: each device's arena peak with
/// recomputation (`with`) and without (`without`, the same model and flags).
void printRecomputeStats(const plan::Plan &with, const plan::Plan &without, std::ostream &os);

/// A pipelined plan's bubble (idle share of device time): predicted by
/// running its instruction lists on a cost model (FLOPs and bytes per
/// instruction, plan/StepSimulation.h), and the schedule's analytic bound.
struct PipelineCost {
  double makespan = 0;        ///< seconds of one step, on the cost model
  double predictedBubble = 0; ///< 1 - busy device time / (devices * makespan)
  double analyticBubble = 0;  ///< (p-1)/(M+p-1); (p-1)/(v*M+p-1) interleaved; zb-h1 (p-1)/(3M+p-1); zb-h2 0
  size_t stageDevices = 0;    ///< p: the devices that hold stages
  /// Seconds per step when steps overlap (`mpc run` on the devices of one
  /// process; runtime::Executor::runSteps), and its bubble.
  double overlappedStep = 0, overlappedBubble = 0;
};
PipelineCost predictPipelineCost(const plan::Plan &plan);
/// `mpc compile --stats` for a pipelined plan: schedule, M, stages, bubbles.
void printPipelineStats(const plan::Plan &plan, std::ostream &os);

/// How much of a step's collective time the cost model expects the rest of
/// the step to hide (codegen/PipelineCost.cpp): the step with collectives
/// priced, against the same step with them free.
struct CollectiveOverlap {
  double collectiveSeconds = 0; ///< every collective of the step once, at its price
  double exposedSeconds = 0;    ///< what they add to the step
  double hiddenShare = 0;       ///< 1 - exposed / collective seconds
  double makespan = 0;          ///< the step, collectives priced
};
CollectiveOverlap predictCollectiveOverlap(const plan::Plan &plan);
/// `mpc compile --stats` for a plan with collectives: the line above.
void printCollectiveOverlap(const plan::Plan &plan, std::ostream &os);

} // namespace mpc::codegen
