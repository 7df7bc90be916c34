//===- tools/mpc/Flags.cpp - the command lines of run and compile -------===//
#include "tools/mpc/Flags.h"

#include "runtime/cuda/CudaBackend.h"
#include "support/Error.h"
#include "tools/mpc/NumericFlags.h"

#include <limits>

namespace mpc::tool {

void parseCommandLine(CLI::App &app, int argc, const char *const *argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") break; // the rest are positional arguments
    size_t eq = arg.find('=');
    if (arg.starts_with("--") && eq != std::string::npos && eq > 2 && eq + 1 == arg.size())
      throw UserError("", arg.substr(0, eq),
                      "the value after '=' is empty; give one (" + arg + "VALUE) or leave the "
                      "flag out");
  }
  app.parse(argc, argv);
}

CLI::App *addRunFlags(CLI::App &app, RunArgs &args) {
  CLI::App *cmd = app.add_subcommand(
      "run", "Train with a plan (or run inference with a plan that has no loss): on the CPU "
             "runtime (devices on up to one thread each, see --threads; each device starts "
             "its next step as soon as it has finished its own, with the same results as "
             "steps one at a time), or on the CUDA runtime for gpu plans");
  cmd->add_option("plan", args.train.planFile, "Plan file (from mpc compile)")->required();
  cmd->add_option("--input", args.train.inputs,
                  "NAME=FILE.npy: a dataset for plan input NAME (float32, int32 or float16, C "
                  "order; the first axis is the dataset, batches in file order); or "
                  "NAME=FILE.safetensors holding one tensor, or one named NAME (bf16 data). "
                  "Repeatable");
  cmd->add_flag("--allow-nonfinite", args.train.allowNonfinite,
                "Take --input datasets holding NaN or infinities as they are (by default the "
                "first such value is an error naming the file and its flat index)");
  auto *epochs = cmd->add_option("--epochs", args.train.epochs,
                                 "Passes over the dataset to reach (default 1), counted from "
                                 "the start of training (a --resume run continues to it); the "
                                 "remainder of a dataset smaller than a batch is dropped")
                     ->transform(positiveInteger());
  auto *steps = cmd->add_option("--steps", args.train.steps,
                                "Steps (batches) to reach, counted from the start of training "
                                "(a --resume run continues to it)")
                    ->transform(positiveInteger());
  epochs->excludes(steps);
  cmd->add_flag("--shuffle", args.train.shuffle,
                "Shuffle the rows every epoch (seeded by --seed); --resume takes it from the "
                "checkpoint");
  cmd->add_option("--seed", args.train.seed,
                  "Seed for --shuffle (default 0); --resume takes it from the checkpoint")
      ->transform(unsignedInteger());
  auto *init = cmd->add_option("--init", args.train.init,
                               "Start a new run (step 1) from a safetensors file's parameters, "
                               "and the optimizer state it holds (a warning names state it "
                               "lacks)");
  auto *resume = cmd->add_option(
      "--resume", args.train.resume,
      "Continue the run a checkpoint (--save) recorded: parameters, optimizer state, step, "
      "epoch, data order and position; the result equals an uninterrupted run's, byte for "
      "byte. A checkpoint of another plan is an error");
  init->excludes(resume);
  cmd->add_flag("--force", args.train.force,
                "With --resume: accept a checkpoint whose parameters match the plan but whose "
                "optimizer differs (kind, hyper-parameters or state tensors); matching state "
                "is loaded, the rest starts from the plan's initial values");
  cmd->add_option("--save", args.train.save,
                  "Write a checkpoint at the end (atomically, through a symbolic link): "
                  "parameters, optimizer state and the training position, for --resume; a "
                  "failed run leaves the previous file. May name the --resume file");
  cmd->add_option("--save-every", args.train.saveEvery,
                  "Also write the --save checkpoint every K steps (atomically, replacing it)")
      ->transform(positiveInteger());
  cmd->add_flag("--save-params-only", args.train.saveParamsOnly,
                "Make --save write the parameters only (for export; not resumable)");
  cmd->add_option("--output", args.train.outputs,
                  "NAME=FILE.npy: write plan output NAME, concatenated over all steps. "
                  "Repeatable");
  cmd->add_option("--trace", args.train.trace,
                  "FILE.json: write every instruction of every step as Chrome trace-event JSON "
                  "(open it in Perfetto, ui.perfetto.dev, or chrome://tracing): a process per "
                  "device, flows from sends to receives, arena bytes (docs/profiling.md)");
  cmd->add_flag("--profile", args.train.profile,
                "At the end, print per device where a step's time went (busy, idle: the "
                "bubble, blocked in receives and collectives, bytes sent, the top ops with "
                "their GFLOP/s), each figure beside the cost model's prediction and the ratio "
                "(docs/profiling.md)");
  cmd->add_option("--log-every", args.train.logEvery,
                  "Print 'step N loss L' every K steps and at the last step (default 100)")
      ->transform(positiveInteger());
  cmd->add_flag("--print-params", args.train.printParams,
                "Print each parameter after the run (name, type, up to 16 values)");
  cmd->add_option("--backend", args.backend,
                  "Runtime: auto (default: CUDA for plans with gpu:N devices when built with "
                  "CUDA, else CPU), cpu, or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_option("--device-map", args.deviceMap,
                  "CUDA: logical to physical GPUs, e.g. gpu:0=0,gpu:1=0,gpu:2=0 (default gpu:N "
                  "on GPU N); an error for a plan without gpu devices");
  cmd->add_option("--transport", args.transport,
                  "CUDA: how data moves between GPUs: peer (default) or nccl");
  cmd->add_flag("--allow-tf32", args.allowTf32,
                "CUDA: let cuBLAS use TF32 tensor cores for matmul (faster, ~1e-3 error)");
  cmd->add_flag("--cuda-graphs", args.cudaGraphs,
                "CUDA: capture each device's runs of kernels (a whole step on one GPU; the "
                "work between transfers in a pipeline) once as CUDA graphs and replay them "
                "every step: fewer launches, the same results bit for bit. An error for a "
                "plan without gpu devices, and with --trace or --profile");
  cmd->add_option("--threads", args.train.threads,
                  "CPU runtime: threads that run this process's devices (default: one per "
                  "device, at most the cores this process may use, and one for a plan that "
                  "does little work per message); with fewer threads than devices, "
                  "neighbouring devices share a thread and take turns at each receive. The "
                  "results are the same bit for bit")
      ->transform(integerIn(1, std::numeric_limits<unsigned>::max()));
  cmd->add_option("--rank-map", args.train.rankMap,
                  "Under mpirun: which rank hosts each device, e.g. cpu:0=0,cpu:1=0,cpu:2=1 "
                  "(every device once; default: contiguous blocks in plan order)");
  return cmd;
}

void finishRunFlags(const CLI::App &cmd, RunArgs &args) {
  auto given = [&](const std::string &flag) { return cmd.get_option(flag)->count() > 0; };
  args.train.shuffleGiven = given("--shuffle");
  args.train.seedGiven = given("--seed");
  args.saveGiven = given("--save");
  // An empty name would read as "not given": a fresh run instead of the
  // one asked for.
  for (const auto &[flag, file] : {std::pair{"--init", &args.train.init},
                                   std::pair{"--resume", &args.train.resume}})
    if (given(flag) && file->empty()) throw UserError("", flag, "is empty: name the file to read");
  // Here, not only in the CUDA runtime: a CPU plan never reaches it.
  std::string problem = runtime::cuda::transportNameProblem(args.transport);
  if (!problem.empty()) throw UserError("", "--transport", problem);
  for (const char *timing : {"--trace", "--profile"})
    if (args.cudaGraphs && given(timing))
      throw UserError("", "--cuda-graphs",
                      std::string("cannot be used with ") + timing +
                          ", which times every instruction: a graph replays its kernels as one "
                          "launch (run without --cuda-graphs to trace or profile)");
}

CLI::App *addCompileFlags(CLI::App &app, CompileArgs &args) {
  CLI::App *cmd = app.add_subcommand(
      "compile", "Compile a model into an execution plan (plan.bin) for training or inference");
  cmd->add_option("model", args.model, "Model file (JSON)")->required();
  cmd->add_option("-o,--output", args.output,
                  "Output file (plan.bin, or IR with --emit); written atomically, through a "
                  "symbolic link, never over the model")
      ->required();
  cmd->add_option("--emit", args.emit,
                  "What to write: plan (default), ir (text form), json (the IR as JSON) or dot "
                  "(the IR as a Graphviz picture: dot -Tsvg)")
      ->check(CLI::IsMember({"plan", "ir", "json", "dot"}));
  cmd->add_option("--seed", args.seed, "Seed for the initial parameter values (default 0)")
      ->transform(unsignedInteger());
  cmd->add_flag("--no-inplace", args.noInPlace,
                "Give every arena buffer bytes of its own: no elementwise result takes over "
                "its dying operand's slot");
  cmd->add_option("--activation-budget", args.activationBudget,
                  "Recompute activations, device by device (selective, then full), until each "
                  "device's arena peak fits this size, e.g. 64MiB; an error names the device "
                  "when full recomputation does not fit (docs/pipelining.md)");
  cmd->add_option("--trace-predicted", args.tracePredicted,
                  "FILE.json: also write the cost model's timeline of one step as Chrome "
                  "trace-event JSON, in the layout of `mpc run --trace`, to open side by side "
                  "in Perfetto (docs/profiling.md); needs --emit=plan");
  args.common.addTo(*cmd);
  return cmd;
}

compiler::CompileOptions finishCompileFlags(const CompileArgs &args) {
  compiler::CompileOptions options =
      args.common.compileOptions(compiler::DefaultPipeline::Training);
  options.lower = codegen::LowerOptions{args.seed, !args.noInPlace};
  return options;
}

} // namespace mpc::tool
