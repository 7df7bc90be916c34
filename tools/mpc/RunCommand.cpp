//===- tools/mpc/RunCommand.cpp - `mpc run`: train or infer with a plan -===//
//
//   mpc run PLAN.bin --input x=x.npy --input y=y.npy [--epochs N | --steps N]
//           [--shuffle] [--seed S] [--init params.safetensors]
//           [--save out.safetensors] [--output z2=pred.npy] [--log-every K]
//           [--print-params]
//
// Loads the plan onto the CPU runtime (one worker per device), feeds the
// NPY datasets batch by batch (the first axis is the dataset, the plan's
// input shape gives the batch; a remainder smaller than a batch is dropped),
// prints the loss every K steps and, on a terminal, a progress line. A plan
// without a loss runs inference. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/PlanIO.h"
#include "support/Error.h"
#include "tools/mpc/Commands.h"
#include "tools/mpc/RunInputs.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unistd.h>

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
  std::string init, save;
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

/// The progress line on a terminal: steps done, steps/s, ETA.
class Progress {
public:
  Progress(int64_t total, bool enabled) : total_(total), enabled_(enabled) {
    start_ = last_ = std::chrono::steady_clock::now();
  }
  void update(int64_t done) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    double rate = secs > 0 ? double(done) / secs : 0;
    double eta = rate > 0 ? double(total_ - done) / rate : 0;
    int width = 24, filled = total_ ? int(width * done / total_) : width;
    std::fprintf(stderr, "\r\033[K[%s%s] step %lld/%lld  %.1f steps/s  ETA %.0fs",
                 std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), (long long)done,
                 (long long)total_, rate, eta);
    std::fflush(stderr);
    shown_ = true;
  }
  /// Clears the line before ordinary output.
  void clear() {
    if (enabled_ && shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

private:
  int64_t total_;
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

void run(const RunArgs &args) {
  if (args.logEvery < 1) throw UserError("", "--log-every", "must be at least 1");
  plan::Plan p = plan::readPlanFile(args.plan);

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
  int64_t steps = args.steps > 0 ? args.steps
                                 : (args.epochs > 0 ? args.epochs : 1) * batchesPerEpoch;

  // Outputs to collect, concatenated over the steps.
  struct Collected {
    const plan::TensorRef *ref;
    std::string file;
    std::vector<uint8_t> bytes;
  };
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

  std::unique_ptr<runtime::Executor> executor = makeExecutor(std::move(p), args);
  runtime::Executor &ex = *executor;
  const plan::Plan &plan = ex.plan();
  // Dataset refs pointed into the moved-from plan: rebind by name.
  for (Dataset &d : data) d.ref = ex.findInput(d.ref->name);
  for (Collected &c : outputs) c.ref = ex.findOutput(c.ref->name);
  if (!args.init.empty()) loadInit(ex, args.init);

  std::vector<int64_t> perm(size_t(std::max<int64_t>(rows, 0)));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
  std::mt19937_64 rng(args.seed);

  Progress progress(steps, isatty(STDERR_FILENO) != 0);
  for (int64_t s = 0; s < steps; ++s) {
    int64_t inEpoch = s % batchesPerEpoch;
    if (inEpoch == 0 && args.shuffle && !perm.empty()) shuffleRows(perm, rng);
    for (Dataset &d : data) {
      if (d.batch) {
        for (int64_t r = 0; r < d.batch; ++r) {
          int64_t row = perm[size_t(inEpoch * d.batch + r)];
          std::memcpy(d.staging.data() + size_t(r) * d.rowBytes,
                      d.array.data.data() + size_t(row) * d.rowBytes, d.rowBytes);
        }
      }
      ex.write(*d.ref, d.staging.data(), d.staging.size());
    }
    try {
      ex.step();
    } catch (const UserError &e) {
      progress.clear();
      throw UserError(e.file().empty() ? args.plan : e.file(), e.where(),
                      e.message() + " (step " + std::to_string(s + 1) + ")");
    }
    for (Collected &c : outputs) {
      size_t n = size_t(c.ref->numElements()) * 4;
      c.bytes.resize(c.bytes.size() + n);
      ex.read(*c.ref, c.bytes.data() + c.bytes.size() - n, n);
    }
    if (plan.hasLoss && ((s + 1) % args.logEvery == 0 || s + 1 == steps)) {
      progress.clear();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", double(ex.loss()));
      std::cout << "step " << s + 1 << " loss " << buf << "\n" << std::flush;
    }
    progress.update(s + 1);
  }
  progress.clear();

  for (const Collected &c : outputs) {
    std::vector<int64_t> shape = c.ref->shape;
    if (shape.empty()) shape = {steps};
    else shape[0] *= steps;
    io::writeNpy(c.file, c.ref->dtype, shape, c.bytes.data());
  }
  if (!args.save.empty()) saveParams(ex, args.save);
  if (args.printParams) printParams(ex, std::cout);
}

} // namespace

namespace {
/// CLI11's PositiveNumber prints the whole double range in its message.
const CLI::Validator kPositiveInteger(
    [](std::string &value) -> std::string {
      try {
        size_t used = 0;
        long long n = std::stoll(value, &used);
        if (used == value.size() && n >= 1) return "";
      } catch (...) {
      }
      return "must be a positive integer, got '" + value + "'";
    },
    "INT>0");
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
                                 "Passes over the dataset (default 1); the remainder of a "
                                 "dataset smaller than a batch is dropped")
                     ->check(kPositiveInteger);
  auto *steps = cmd->add_option("--steps", args->steps, "Number of steps (batches) to run")
                    ->check(kPositiveInteger);
  epochs->excludes(steps);
  cmd->add_flag("--shuffle", args->shuffle, "Shuffle the rows every epoch (seeded by --seed)");
  cmd->add_option("--seed", args->seed, "Seed for --shuffle (default 0)");
  cmd->add_option("--init", args->init,
                  "Load parameter values (and optionally optimizer state) from a safetensors "
                  "file before the first step");
  cmd->add_option("--save", args->save,
                  "Write the trained parameters to a safetensors file (atomically)");
  cmd->add_option("--output", args->outputs,
                  "NAME=FILE.npy: write plan output NAME, concatenated over all steps. "
                  "Repeatable");
  cmd->add_option("--log-every", args->logEvery,
                  "Print 'step N loss L' every K steps and at the last step (default 100)");
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
  cmd->callback([args] { run(*args); });
}

} // namespace mpc::tool
