//===- tools/mpc/CommonOptions.cpp - flags shared by opt and compile ----===//
#include "tools/mpc/CommonOptions.h"

#include "ir/Device.h"
#include "ir/JsonReader.h"
#include "support/Error.h"
#include "tools/mpc/NumericFlags.h"

#include <iostream>

namespace mpc::tool {

void CommonOptions::addTo(CLI::App &cmd) {
  cmd.add_option("--passes", passes,
                 "Comma-separated pass pipeline (see `mpc passes`); default for compile: the "
                 "training pipeline (docs/passes.md), for opt: none");
  cmd.add_option("--print-before", printBefore, "Print the IR before these passes")
      ->delimiter(',');
  cmd.add_option("--print-after", printAfter, "Print the IR after these passes")->delimiter(',');
  cmd.add_flag("--print-before-all", printBeforeAll, "Print the IR before every pass");
  cmd.add_flag("--print-after-all", printAfterAll, "Print the IR after every pass");
  cmd.add_flag("--no-verify", noVerify, "Do not run the verifier between passes");
  cmd.add_flag("--time-passes", timePasses, "Print the time each pass and the verifier took");
  cmd.add_flag("--enable-test-passes", enableTestPasses, "Allow the hidden test passes");
  cmd.add_option("--reproducer", reproducer,
                 "On a verifier failure, write the graph before the failing pass here");
  cmd.add_flag("--stats", stats, "Print statistics (placement, copies, memory plan)");
  cmd.add_option("--devices", devices,
                 "Devices to place on, e.g. cpu:0,cpu:1,cpu:2 (default: cpu:0, cpu:1, ... as "
                 "many as the model's groups need)")
      ->delimiter(',');
  cmd.add_option("--map", map,
                 "Group mapping, e.g. stage0=gpu:0,stage1=gpu:1; a group mapped to several "
                 "devices joined by '+' (stage0=cpu:0+cpu:1) runs tensor-parallel over them")
      ->delimiter(',');
  cmd.add_option("--placement", placement, "explicit (annotations + propagation) or auto")
      ->check(CLI::IsMember({"explicit", "auto"}));
  cmd.add_option("--device-memory", deviceMemory,
                 "Per-device memory limit for --placement=auto, e.g. 16GiB");
  cmd.add_option("--optimizer", optimizer, "Override the model's optimizer: sgd, adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd.add_option_function<double>(
         "--lr", [this](double v) { lr = v, lrGiven = true; }, "Override the learning rate")
      ->check(positiveNumber());
  CLI::Validator count = integerIn(1, uint64_t(ir::kMaxMicrobatches), ir::kMaxMicrobatchesReason);
  cmd.add_option_function<std::string>(
         "--microbatches",
         [this](const std::string &m) {
           if (m == "auto") microbatchesAuto = true;
           else microbatches = std::stoll(m);
         },
         "Split each step's batch into M equal micro-batches along axis 0 and pipeline them "
         "over the devices (overrides the model's \"pipeline\"; default 1: no pipelining); "
         "auto: mpc compile compiles each M dividing a replica's rows, up to 64, and takes the "
         "one whose step the cost model predicts shortest")
      ->transform(CLI::Validator(
          [count](std::string &text) { return text == "auto" ? std::string() : count(text); },
          count.get_description() + " or auto"));
  cmd.add_flag("--fuse-attention,!--no-fuse-attention", fuseAttention,
               "Make each matmul -> scale -> causal_mask -> softmax [-> dropout] -> matmul chain "
               "one attention op (the fuse-attention pass; the default): no [T, S] scores in "
               "memory. --no-fuse-attention keeps the chain (docs/passes.md)");
  cmd.add_option("--recompute", recompute,
                 "Activations the backward recomputes instead of keeping them: none (the "
                 "default), selective (elementwise ops, softmax, dropout, layer_norm) or full "
                 "(all but each stage's inputs); the same bits either way (docs/pipelining.md)")
      ->check(CLI::IsMember(std::vector<std::string>{"none", "selective", "full"}));
  cmd.add_option("--precision", precision,
                 "Training precision: fp32 (the default), tf32 (f32 values; GPU matmuls on TF32 "
                 "tensor cores), bf16 or fp16 (matmul and conv in the low type with f32 "
                 "accumulation; reductions, softmax, norms and losses in f32; f32 master "
                 "weights; fp16 with dynamic loss scaling); overrides the model's \"precision\" "
                 "(docs/precision.md)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(ops::kPrecisions),
                                                     std::end(ops::kPrecisions))));
  cmd.add_option("--schedule", schedule,
                 "Pipeline schedule: " + ir::pipelineScheduleList() +
                     "; default 1f1b (overrides the model's \"pipeline\"; docs/pipelining.md)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(ir::kPipelineSchedules),
                                                     std::end(ir::kPipelineSchedules))));
  cmd.add_option_function<int64_t>(
         "--in-flight", [this](int64_t n) { inFlight = n; },
         "zb-h1 and zb-h2: let each stage hold up to N micro-batches open (forward begun, "
         "weight gradient not yet), above the schedule's own bound (p for zb-h1, 2p-1 for "
         "zb-h2), so that later stages may put more weight gradients off to the end: less "
         "idle time for more activation memory (overrides the model's \"pipeline\"; "
         "docs/pipelining.md)")
      ->transform(integerIn(1, uint64_t(ir::kMaxMicrobatches), ir::kMaxMicrobatchesReason));
  cmd.add_option_function<int64_t>(
         "--data-parallel", [this](int64_t r) { dataParallel = r; },
         "Make R replicas of the placed model, replica r on its devices shifted by r times their "
         "number (or the next devices of --devices), each taking 1/R of every input's batch; "
         "gradients are all-reduced before the update (overrides the model's "
         "\"data_parallel\"; default 1; docs/parallelism.md)")
      ->transform(integerIn(1, uint64_t(ir::kMaxReplicas),
                            "a collective's group holds at most that many devices"));
  cmd.add_option_function<int64_t>(
         "--zero", [this](int64_t z) { zero = int(z); },
         "1: shard the optimizer state across the data-parallel replicas (ZeRO stage 1); "
         "default 0")
      ->transform(integerIn(0, 1));
  cmd.add_option("--bucket-size", bucketSize,
                 "Gradients are all-reduced in buckets of up to this size, in the order backward "
                 "produces them, e.g. 25MiB (the default, PyTorch DDP's)");
}

std::vector<OutputTarget> CommonOptions::outputTargets() const {
  if (reproducer.empty()) return {};
  return {{"--reproducer", reproducer}};
}

passes::PassOptions CommonOptions::passOptions() const {
  passes::PassOptions o;
  for (const std::string &d : devices) {
    if (!ir::parseDevice(d))
      throw UserError("", "", "invalid device '" + d + "' in --devices (expected cpu:N or gpu:N)");
    for (const std::string &seen : o.devices)
      if (seen == d) throw UserError("", "", "device '" + d + "' given twice in --devices");
    o.devices.push_back(d);
  }
  for (const std::string &m : map) {
    size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("", "", "invalid --map entry '" + m + "' (expected group=device)");
    std::string group = m.substr(0, eq), dev = m.substr(eq + 1);
    if (!ir::parseDevice(dev) && !ir::parseDeviceSet(dev))
      throw UserError("", "", "invalid device '" + dev + "' in --map entry '" + m +
                                  "' (expected cpu:N or gpu:N, or several distinct devices of "
                                  "one kind joined by '+': cpu:0+cpu:1)");
    if (o.groupMap.count(group))
      throw UserError("", "", "group '" + group + "' mapped twice in --map");
    o.groupMap[group] = dev;
  }
  o.placement = placement;
  if (!deviceMemory.empty()) o.deviceMemory = parseByteSize(deviceMemory, "--device-memory");
  if (!optimizer.empty()) o.optimizer = optimizer;
  // --lr and --microbatches: their validators (NumericFlags.h) took only
  // values in range.
  if (lrGiven) o.lr = lr;
  o.microbatches = microbatches;
  if (!schedule.empty()) o.schedule = schedule;
  o.inFlight = inFlight;
  if (!recompute.empty()) o.recompute = recompute;
  o.fuseAttention = fuseAttention;
  if (!precision.empty()) o.precision = precision;
  o.dataParallel = dataParallel;
  o.zero = zero;
  if (!bucketSize.empty()) {
    int64_t bytes = parseByteSize(bucketSize, "--bucket-size");
    if (bytes < 1)
      throw UserError("", "--bucket-size",
                      "a gradient bucket must hold at least one byte, got '" + bucketSize + "'");
    o.bucketBytes = bytes;
  }
  o.stats = stats;
  return o;
}

passes::Instrumentation CommonOptions::instrumentation() const {
  passes::Instrumentation in;
  in.printBefore.insert(printBefore.begin(), printBefore.end());
  in.printAfter.insert(printAfter.begin(), printAfter.end());
  in.printBeforeAll = printBeforeAll;
  in.printAfterAll = printAfterAll;
  in.verify = !noVerify;
  in.timePasses = timePasses;
  in.reproducer = reproducer;
  return in;
}

compiler::CompileOptions CommonOptions::compileOptions(compiler::DefaultPipeline fallback) const {
  compiler::CompileOptions o;
  o.passes = passOptions();
  o.instrumentation = instrumentation();
  o.pipeline = passes;
  o.fallback = fallback;
  o.enableTestPasses = enableTestPasses;
  o.log = &std::cerr;
  return o;
}

std::unique_ptr<ir::Graph> runPasses(const std::string &modelPath,
                                     const compiler::CompileOptions &options) {
  std::unique_ptr<ir::Graph> graph = ir::readModelFile(modelPath);
  std::vector<passes::PassStatistic> statistics = compiler::runPasses(*graph, options);
  if (options.passes.stats) compiler::printPassStatistics(statistics, std::cerr);
  return graph;
}

} // namespace mpc::tool
