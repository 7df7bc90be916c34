//===- tools/mpc/RunCommand.cpp - `mpc run`: train or infer with a plan -===//
//
//   [mpirun -np R] mpc run PLAN.bin --input x=x.npy --input y=y.npy
//           [--allow-nonfinite] [--epochs N | --steps N] [--shuffle] [--seed S]
//           [--init FILE | --resume FILE [--force]]
//           [--save out.safetensors [--save-every K | --save-params-only]]
//           [--output z2=pred.npy] [--log-every K] [--print-params]
//           [--rank-map cpu:0=0,cpu:1=1]
//           [--backend auto|cpu|cuda] [--device-map ...] [--transport peer|nccl]
//           [--allow-tf32] [--cuda-graphs]
//
// Takes the parsed flags (Flags.h) and the trainer's options in them
// (runtime/train/Trainer.h), joins the job (one process, or the ranks
// mpirun started), checks every file the run writes before any work,
// chooses the backend and hands over. See docs/runtime.md and
// docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#include "plan/Plan.h"
#include "runtime/Executor.h"
#include "runtime/job/Agreement.h"
#include "runtime/job/FailFast.h"
#include "runtime/mpi/MpiJob.h"
#include "runtime/train/Datasets.h"
#include "runtime/train/Trainer.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/Flags.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <unistd.h>

#ifdef MPC_HAVE_CUDA
#include "runtime/cuda/Plugin.h"
#endif

namespace mpc::tool {

namespace {

namespace train = runtime::train;

/// The executor on the backend chosen by --backend: the CUDA runtime for
/// plans with gpu:N devices in a CUDA build (auto), else the CPU runtime.
/// The CUDA runtime is a module, loaded on first use (runtime/cuda/Plugin.h).
train::ExecutorMaker executorMaker(const RunArgs &args) {
  return [&args](plan::Plan p, const train::Placement &placement,
                 runtime::job::ProcessGroup &group) -> std::unique_ptr<runtime::Executor> {
    bool gpu = plan::usesGpu(p);
    // Every rank sees the same plan and flags: one message, printed once.
    if (!gpu && !args.deviceMap.empty())
      throw runtime::job::AgreedError("", "--device-map",
                                      "the plan has no gpu device to map (devices: " +
                                          plan::deviceList(p) + ")");
    if (!gpu && args.cudaGraphs)
      throw runtime::job::AgreedError("", "--cuda-graphs",
                                      "the plan has no gpu device: CUDA graphs replay GPU "
                                      "kernels (devices: " +
                                          plan::deviceList(p) + ")");
    if (args.cudaGraphs && args.backend == "cpu")
      throw runtime::job::AgreedError("", "--cuda-graphs",
                                      "needs the CUDA runtime: --backend cpu runs the plan's "
                                      "gpu devices on the CPU");
#ifdef MPC_HAVE_CUDA
    if (args.backend == "cuda" || (args.backend == "auto" && gpu)) {
      // Loaded here, not at start: a CPU run never maps the CUDA libraries.
      const runtime::cuda::PluginApi &cuda = runtime::cuda::loadCudaPlugin();
      runtime::cuda::CudaRun run;
      try {
        run = cuda.prepareRun(p, args.deviceMap, args.transport, args.allowTf32,
                              args.cudaGraphs, placement.rankOf, group);
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
    if (!args.deviceMap.empty() || !args.transport.empty() || args.allowTf32 ||
        args.cudaGraphs)
      throw UserError("", "--device-map/--transport/--allow-tf32/--cuda-graphs",
                      "this mpc was built without the CUDA runtime");
    if (gpu && group.rank() == 0)
      std::cerr << "mpc run: note: this mpc has no CUDA runtime; the plan's gpu devices run on "
                   "the CPU runtime\n";
#endif
    return train::makeCpuExecutor(std::move(p), placement, group, args.train.threads);
  };
}

/// What the run writes (--save, --trace, every --output) and reads (the plan, every
/// --input file, --init, --resume), checked by rank 0, which writes every
/// file, before any work (checkOutputTargets). Every rank learns the
/// verdict, so that a refusal ends the job in order, printed once.
void checkRunTargets(const RunArgs &args, runtime::job::ProcessGroup &group) {
  const train::TrainOptions &o = args.train;
  runtime::job::StartupRecord refusal;
  if (group.rank() == 0) {
    try {
      std::vector<OutputTarget> targets;
      if (args.saveGiven) targets.push_back({"--save", o.save});
      if (!o.trace.empty()) targets.push_back({"--trace", o.trace});
      for (const std::string &spec : o.outputs) {
        auto [name, file] = train::splitSpec(spec, "--output");
        targets.push_back({"--output " + name, file});
      }
      std::vector<std::string> inputs = {o.planFile, o.init};
      for (const std::string &spec : o.inputs)
        inputs.push_back(train::splitSpec(spec, "--input").second);
      // `--resume X --save X` continues a run in place: X is read whole
      // before the first step and replaced atomically at the end.
      std::error_code ec;
      if (!args.saveGiven || !std::filesystem::equivalent(o.resume, o.save, ec))
        inputs.push_back(o.resume);
      checkOutputTargets(targets, inputs);
    } catch (const UserError &e) {
      refusal = {{"file", e.file()}, {"where", e.where()}, {"message", e.message()}};
    }
  }
  if (group.size() > 1)
    refusal = runtime::job::decodeRecord(group.allGather(runtime::job::encodeRecord(refusal))[0]);
  if (!refusal.empty())
    throw runtime::job::AgreedError(refusal[0].second, refusal[1].second, refusal[2].second);
}

void run(RunArgs &args) {
  std::unique_ptr<runtime::job::ProcessGroup> group = runtime::mpi::joinJob();
  args.train.progress = isatty(STDERR_FILENO) != 0;
  args.train.agreeAlso = {{"--backend", args.backend},
                          {"--device-map", args.deviceMap},
                          {"--transport", args.transport},
                          {"--allow-tf32", args.allowTf32 ? "on" : "off"},
                          {"--cuda-graphs", args.cudaGraphs ? "on" : "off"}};
  train::Trainer trainer(args.train, *group, executorMaker(args), std::cout, std::cerr);
  runtime::job::runOrEndJob(
      *group, "mpc run",
      [&] {
        checkRunTargets(args, *group);
        trainer.run();
      },
      [&] { return trainer.whoAmI(); });
}

} // namespace

void addRunCommand(CLI::App &app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App *cmd = addRunFlags(app, *args);
  cmd->callback([args, cmd] {
    finishRunFlags(*cmd, *args);
    run(*args);
  });
}

} // namespace mpc::tool
