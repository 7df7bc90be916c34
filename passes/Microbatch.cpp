//===- passes/Microbatch.cpp - one forward replica per micro-batch ------===//
//
// Pipelining: the step's batch split into M micro-batches, each with its own
// replica of the batched forward graph on the same devices
// (passes/BatchSplit.cpp); codegen then orders their work by the pipeline
// schedule (codegen/PipelineSchedule.cpp). With data parallelism the
// data-parallel pass makes the micro-batches of every replica, and this pass
// leaves the split graph as it is.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchSplit.h"
#include "passes/Pass.h"

#include "support/Error.h"

namespace mpc::passes {

namespace {

class MicrobatchPass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    ir::PipelineSpec spec = effectivePipeline(g, ctx.options);
    g.pipeline = spec;
    if (spec.microbatches <= 1) return false;
    if (g.has(ir::kDifferentiated))
      throw UserError(g.sourceFile, "/pipeline",
                      "microbatch must run before autodiff: the graph already has gradients");
    if (isBatchSplit(g)) return false;
    BatchSplit split;
    split.microbatches = spec.microbatches;
    splitBatch(g, split);
    ctx.count("microbatch", "microbatches", spec.microbatches);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createMicrobatchPass() { return std::make_unique<MicrobatchPass>(); }

} // namespace mpc::passes
