//===- codegen/Lower.cpp - training graph -> execution plan --------------===//
//
// The lowering, as a table of contents; each step lives in its own file
// (codegen/LowerSteps.h). The input is a verified graph that is placed and has
// explicit copies (a training graph also has gradients and optimizer
// updates; a forward-only graph has neither). The output is a Plan that
// plan::verifyPlan accepts: anything it rejects is a bug here.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"

#include "codegen/LowerSteps.h"
#include "plan/PlanIO.h"
#include "support/Error.h"

namespace mpc::codegen {

plan::Plan lowerToPlan(const ir::Graph &graph, const LowerOptions &options) {
  LoweringState st(graph);
  st.plan.model = graph.name;
  st.plan.seed = options.seed;
  st.plan.precision = graph.precision;
  st.plan.modelChecksum = graph.modelChecksum;

  // 1. Preconditions; the devices, sorted (Values.cpp).
  checkAndCollectDevices(st);
  // 2. Execution order: topological, readers before in-place updates (Schedule.cpp);
  //    for a micro-batched graph, the pipeline schedule's order (PipelineSchedule.cpp).
  orderNodes(st);
  if (isPipelined(graph)) orderNodesPipelined(st);
  // 3. One buffer per value on its device; updates reuse their parameter's, a
  //    matmul that accumulates reuses its dying accumulator's (Values.cpp).
  createBuffers(st);
  // 4. Per-device instruction lists: kernels, early sends, late receives (Schedule.cpp).
  scheduleInstructions(st);
  // 5. Memory: live ranges, results that run in place, then arena and
  //    persistent offsets (Liveness.cpp, InPlace.cpp, MemoryPlan.cpp).
  for (plan::DeviceProgram &program : st.plan.devices) {
    std::vector<LiveInterval> live = computeLiveness(program);
    planArena(program, live, options.inPlace ? findInPlaceReuse(program, live)
                                             : std::vector<uint32_t>{});
    planPersistent(program);
  }
  // 6. What the user sees: inputs, outputs, params, states, loss, optimizer; the
  //    op table's entries for the ops the kernels name (Values.cpp).
  describeInterface(st);
  describeOptimizer(st);
  fillOpTable(st.plan);
  // 7. Initial values of params then states (Values.cpp).
  computeInitialValues(st, options.seed);

  // 8. The runtime's checks, run here too: a failure is a lowering bug.
  std::vector<std::string> problems = plan::verifyPlan(st.plan);
  if (!problems.empty()) {
    std::string msg = "lowering produced an invalid plan:";
    for (const std::string &p : problems) msg += "\n  " + p;
    throw InternalError(msg);
  }
  return std::move(st.plan);
}

} // namespace mpc::codegen
