//===- tools/mpc/RunCommand.cpp - `mpc run`: train or infer with a plan -===//
//
//   [mpirun -np R] mpc run PLAN.bin --input x=x.npy --input y=y.npy
//           [--allow-nonfinite] [--epochs N | --steps N] [--shuffle] [--seed S]
//           [--init FILE | --resume FILE [--force]]
//           [--save out.safetensors [--save-every K | --save-params-only]]
//           [--output z2=pred.npy] [--log-every K] [--print-params]
//           [--rank-map cpu:0=0,cpu:1=1]
//
// Parses the flags into the trainer's options (runtime/train/Trainer.h),
// joins the job (one process, or the ranks mpirun started), chooses the
// backend and hands over. See docs/runtime.md and docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#include "plan/Plan.h"
#include "runtime/Executor.h"
#include "runtime/job/FailFast.h"
#include "runtime/mpi/MpiJob.h"
#include "runtime/train/Trainer.h"
#include "support/Error.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/NumericFlags.h"

#include <iostream>
#include <memory>
#include <unistd.h>

#ifdef MPC_HAVE_CUDA
#include "runtime/cuda/Plugin.h"
#endif

namespace mpc::tool {

namespace {

namespace train = runtime::train;

struct RunArgs {
  train::TrainOptions train;
  std::string backend = "auto"; ///< auto, cpu, cuda
  std::string deviceMap, transport;
  bool allowTf32 = false;
};

/// The executor on the backend chosen by --backend: the CUDA runtime for
/// plans with gpu:N devices in a CUDA build (auto), else the CPU runtime.
/// The CUDA runtime is a module, loaded on first use (runtime/cuda/Plugin.h).
train::ExecutorMaker executorMaker(const RunArgs &args) {
  return [&args](plan::Plan p, const train::Placement &placement,
                 runtime::job::ProcessGroup &group) -> std::unique_ptr<runtime::Executor> {
    bool gpu = plan::usesGpu(p);
#ifdef MPC_HAVE_CUDA
    if (args.backend == "cuda" || (args.backend == "auto" && gpu)) {
      // Loaded here, not at start: a CPU run never maps the CUDA libraries.
      const runtime::cuda::PluginApi &cuda = runtime::cuda::loadCudaPlugin();
      runtime::cuda::CudaRun run;
      try {
        run = cuda.prepareRun(p, args.deviceMap, args.transport, args.allowTf32,
                              placement.rankOf, group);
      } catch (const UserError &e) {
        // Name the plan the CUDA runtime refused (flag errors name the flag).
        if (!e.file().empty() || e.where().rfind("--", 0) == 0) throw;
        throw UserError(args.train.planFile, e.where(), e.message());
      }
      if (!run.note.empty() && group.rank() == 0)
        std::cerr << "mpc run: note: " << run.note << "\n";
      return std::make_unique<runtime::Executor>(std::move(p), std::move(run.factory),
                                                 std::move(run.transport), placement.hosted,
                                                 args.train.threads);
    }
#else
    if (args.backend == "cuda")
      throw UserError("", "--backend", "this mpc was built without the CUDA runtime");
    if (!args.deviceMap.empty() || !args.transport.empty() || args.allowTf32)
      throw UserError("", "--device-map/--transport/--allow-tf32",
                      "this mpc was built without the CUDA runtime");
    if (gpu && group.rank() == 0)
      std::cerr << "mpc run: note: this mpc has no CUDA runtime; the plan's gpu devices run on "
                   "the CPU runtime\n";
#endif
    return train::makeCpuExecutor(std::move(p), placement, group, args.train.threads);
  };
}

void run(RunArgs &args) {
  std::unique_ptr<runtime::job::ProcessGroup> group = runtime::mpi::joinJob();
  args.train.progress = isatty(STDERR_FILENO) != 0;
  args.train.agreeAlso = {{"--backend", args.backend},
                          {"--device-map", args.deviceMap},
                          {"--transport", args.transport},
                          {"--allow-tf32", args.allowTf32 ? "on" : "off"}};
  train::Trainer trainer(args.train, *group, executorMaker(args), std::cout, std::cerr);
  runtime::job::runOrEndJob(
      *group, "mpc run", [&] { trainer.run(); }, [&] { return trainer.whoAmI(); });
}

} // namespace

void addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = app.add_subcommand(
      "run", "Train with a plan (or run inference with a plan that has no loss): on the CPU "
             "runtime (devices on up to one thread each, see --threads), or on the CUDA "
             "runtime for gpu plans");
  cmd->add_option("plan", args->train.planFile, "Plan file (from mpc compile)")->required();
  cmd->add_option("--input", args->train.inputs,
                  "NAME=FILE.npy: a dataset for plan input NAME (float32 or int32, C order; "
                  "the first axis is the dataset, batches in file order). Repeatable");
  cmd->add_flag("--allow-nonfinite", args->train.allowNonfinite,
                "Take --input datasets holding NaN or infinities as they are (by default the "
                "first such value is an error naming the file and its flat index)");
  auto *epochs = cmd->add_option("--epochs", args->train.epochs,
                                 "Passes over the dataset to reach (default 1), counted from "
                                 "the start of training (a --resume run continues to it); the "
                                 "remainder of a dataset smaller than a batch is dropped")
                     ->check(positiveInteger());
  auto *steps = cmd->add_option("--steps", args->train.steps,
                                "Steps (batches) to reach, counted from the start of training "
                                "(a --resume run continues to it)")
                    ->check(positiveInteger());
  epochs->excludes(steps);
  auto *shuffle = cmd->add_flag("--shuffle", args->train.shuffle,
                                "Shuffle the rows every epoch (seeded by --seed); --resume "
                                "takes it from the checkpoint");
  auto *seed = cmd->add_option("--seed", args->train.seed,
                               "Seed for --shuffle (default 0); --resume takes it from the "
                               "checkpoint")
                   ->check(unsignedInteger());
  auto *init = cmd->add_option("--init", args->train.init,
                               "Start a new run (step 1) from a safetensors file's parameters, "
                               "and the optimizer state it holds (a warning names state it "
                               "lacks)");
  auto *resume = cmd->add_option(
      "--resume", args->train.resume,
      "Continue the run a checkpoint (--save) recorded: parameters, optimizer state, step, "
      "epoch, data order and position; the result equals an uninterrupted run's, byte for "
      "byte. A checkpoint of another plan is an error");
  init->excludes(resume);
  cmd->add_flag("--force", args->train.force,
                "With --resume: accept a checkpoint whose parameters match the plan but whose "
                "optimizer differs (kind, hyper-parameters or state tensors); matching state "
                "is loaded, the rest starts from the plan's initial values");
  cmd->add_option("--save", args->train.save,
                  "Write a checkpoint at the end (atomically): parameters, optimizer state and "
                  "the training position, for --resume; a failed run leaves the previous file");
  cmd->add_option("--save-every", args->train.saveEvery,
                  "Also write the --save checkpoint every K steps (atomically, replacing it)")
      ->check(positiveInteger());
  cmd->add_flag("--save-params-only", args->train.saveParamsOnly,
                "Make --save write the parameters only (for export; not resumable)");
  cmd->add_option("--output", args->train.outputs,
                  "NAME=FILE.npy: write plan output NAME, concatenated over all steps. "
                  "Repeatable");
  cmd->add_option("--log-every", args->train.logEvery,
                  "Print 'step N loss L' every K steps and at the last step (default 100)")
      ->check(positiveInteger());
  cmd->add_flag("--print-params", args->train.printParams,
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
  cmd->add_option("--threads", args->train.threads,
                  "CPU runtime: threads that run this process's devices (default: one per "
                  "device, at most the cores this process may use, and one for a plan that "
                  "does little work per message); with fewer threads than devices, "
                  "neighbouring devices share a thread and take turns at each receive. The "
                  "results are the same bit for bit")
      ->check(positiveInteger());
  cmd->add_option("--rank-map", args->train.rankMap,
                  "Under mpirun: which rank hosts each device, e.g. cpu:0=0,cpu:1=0,cpu:2=1 "
                  "(every device once; default: contiguous blocks in plan order)");
  cmd->callback([args, shuffle, seed] {
    args->train.shuffleGiven = shuffle->count() > 0;
    args->train.seedGiven = seed->count() > 0;
    run(*args);
  });
}

} // namespace mpc::tool
