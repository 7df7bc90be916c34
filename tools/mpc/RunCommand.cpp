//===- tools/mpc/RunCommand.cpp - `mpc run`: train or infer with a plan -===//
//
//   mpc run PLAN.bin --input x=x.npy --input y=y.npy [--epochs N | --steps N]
//           [--shuffle] [--seed S] [--init FILE | --resume FILE [--force]]
//           [--save out.safetensors [--save-every K | --save-params-only]]
//           [--output z2=pred.npy] [--log-every K] [--print-params]
//
// Parses and checks the flags, loads the plan (CPU or CUDA runtime), the
// NPY datasets and the start position (a fresh run, --init weights, or a
// --resume checkpoint), then hands over to the step loop (RunLoop.cpp) and
// writes the outputs and the final checkpoint. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/io/Checkpoint.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/PlanIO.h"
#include "support/Error.h"
#include "support/StringUtil.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/NumericFlags.h"
#include "tools/mpc/RunInputs.h"
#include "tools/mpc/RunLoop.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>

#ifdef MPC_HAVE_CUDA
#include "runtime/cuda/CudaBackend.h"
#endif

namespace mpc::tool {

namespace {

namespace io = runtime::io;

struct RunArgs {
  std::string plan;
  std::vector<std::string> inputs, outputs;
  int64_t epochs = 0, steps = 0;
  bool shuffle = false, printParams = false;
  uint64_t seed = 0;
  bool seedGiven = false, shuffleGiven = false;
  std::string init, save, resume;
  bool saveParamsOnly = false, force = false;
  int64_t saveEvery = 0;
  int64_t logEvery = 100;
  std::string backend = "auto"; ///< auto, cpu, cuda
  std::string deviceMap, transport;
  bool allowTf32 = false;
};

/// The executor for `p` on the backend chosen by --backend: the CUDA runtime
/// for plans with gpu:N devices in a CUDA build (auto), else the CPU runtime.
std::unique_ptr<runtime::Executor> makeExecutor(plan::Plan p, const RunArgs &args) {
  bool gpu = plan::usesGpu(p);
#ifdef MPC_HAVE_CUDA
  if (args.backend == "cuda" || (args.backend == "auto" && gpu)) {
    runtime::cuda::CudaOptions opts =
        runtime::cuda::parseCudaOptions(args.deviceMap, args.transport, args.allowTf32);
    runtime::cuda::CudaRun run;
    try {
      run = runtime::cuda::prepareCudaRun(p, opts);
    } catch (const UserError &e) {
      // Name the plan the CUDA runtime refused.
      if (!e.file().empty()) throw;
      throw UserError(args.plan, e.where(), e.message());
    }
    return std::make_unique<runtime::Executor>(std::move(p), std::move(run.factory),
                                               std::move(run.transport));
  }
#else
  if (args.backend == "cuda")
    throw UserError("", "--backend", "this mpc was built without the CUDA runtime");
  if (!args.deviceMap.empty() || !args.transport.empty() || args.allowTf32)
    throw UserError("", "--device-map/--transport/--allow-tf32",
                    "this mpc was built without the CUDA runtime");
  if (gpu)
    std::cerr << "mpc run: note: this mpc has no CUDA runtime; the plan's gpu devices run on "
                 "the CPU runtime\n";
#endif
  return std::make_unique<runtime::Executor>(std::move(p));
}

/// Steps to reach: --steps N, or --epochs N (default 1) times the batches
/// of an epoch.
int64_t totalSteps(const RunArgs &args, int64_t batchesPerEpoch) {
  if (args.steps > 0) return args.steps;
  int64_t epochs = args.epochs > 0 ? args.epochs : 1;
  if (epochs > INT64_MAX / batchesPerEpoch)
    throw UserError("", "--epochs", std::to_string(epochs) + " epochs of " +
                                        std::to_string(batchesPerEpoch) +
                                        " steps overflow the step counter");
  return epochs * batchesPerEpoch;
}

void checkFlagCombinations(const RunArgs &args) {
  if (args.saveEvery > 0 && args.save.empty())
    throw UserError("", "--save-every", "needs --save FILE (the checkpoint it rewrites)");
  if (args.saveEvery > 0 && args.saveParamsOnly)
    throw UserError("", "--save-every", "writes checkpoints to resume from; it cannot be combined "
                                        "with --save-params-only");
  if (args.saveParamsOnly && args.save.empty())
    throw UserError("", "--save-params-only", "needs --save FILE");
  if (args.force && args.resume.empty())
    throw UserError("", "--force", "only applies to --resume");
}

/// --resume: the checkpoint's data order must be this run's, and the flags
/// may not contradict it (an explicit --seed or --shuffle that differs).
void checkResumeData(const RunArgs &args, const io::Checkpoint &ckpt,
                     const io::TrainingPosition &now) {
  const io::TrainingPosition &was = ckpt.info.position;
  if (was.datasetRows != now.datasetRows || was.batchesPerEpoch != now.batchesPerEpoch)
    throw UserError(ckpt.file, "", "checkpoint was written for a dataset of " +
                                       std::to_string(was.datasetRows) + " rows (" +
                                       std::to_string(was.batchesPerEpoch) +
                                       " steps per epoch); this run has " +
                                       std::to_string(now.datasetRows) + " rows (" +
                                       std::to_string(now.batchesPerEpoch) +
                                       "); resume with the same data, or use --init to start a "
                                       "new run from its weights");
  if (args.shuffleGiven && !was.shuffle)
    throw UserError(ckpt.file, "", "checkpoint was written by a run without --shuffle; resume "
                                   "without --shuffle to keep its data order");
  if (args.seedGiven && args.seed != was.shuffleSeed)
    throw UserError(ckpt.file, "", "checkpoint was written with --seed " +
                                       std::to_string(was.shuffleSeed) + ", not " +
                                       std::to_string(args.seed) +
                                       "; leave --seed out to keep its data order");
}

void warn(const std::string &line) { std::cerr << escapeForMessage(line) << "\n"; }

void run(const RunArgs &args) {
  checkFlagCombinations(args);
  uint64_t checksum = 0;
  plan::Plan p = plan::readPlanFile(args.plan, &checksum);

  int64_t rows = -1;
  std::vector<Dataset> data = loadInputs(p, args.inputs, rows);
  int64_t batch = 0;
  for (const Dataset &d : data)
    if (d.batch) batch = d.batch;
  int64_t batchesPerEpoch = 1;
  if (batch > 0) {
    if (rows < batch)
      throw UserError(data.front().file, "",
                      "dataset of " + std::to_string(rows) + " rows is smaller than the batch of " +
                          std::to_string(batch));
    batchesPerEpoch = rows / batch; // a remainder smaller than a batch is dropped
    if (rows % batch)
      std::cerr << "mpc run: note: dataset of " << rows << " rows is not a multiple of the batch "
                << batch << "; the last " << rows % batch << " rows of each epoch are dropped\n";
  }
  for (const Dataset &d : data)
    if (d.batch && d.batch != batch)
      throw UserError(args.plan, "input '" + d.ref->name + "'",
                      "inputs have different batch sizes (" + std::to_string(d.batch) + " and " +
                          std::to_string(batch) + ")");
  int64_t total = totalSteps(args, batchesPerEpoch);

  std::vector<Collected> outputs;
  for (const std::string &spec : args.outputs) {
    auto [name, file] = splitSpec(spec, "--output");
    const plan::TensorRef *ref = nullptr;
    for (const plan::TensorRef &t : p.outputs)
      if (t.name == name) ref = &t;
    if (!ref)
      throw UserError("", "--output", "the plan has no output '" + name +
                                          "' (outputs: " + namesOf(p.outputs) + ")");
    outputs.push_back({ref, file, {}});
  }

  LoopSettings loop;
  loop.planFile = args.plan;
  loop.totalSteps = total;
  loop.logEvery = args.logEvery;
  loop.saveEvery = args.saveEvery;
  loop.checkpoint = args.save;
  io::CheckpointInfo &info = loop.info;
  info.planChecksum = checksum;
  info.model = p.model;
  info.optimizer = io::describeOptimizer(p);
  info.version = MPC_VERSION;
  for (const plan::TensorRef &s : p.states) info.states.push_back(s.name);
  info.position.batchesPerEpoch = batchesPerEpoch;
  info.position.datasetRows = rows;
  info.position.shuffle = args.shuffle;
  info.position.shuffleSeed = args.seed;

  // Read the checkpoint before the runtime starts, so a bad file fails fast.
  std::optional<io::Checkpoint> ckpt;
  if (!args.resume.empty()) {
    ckpt = io::readCheckpoint(args.resume);
    if (ckpt->resumable) checkResumeData(args, *ckpt, info.position);
  }

  std::unique_ptr<runtime::Executor> executor = makeExecutor(std::move(p), args);
  runtime::Executor &ex = *executor;
  // Dataset refs pointed into the moved-from plan: rebind by name.
  for (Dataset &d : data) d.ref = ex.findInput(d.ref->name);
  for (Collected &c : outputs) c.ref = ex.findOutput(c.ref->name);
  if (!args.init.empty())
    for (const std::string &w : loadInit(ex, args.init)) warn(w);
  if (ckpt) {
    for (const std::string &w : io::restoreCheckpoint(ex, *ckpt, checksum, args.force).warnings)
      warn(w);
    info.position.shuffle = ckpt->info.position.shuffle;
    info.position.shuffleSeed = ckpt->info.position.shuffleSeed;
    setStep(info.position, ckpt->info.position.step);
    if (info.position.step >= total)
      warn("mpc run: note: " + args.resume + " is at step " + std::to_string(info.position.step) +
           ", at or past the " + std::to_string(total) + " steps asked for; no step runs");
  }
  int64_t firstStep = info.position.step;
  runSteps(ex, data, outputs, loop);

  int64_t ran = std::max<int64_t>(total - firstStep, 0);
  for (const Collected &c : outputs) {
    std::vector<int64_t> shape = c.ref->shape;
    if (shape.empty()) shape = {ran};
    else shape[0] *= ran;
    io::writeNpy(c.file, c.ref->dtype, shape, c.bytes.data());
  }
  if (!args.save.empty()) {
    if (args.saveParamsOnly) io::writeParamsOnly(args.save, ex);
    else io::writeCheckpoint(args.save, ex, info);
  }
  if (args.printParams) printParams(ex, std::cout);
}

} // namespace

void addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = app.add_subcommand(
      "run", "Train with a plan (or run inference with a plan that has no loss): on the CPU "
             "runtime, one worker thread per device, or on the CUDA runtime for gpu plans");
  cmd->add_option("plan", args->plan, "Plan file (from mpc compile)")->required();
  cmd->add_option("--input", args->inputs,
                  "NAME=FILE.npy: a dataset for plan input NAME (float32 or int32, C order; "
                  "the first axis is the dataset, batches in file order). Repeatable");
  auto *epochs = cmd->add_option("--epochs", args->epochs,
                                 "Passes over the dataset to reach (default 1), counted from "
                                 "the start of training (a --resume run continues to it); the "
                                 "remainder of a dataset smaller than a batch is dropped")
                     ->check(positiveInteger());
  auto *steps = cmd->add_option("--steps", args->steps,
                                "Steps (batches) to reach, counted from the start of training "
                                "(a --resume run continues to it)")
                    ->check(positiveInteger());
  epochs->excludes(steps);
  auto *shuffle = cmd->add_flag("--shuffle", args->shuffle,
                                "Shuffle the rows every epoch (seeded by --seed); --resume "
                                "takes it from the checkpoint");
  auto *seed = cmd->add_option("--seed", args->seed,
                               "Seed for --shuffle (default 0); --resume takes it from the "
                               "checkpoint")
                   ->check(unsignedInteger());
  auto *init = cmd->add_option("--init", args->init,
                               "Start a new run (step 1) from a safetensors file's parameters, "
                               "and the optimizer state it holds (a warning names state it "
                               "lacks)");
  auto *resume = cmd->add_option(
      "--resume", args->resume,
      "Continue the run a checkpoint (--save) recorded: parameters, optimizer state, step, "
      "epoch, data order and position; the result equals an uninterrupted run's, byte for "
      "byte. A checkpoint of another plan is an error");
  init->excludes(resume);
  cmd->add_flag("--force", args->force,
                "With --resume: accept a checkpoint whose parameters match the plan but whose "
                "optimizer differs (kind, hyper-parameters or state tensors); matching state "
                "is loaded, the rest starts from the plan's initial values");
  cmd->add_option("--save", args->save,
                  "Write a checkpoint at the end (atomically): parameters, optimizer state and "
                  "the training position, for --resume; a failed run leaves the previous file");
  cmd->add_option("--save-every", args->saveEvery,
                  "Also write the --save checkpoint every K steps (atomically, replacing it)")
      ->check(positiveInteger());
  cmd->add_flag("--save-params-only", args->saveParamsOnly,
                "Make --save write the parameters only (for export; not resumable)");
  cmd->add_option("--output", args->outputs,
                  "NAME=FILE.npy: write plan output NAME, concatenated over all steps. "
                  "Repeatable");
  cmd->add_option("--log-every", args->logEvery,
                  "Print 'step N loss L' every K steps and at the last step (default 100)")
      ->check(positiveInteger());
  cmd->add_flag("--print-params", args->printParams,
                "Print each parameter after the run (name, type, up to 16 values)");
  cmd->add_option("--backend", args->backend,
                  "Runtime: auto (default: CUDA for plans with gpu:N devices when built with "
                  "CUDA, else CPU), cpu, or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--device-map", args->deviceMap,
                  "CUDA: logical to physical GPUs, e.g. gpu:0=0,gpu:1=0,gpu:2=0 (default gpu:N "
                  "on GPU N)");
  cmd->add_option("--transport", args->transport,
                  "CUDA: how data moves between GPUs: peer (default) or nccl");
  cmd->add_flag("--allow-tf32", args->allowTf32,
                "CUDA: let cuBLAS use TF32 tensor cores for matmul (faster, ~1e-3 error)");
  cmd->callback([args, shuffle, seed] {
    args->shuffleGiven = shuffle->count() > 0;
    args->seedGiven = seed->count() > 0;
    run(*args);
  });
}

} // namespace mpc::tool
