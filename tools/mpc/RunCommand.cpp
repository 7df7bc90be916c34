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

bool planUsesGpu(const plan::Plan &p) {
  for (const plan::DeviceProgram &d : p.devices)
    if (d.device.rfind("gpu:", 0) == 0) return true;
  return false;
}

/// The executor for `p` on the backend chosen by --backend: the CUDA runtime
/// for plans with gpu:N devices in a CUDA build (auto), else the CPU runtime.
std::unique_ptr<runtime::Executor> makeExecutor(plan::Plan p, const RunArgs &args) {
  bool gpu = planUsesGpu(p);
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

std::string typeStr(plan::DType dt, const std::vector<int64_t> &shape) {
  std::string s = std::string(plan::dtypeName(dt)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Splits "name=path"; `flag` names the option in errors.
std::pair<std::string, std::string> splitSpec(const std::string &spec, const std::string &flag) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw UserError("", flag, "expected NAME=FILE, got '" + spec + "'");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

std::string namesOf(const std::vector<plan::TensorRef> &list) {
  std::string s;
  for (const plan::TensorRef &t : list) s += (s.empty() ? "'" : ", '") + t.name + "'";
  return s.empty() ? "none" : s;
}

/// "[N,2]": the file shape that feeds a plan input of shape `batch`.
std::string datasetShapeHint(const std::vector<int64_t> &batch) {
  std::string s = "[N";
  for (size_t i = 1; i < batch.size(); ++i) s += "," + std::to_string(batch[i]);
  return s + "]";
}

/// One dataset input: the whole NPY array and the plan tensor it feeds.
struct Dataset {
  const plan::TensorRef *ref = nullptr;
  std::string file;
  io::NpyArray array;
  size_t rowBytes = 0; ///< bytes of one dataset row (a batch is batch rows)
  int64_t batch = 0;   ///< rows per step; 0 for a rank-0 input fed whole
  std::vector<uint8_t> staging;
};

std::vector<Dataset> loadInputs(const plan::Plan &p, const std::vector<std::string> &specs,
                                int64_t &rows) {
  std::map<std::string, std::string> files;
  for (const std::string &spec : specs) {
    auto [name, file] = splitSpec(spec, "--input");
    if (!files.emplace(name, file).second)
      throw UserError("", "--input", "input '" + name + "' given twice");
  }
  for (const auto &[name, file] : files) {
    bool known = false;
    for (const plan::TensorRef &t : p.inputs) known |= t.name == name;
    if (!known)
      throw UserError("", "--input", "the plan has no input '" + name +
                                         "' (inputs: " + namesOf(p.inputs) + ")");
  }
  std::vector<Dataset> out;
  rows = -1;
  std::string rowsFile;
  for (const plan::TensorRef &t : p.inputs) {
    auto it = files.find(t.name);
    if (it == files.end())
      throw UserError("", "--input", "missing input '" + t.name + "' (give --input " +
                                         t.name + "=FILE.npy)");
    Dataset d;
    d.ref = &t;
    d.file = it->second;
    d.array = io::readNpy(d.file);
    const io::NpyArray &a = d.array;
    if (a.dtype != t.dtype)
      throw UserError(d.file, "input '" + t.name + "'",
                      std::string("dtype ") + plan::dtypeName(a.dtype) +
                          " does not match the plan's " + typeStr(t.dtype, t.shape));
    if (t.shape.empty()) {
      if (!a.shape.empty())
        throw UserError(d.file, "input '" + t.name + "'",
                        "shape " + typeStr(a.dtype, a.shape) + " does not match the plan's " +
                            typeStr(t.dtype, t.shape));
      d.staging = a.data;
      out.push_back(std::move(d));
      continue;
    }
    bool ok = a.shape.size() == t.shape.size();
    for (size_t i = 1; ok && i < t.shape.size(); ++i) ok = a.shape[i] == t.shape[i];
    if (!ok)
      throw UserError(d.file, "input '" + t.name + "'",
                      "shape " + typeStr(a.dtype, a.shape) +
                          " does not match the plan's batch " + typeStr(t.dtype, t.shape) +
                          " (expected " + datasetShapeHint(t.shape) + " with N a dataset size)");
    d.batch = t.shape[0];
    d.rowBytes = size_t(t.numElements() / std::max<int64_t>(1, t.shape[0])) * 4;
    if (rows >= 0 && a.shape[0] != rows)
      throw UserError(d.file, "input '" + t.name + "'",
                      "dataset of " + std::to_string(a.shape[0]) + " rows, but " + rowsFile +
                          " has " + std::to_string(rows));
    rows = a.shape[0];
    rowsFile = d.file;
    d.staging.resize(size_t(t.numElements()) * 4);
    out.push_back(std::move(d));
  }
  return out;
}

/// Seeded Fisher-Yates with an explicit generator, so the order is the same
/// on every platform and standard library.
void shuffleRows(std::vector<int64_t> &perm, std::mt19937_64 &rng) {
  for (size_t i = perm.size(); i > 1; --i) {
    size_t j = size_t(rng() % i);
    std::swap(perm[i - 1], perm[j]);
  }
}

void loadInit(runtime::Executor &ex, const std::string &file) {
  std::vector<io::NamedTensor> tensors = io::readSafetensors(file);
  std::map<std::string, const io::NamedTensor *> byName;
  for (const io::NamedTensor &t : tensors) byName[t.name] = &t;
  const plan::Plan &p = ex.plan();
  for (const auto &[name, t] : byName) {
    bool known = false;
    for (const auto *list : {&p.params, &p.states})
      for (const plan::TensorRef &r : *list) known |= r.name == name;
    if (!known)
      throw UserError(file, "tensor '" + name + "'",
                      "not a parameter of the plan (parameters: " + namesOf(p.params) + ")");
  }
  auto load = [&](const plan::TensorRef &r, bool required) {
    auto it = byName.find(r.name);
    if (it == byName.end()) {
      if (required)
        throw UserError(file, "", "missing parameter '" + r.name + "' " +
                                      typeStr(r.dtype, r.shape));
      return;
    }
    const io::NamedTensor &t = *it->second;
    if (t.dtype != r.dtype || t.shape != r.shape)
      throw UserError(file, "tensor '" + r.name + "'",
                      typeStr(t.dtype, t.shape) + " does not match the plan's " +
                          typeStr(r.dtype, r.shape));
    ex.write(r, t.data.data(), t.data.size());
  };
  for (const plan::TensorRef &r : p.params) load(r, true);
  for (const plan::TensorRef &r : p.states) load(r, false); // optimizer state: optional
}

void saveParams(runtime::Executor &ex, const std::string &file) {
  std::vector<io::NamedTensor> tensors;
  for (const plan::TensorRef &r : ex.plan().params) {
    io::NamedTensor t;
    t.name = r.name;
    t.dtype = r.dtype;
    t.shape = r.shape;
    t.data.resize(size_t(r.numElements()) * 4);
    ex.read(r, t.data.data(), t.data.size());
    tensors.push_back(std::move(t));
  }
  io::writeSafetensors(file, tensors, {{"format", "pt"}});
}

void printParams(runtime::Executor &ex, std::ostream &os) {
  for (const plan::TensorRef &r : ex.plan().params) {
    std::vector<uint8_t> bytes(size_t(r.numElements()) * 4);
    ex.read(r, bytes.data(), bytes.size());
    os << r.name << " " << typeStr(r.dtype, r.shape) << " = [";
    int64_t n = r.numElements(), shown = std::min<int64_t>(n, 16);
    for (int64_t i = 0; i < shown; ++i) {
      char buf[32];
      if (r.dtype == plan::DType::F32) {
        float v;
        std::memcpy(&v, bytes.data() + i * 4, 4);
        std::snprintf(buf, sizeof buf, "%.6g", double(v));
      } else {
        int32_t v;
        std::memcpy(&v, bytes.data() + i * 4, 4);
        std::snprintf(buf, sizeof buf, "%d", v);
      }
      os << (i ? ", " : "") << buf;
    }
    if (n > shown) os << ", ... (" << n << " values)";
    os << "]\n";
  }
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
      "run", "Train with a plan (or run inference with a plan that has no loss) on the CPU "
             "runtime: one worker thread per device");
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
