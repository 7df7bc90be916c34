//===- passes/DataParallel.cpp - R replicas of the placed model ---------===//
//
// Data parallelism changes where work runs, never what it computes.
//
// Invariant established: with R > 1 replicas (--data-parallel=R or the
// model's "data_parallel"), the placed forward graph exists R times, replica
// r on its own devices, taking rows [r·N/R, (r+1)·N/R) of every input's
// batch (each replica's share split again into the pipeline's micro-batches
// when M > 1): passes/BatchSplit.cpp. The step's loss is the full-batch loss
// (the parts' losses summed in order and, for a mean, scaled by 1/(R·M)), so
// the loss scale is applied once. After autodiff, reduce-gradients
// all-reduces each parameter's gradient across the replicas.
//
// Replica r's devices (the model's D devices, in their order):
//   * with --devices listing at least R·D devices: the model's devices are
//     among the first D, and the device at position i there is devices[r·D + i]
//     in replica r;
//   * otherwise each device's index shifted by r·D (cpu:1 -> cpu:4 for r = 1,
//     D = 3); a shifted device that the model uses already is an error.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchSplit.h"
#include "passes/Pass.h"

#include "ir/Device.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <set>

namespace mpc::passes {

namespace {

/// Replica r's device for each device of the model, r = 1..R-1.
std::vector<std::map<std::string, std::string>>
replicaDevices(const ir::Graph &g, const PassOptions &opts, int64_t replicas) {
  std::set<ir::Device> used;
  std::map<ir::Device, std::vector<std::string>> spellings; // as nodes write them
  std::set<std::string> deviceSets; // tensor-parallel groups
  for (const auto &n : g.nodes()) {
    if (auto set = ir::parseDeviceSet(n->device)) {
      used.insert(set->begin(), set->end());
      deviceSets.insert(n->device);
      continue;
    }
    std::optional<ir::Device> d = ir::parseDevice(n->device);
    MPC_ASSERT(d, "data-parallel runs on a placed graph");
    used.insert(*d);
    auto &names = spellings[*d];
    if (std::find(names.begin(), names.end(), n->device) == names.end()) names.push_back(n->device);
  }
  for (const std::string &s : deviceSets) {
    std::vector<ir::Device> members = *ir::parseDeviceSet(s);
    for (const ir::Device &m : members) spellings[m]; // its members' own
  }
  // A device set's replica: each member's replica, joined.
  auto addSets = [&](std::vector<std::map<std::string, std::string>> &out) {
    for (auto &replica : out)
      for (const std::string &s : deviceSets) {
        std::vector<std::string> members;
        std::vector<ir::Device> set = *ir::parseDeviceSet(s);
        for (const ir::Device &m : set) members.push_back(replica.at(m.str()));
        replica[s] = joinText(members, "+");
      }
  };
  std::vector<ir::Device> model(used.begin(), used.end());
  const size_t d = model.size();
  std::vector<std::map<std::string, std::string>> out(size_t(replicas - 1));
  auto name = [](const std::string &s) { return ir::parseDevice(s)->str(); };
  if (!opts.devices.empty()) {
    if (opts.devices.size() < size_t(replicas) * d)
      throw UserError(g.sourceFile, "--devices",
                      std::to_string(replicas) + " data-parallel replicas of a model on " +
                          std::to_string(d) + " device" + (d == 1 ? "" : "s") + " need " +
                          std::to_string(size_t(replicas) * d) + " devices, but --devices lists " +
                          std::to_string(opts.devices.size()) + " (" + joinText(opts.devices) + ")");
    std::vector<std::string> first;
    for (size_t i = 0; i < d; ++i) first.push_back(name(opts.devices[i]));
    for (const ir::Device &m : model) {
      auto at = std::find(first.begin(), first.end(), m.str());
      if (at == first.end())
        throw UserError(g.sourceFile, "--devices",
                        "the model uses " + m.str() + ", which is not among the first " +
                            std::to_string(d) + " of --devices (" + joinText(first) +
                            "): replica 0 takes those, replica r the next " + std::to_string(d) +
                            " after r·" + std::to_string(d));
      size_t i = size_t(at - first.begin());
      for (int64_t r = 1; r < replicas; ++r) {
        out[size_t(r - 1)][m.str()] = name(opts.devices[size_t(r) * d + i]);
        for (const std::string &s : spellings[m])
          out[size_t(r - 1)][s] = name(opts.devices[size_t(r) * d + i]);
      }
    }
    addSets(out);
    return out;
  }
  for (const ir::Device &m : model)
    for (int64_t r = 1; r < replicas; ++r) {
      ir::Device shifted = m;
      shifted.index = m.index + int(r * int64_t(d));
      if (shifted.index >= 1024)
        throw UserError(g.sourceFile, "--data-parallel",
                        "replica " + std::to_string(r) + " of " + m.str() +
                            " would be device index " + std::to_string(shifted.index) +
                            ", beyond 1023");
      if (used.count(shifted))
        throw UserError(g.sourceFile, "--data-parallel",
                        "replica " + std::to_string(r) + " of " + m.str() + " would be " +
                            shifted.str() + ", which the model uses already (replica r's " +
                            "devices are the model's " + std::to_string(d) +
                            " shifted by r·" + std::to_string(d) +
                            "); list the devices of every replica with --devices");
      out[size_t(r - 1)][m.str()] = shifted.str();
      for (const std::string &s : spellings[m]) out[size_t(r - 1)][s] = shifted.str();
    }
  addSets(out);
  return out;
}

class DataParallelPass : public Pass {
public:
  bool run(ir::Graph &g, PassContext &ctx) override {
    ir::DataParallelSpec spec = effectiveDataParallel(g, ctx.options);
    bool changed = g.dataParallel != spec;
    g.dataParallel = spec;
    if (spec.replicas <= 1) return changed;
    if (g.has(ir::kDifferentiated))
      throw UserError(g.sourceFile, "--data-parallel",
                      "data-parallel must run before autodiff: the graph already has gradients");
    if (!g.has(ir::kPlaced))
      throw UserError(g.sourceFile, "--data-parallel",
                      "data-parallel needs a placed graph: run 'place' first");
    if (isBatchSplit(g)) return changed;
    // Each replica would update batch_norm's running statistics from its own
    // rows, and the replicas' copies, mirrors of one tensor, would drift
    // apart.
    bool updatesStatistics = false;
    for (const auto &n : g.nodes()) updatesStatistics |= n->isOp(ir::OpKind::BatchNormUpdate);
    for (const auto &n : g.nodes())
      if (updatesStatistics && n->isOp(ir::OpKind::BatchNorm))
        throw UserError(g.sourceFile, n->where(),
                        n->describe() + " updates its running statistics in training, which "
                                        "data-parallel replicas cannot share yet (each would "
                                        "update them from its own rows); train without "
                                        "--data-parallel, or with the statistics fixed "
                                        "(use_global_stats)");
    ir::PipelineSpec pipe = effectivePipeline(g, ctx.options);
    g.pipeline = pipe;
    BatchSplit split;
    split.replicas = spec.replicas;
    split.microbatches = pipe.microbatches;
    split.devices = replicaDevices(g, ctx.options, spec.replicas);
    split.where = ctx.options.dataParallel ? "--data-parallel" : "/data_parallel";
    splitBatch(g, split);
    ctx.count("data-parallel", "replicas", spec.replicas);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createDataParallelPass() { return std::make_unique<DataParallelPass>(); }

} // namespace mpc::passes
