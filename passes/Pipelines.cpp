//===- passes/Pipelines.cpp - the default training pipeline -------------===//
//
// The pipeline `mpc compile` runs, as a readable sequence:
//   1. infer-shapes   types for every node (the reader already did; cheap)
//   2. canonicalize   drop dead nodes, fold identity reshapes/transposes
//      fuse-attention (unless --no-fuse-attention) each matmul -> scale ->
//                     causal_mask -> softmax -> matmul chain one attention op
//   3. place          a concrete device for every node
//      batch-norm-stats  (models with batch_norm) running statistics as
//                     state, and their update in training (after place:
//                     the state takes its node's device; before microbatch:
//                     each micro-batch updates them in turn)
//   4. microbatch     with more than one micro-batch: one replica of the
//                     batched forward graph per micro-batch (after placement,
//                     so that every replica has its stage's device);
//      data-parallel  instead, with R > 1 replicas: R replicas of the placed
//                     model on their own devices, each split into its
//                     micro-batches
//   5. insert-copies  explicit, deduplicated copies on cross-device edges
// and, when the model has a loss:
//   6. autodiff       the backward graph (copies' gradients are copies back)
//   7. insert-copies  copies for backward edges that cross devices
//      recompute      (--recompute=selective|full) activations recomputed
//                     inside the backward instead of kept
//      autocast       (--precision=bf16|fp16) matmul and conv in the low
//                     type, explicit casts, gradients summed in f32: after
//                     the whole forward and backward exist (recomputed
//                     nodes included), before the gradients are reduced
//                     and applied, which then see f32 only; without a
//                     loss, after insert-copies
//      reduce-gradients  (data parallel) each gradient all-reduced across
//                     the replicas
//   8. optimize-step  optimizer state and in-place updates, colocated
//      shard-optimizer-state  (--zero=1) each replica keeps a 1/R shard of
//                     the optimizer state: gradients reduce-scattered, the
//                     shards updated, the parameters all-gathered
//   9. tensor-parallel  (groups mapped to several devices) each node of such
//                     a group on all of its devices, in its layout, with
//                     explicit redistributions: after everything else, so
//                     that forward, backward and optimizer are one graph
//  10. loss-scale     (--precision=fp16) dynamic loss scaling: the backward
//                     starts from the scale, guarded updates skip a step
//                     with inf or NaN gradients (after tensor-parallel: each
//                     device counts the gradient parts it holds)
//
//===----------------------------------------------------------------------===//
#include "passes/PassManager.h"

#include "ir/Device.h"
#include "support/Error.h"

#include <algorithm>
#include <iterator>

namespace mpc::passes {

ir::PipelineSpec effectivePipeline(const ir::Graph &g, const PassOptions &opts) {
  ir::PipelineSpec spec = g.pipeline;
  if (opts.microbatches) spec.microbatches = *opts.microbatches;
  if (opts.schedule) spec.schedule = *opts.schedule;
  if (opts.inFlight) spec.inFlight = *opts.inFlight;
  if (spec.microbatches < 1)
    throw UserError(g.sourceFile, "/pipeline/microbatches",
                    "microbatches must be a positive integer, got " +
                        std::to_string(spec.microbatches));
  if (std::find(std::begin(ir::kPipelineSchedules), std::end(ir::kPipelineSchedules),
                spec.schedule) == std::end(ir::kPipelineSchedules))
    throw UserError(g.sourceFile, "/pipeline/schedule",
                    "unknown schedule '" + spec.schedule +
                        "' (expected " + ir::pipelineScheduleList() + ")");
  // The other schedules fix what a stage holds by their own sequence.
  if (spec.inFlight > 0 && !ir::isZeroBubbleSchedule(spec.schedule))
    throw UserError(g.sourceFile, opts.inFlight ? "--in-flight" : "/pipeline/in_flight",
                    "an in-flight bound is for the zero-bubble schedules (zb-h1, zb-h2), and the "
                    "schedule is " + spec.schedule);
  return spec;
}

std::string effectivePrecision(const ir::Graph &g, const PassOptions &opts) {
  std::string p = opts.precision.value_or(g.precision);
  if (!ops::isPrecision(p))
    throw UserError(g.sourceFile, opts.precision ? "--precision" : "/precision",
                    "unknown precision '" + p + "' (expected " + ops::precisionList() + ")");
  return p;
}

ir::DataParallelSpec effectiveDataParallel(const ir::Graph &g, const PassOptions &opts) {
  ir::DataParallelSpec spec = g.dataParallel;
  if (opts.dataParallel) spec.replicas = *opts.dataParallel;
  if (opts.zero) spec.zero = *opts.zero;
  if (opts.bucketBytes) spec.bucketBytes = *opts.bucketBytes;
  const char *where = opts.dataParallel ? "--data-parallel" : "/data_parallel";
  if (spec.replicas < 1 || spec.replicas > ir::kMaxReplicas)
    throw UserError(g.sourceFile, where,
                    "data parallelism needs 1 to " + std::to_string(ir::kMaxReplicas) +
                        " replicas, got " + std::to_string(spec.replicas));
  if (spec.zero != 0 && spec.zero != 1)
    throw UserError(g.sourceFile, "--zero",
                    "ZeRO stage " + std::to_string(spec.zero) + " is not supported (0 or 1)");
  if (spec.zero == 1 && spec.replicas == 1)
    throw UserError(g.sourceFile, "--zero",
                    "--zero=1 shards the optimizer state across data-parallel replicas: it "
                    "needs --data-parallel=R with R > 1");
  if (spec.bucketBytes < 1)
    throw UserError(g.sourceFile, "--bucket-size",
                    "a gradient bucket must hold at least one byte, got " +
                        std::to_string(spec.bucketBytes));
  return spec;
}

/// Whether some group maps to several devices (a tensor-parallel group).
static bool usesDeviceSets(const ir::Graph &g, const PassOptions &opts) {
  for (const auto &[group, devices] : g.groups)
    if (devices.size() > 1 && !opts.groupMap.count(group)) return true;
  for (const auto &[group, device] : opts.groupMap)
    if (device.find(ir::kDeviceSetSeparator) != std::string::npos) return true;
  for (const auto &n : g.nodes())
    if (ir::parseDeviceSet(n->device)) return true;
  return false;
}

std::string defaultPipeline(const ir::Graph &graph, const PassOptions &options) {
  std::string p = "infer-shapes,canonicalize";
  if (options.fuseAttention) p += ",fuse-attention";
  p += ",place";
  for (const auto &n : graph.nodes())
    if (n->isOp(ir::OpKind::BatchNorm)) {
      p += ",batch-norm-stats";
      break;
    }
  ir::DataParallelSpec dp = effectiveDataParallel(graph, options);
  bool dataParallel = dp.replicas > 1;
  if (dataParallel) p += ",data-parallel";
  else if (effectivePipeline(graph, options).microbatches > 1) p += ",microbatch";
  p += ",insert-copies";
  if (!graph.loss.empty()) {
    p += ",autodiff,insert-copies";
    bool recompute = options.recompute && *options.recompute != "none";
    for (const auto &[device, level] : options.recomputeOn) recompute |= level != "none";
    if (recompute) p += ",recompute";
    if (ops::lowTypeOf(effectivePrecision(graph, options))) p += ",autocast";
    p += dataParallel ? ",reduce-gradients,optimize-step" : ",optimize-step";
    if (dataParallel && dp.zero == 1) p += ",shard-optimizer-state";
  }
  else if (ops::lowTypeOf(effectivePrecision(graph, options))) p += ",autocast";
  if (usesDeviceSets(graph, options)) p += ",tensor-parallel";
  // After tensor-parallel, on its members: a split gradient's parts are
  // counted where they are (passes/LossScale.cpp).
  if (!graph.loss.empty() && effectivePrecision(graph, options) == "fp16") p += ",loss-scale";
  return p;
}

} // namespace mpc::passes
