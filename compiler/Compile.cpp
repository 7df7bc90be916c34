//===- compiler/Compile.cpp - model to training graph to plan -----------===//
#include "compiler/Compile.h"

#include "codegen/Lower.h"

#include "ir/JsonReader.h"
#include "ir/ModelChecksum.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <optional>

#include <sstream>

namespace mpc::compiler {

std::vector<passes::PassStatistic> runPasses(ir::Graph &graph, const CompileOptions &options) {
  std::ostringstream discarded;
  std::ostream &log = options.log ? *options.log : discarded;
  passes::PassContext ctx;
  ctx.options = options.passes;
  ctx.log = &log;
  passes::Instrumentation instrumentation = options.instrumentation;
  if (!instrumentation.dump) instrumentation.dump = &log;
  // Before any pass changes the layout: plans of one model in other layouts
  // share it, and resume each other's checkpoints.
  if (!graph.modelChecksum) graph.modelChecksum = ir::modelChecksum(graph, options.lower.seed);
  // What the plan records (tf32 has no pass; bf16 and fp16 run autocast).
  graph.precision = passes::effectivePrecision(graph, ctx.options);
  passes::PassManager pm(ctx, std::move(instrumentation));
  std::string pipeline = options.pipeline;
  if (pipeline.empty() && options.fallback == DefaultPipeline::Training)
    pipeline = passes::defaultPipeline(graph, ctx.options);
  pm.addPipeline(pipeline, options.enableTestPasses);
  pm.run(graph);
  return std::move(ctx.statistics);
}

plan::Plan lower(const ir::Graph &graph, const CompileOptions &options) {
  return codegen::lowerToPlan(graph, options.lower);
}

std::unique_ptr<ir::Graph> compileGraph(const std::string &json, const CompileOptions &options,
                                        const std::string &file) {
  std::unique_ptr<ir::Graph> graph = ir::readModelJson(json, file);
  runPasses(*graph, options);
  return graph;
}

plan::Plan compileModel(const std::string &json, const CompileOptions &options,
                        const std::string &file) {
  return lower(*compileGraph(json, options, file), options);
}

std::unique_ptr<ir::Graph> compileGraph(const std::string &json, passes::PassOptions options) {
  CompileOptions o;
  o.passes = std::move(options);
  return compileGraph(json, o);
}

plan::Plan compileModel(const std::string &json, passes::PassOptions options, uint64_t seed) {
  CompileOptions o;
  o.passes = std::move(options);
  o.lower.seed = seed;
  return compileModel(json, o);
}

Compiled compileWithinActivationBudget(const ir::Graph &model, CompileOptions &options,
                                       uint64_t budget) {
  const std::vector<std::string> levels = {"none", "selective", "full"};
  auto rank = [&](const std::string &level) {
    return size_t(std::find(levels.begin(), levels.end(), level) - levels.begin());
  };
  const std::string base = options.passes.recompute.value_or("none");
  for (;;) {
    Compiled c;
    c.graph = model.clone();
    c.statistics = runPasses(*c.graph, options);
    c.plan = lower(*c.graph, options);
    bool raised = false;
    for (const plan::DeviceProgram &d : c.plan.devices) {
      if (d.arenaBytes <= budget) continue;
      auto at = options.passes.recomputeOn.find(d.device);
      size_t now = rank(at == options.passes.recomputeOn.end() ? base : at->second);
      if (now + 1 >= levels.size())
        throw UserError(model.sourceFile, "--activation-budget",
                        "device " + d.device + " needs " + byteSizeText(d.arenaBytes) +
                            " of arena even with full recomputation, over the budget of " +
                            byteSizeText(budget) +
                            " (the 1f1b schedule, more micro-batches or more devices hold less)");
      options.passes.recomputeOn[d.device] = levels[now + 1];
      raised = true;
    }
    if (!raised) return c;
  }
}

MicrobatchChoice chooseMicrobatches(const ir::Graph &model, const CompileOptions &options) {
  int64_t rows = 0;
  for (const auto &n : model.nodes())
    if (n->kind == ir::NodeKind::Input && !n->type.shape.empty()) {
      rows = n->type.shape[0];
      break;
    }
  if (rows < 1)
    throw UserError(model.sourceFile, "--microbatches",
                    "auto needs a model input with a batch axis to split");
  const int64_t replicas = passes::effectiveDataParallel(model, options.passes).replicas;
  const int64_t perReplica = rows / std::max<int64_t>(replicas, 1);
  CompileOptions quiet = options;
  quiet.log = nullptr;
  quiet.passes.stats = false;
  quiet.instrumentation = {};
  MicrobatchChoice choice;
  std::optional<UserError> firstError;
  double bestSeconds = 0;
  for (int64_t m = 1; m <= std::min<int64_t>({64, perReplica, ir::kMaxMicrobatches}); ++m) {
    if (perReplica % m != 0) continue;
    quiet.passes.microbatches = m;
    try {
      std::unique_ptr<ir::Graph> g = model.clone();
      runPasses(*g, quiet);
      plan::Plan p = lower(*g, quiet);
      // The step as `mpc run` runs it: overlapped with the next.
      double seconds = codegen::predictPipelineCost(p).overlappedStep;
      choice.predicted.emplace_back(m, seconds);
      if (choice.predicted.size() == 1 || seconds < bestSeconds) {
        choice.best = m;
        bestSeconds = seconds;
      }
    } catch (const UserError &e) {
      if (!firstError) firstError = e;
    }
  }
  if (choice.predicted.empty()) {
    if (firstError) throw *firstError;
    throw UserError(model.sourceFile, "--microbatches", "auto found no micro-batch count to try");
  }
  return choice;
}

void printPassStatistics(const std::vector<passes::PassStatistic> &statistics, std::ostream &os) {
  for (const passes::PassStatistic &s : statistics)
    os << s.pass << ": " << s.name << " = " << s.value << "\n";
}

void printCompileStatistics(const ir::Graph &model, const plan::Plan &plan,
                            const CompileOptions &options, const std::string &budgetText,
                            std::ostream &os) {
  codegen::printPlanStats(plan, os);
  codegen::printPipelineStats(plan, os);
  codegen::printCollectiveOverlap(plan, os);
  bool recomputes = options.passes.recompute && *options.passes.recompute != "none";
  for (const auto &[device, level] : options.passes.recomputeOn) {
    os << "recompute: device " << device << ": " << level << " (to fit --activation-budget "
       << budgetText << ")\n";
    recomputes |= level != "none";
  }
  if (!recomputes) return;
  // The same model and options without recomputation, quietly.
  CompileOptions plain = options;
  plain.passes.recompute.reset();
  plain.passes.recomputeOn.clear();
  plain.passes.stats = false;
  plain.instrumentation = {};
  plain.log = nullptr;
  std::unique_ptr<ir::Graph> g = model.clone();
  runPasses(*g, plain);
  codegen::printRecomputeStats(plan, lower(*g, plain), os);
}

} // namespace mpc::compiler
