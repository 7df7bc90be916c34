//===- runtime/train/Trainer.cpp - the training loop --------------------===//
#include "runtime/train/Trainer.h"

#include "plan/PlanIO.h"
#include "runtime/job/Agreement.h"
#include "runtime/job/Gather.h"
#include "runtime/job/RankMap.h"
#include "runtime/train/BatchFeed.h"
#include "runtime/train/Profile.h"
#include "runtime/train/Resume.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>

namespace mpc::runtime::train {

namespace {

/// The progress line on a terminal: steps done, steps/s, ETA.
class Progress {
public:
  Progress(std::ostream &os, int64_t first, int64_t total, bool enabled)
      : os_(os), first_(first), total_(total), enabled_(enabled) {
    start_ = last_ = std::chrono::steady_clock::now();
  }
  void update(int64_t done) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    double rate = secs > 0 ? double(done - first_) / secs : 0;
    double eta = rate > 0 ? double(total_ - done) / rate : 0;
    int width = 24, filled = total_ ? int(width * done / total_) : width;
    char buf[128];
    std::snprintf(buf, sizeof buf, "] step %lld/%lld  %.1f steps/s  ETA %.0fs", (long long)done,
                  (long long)total_, rate, eta);
    os_ << "\r\033[K[" << std::string(size_t(filled), '#')
        << std::string(size_t(width - filled), '.') << buf << std::flush;
    shown_ = true;
  }
  /// Clears the line before ordinary output.
  void clear() {
    if (enabled_ && shown_) os_ << "\r\033[K" << std::flush;
    shown_ = false;
  }

private:
  std::ostream &os_;
  int64_t first_, total_;
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

/// A loss that is not finite: the error that stops a run at its step, thrown
/// by the loss device's hook (it names the step itself).
struct LossNotFinite : UserError {
  using UserError::UserError;
};

std::string joined(const std::vector<std::string> &list) {
  std::string s;
  for (const std::string &x : list) s += (s.empty() ? "" : " ") + x;
  return s;
}

/// Rethrows a UserError that every rank raised alike as an AgreedError, so a
/// job prints it once.
template <typename F> auto onEveryRank(F &&f) -> decltype(f()) {
  try {
    return f();
  } catch (const job::AgreedError &) {
    throw;
  } catch (const UserError &e) {
    throw job::AgreedError(e.file(), e.where(), e.message());
  }
}

} // namespace

void setStep(io::TrainingPosition &pos, int64_t step) {
  pos.step = step;
  pos.epoch = step / pos.batchesPerEpoch;
  pos.epochStep = step % pos.batchesPerEpoch;
}

std::unique_ptr<Executor> makeCpuExecutor(plan::Plan plan, const Placement &placement,
                                          job::ProcessGroup &group, unsigned threads) {
  std::unique_ptr<Transport> transport = group.makeTransport(plan, placement.rankOf);
  return std::make_unique<Executor>(std::move(plan), cpuBackendFactory(), std::move(transport),
                                    placement.hosted, threads);
}

ExecutorMaker cpuExecutorMaker(unsigned threads) {
  return [threads](plan::Plan plan, const Placement &placement, job::ProcessGroup &group) {
    return makeCpuExecutor(std::move(plan), placement, group, threads);
  };
}

Trainer::Trainer(TrainOptions options, job::ProcessGroup &group, ExecutorMaker make,
                 std::ostream &out, std::ostream &err)
    : opt_(std::move(options)), group_(group), make_(std::move(make)), out_(out), err_(err) {}

Trainer::~Trainer() = default;

std::string Trainer::whoAmI() const {
  std::string s = "rank " + std::to_string(group_.rank());
  if (!devicesHere_.empty()) s += " (" + devicesHere_ + ")";
  return s;
}

void Trainer::note(const std::string &line, int rank) {
  if (group_.rank() == rank) err_ << escapeForMessage(line) << "\n" << std::flush;
}

void Trainer::run() {
  prepare();
  runSteps();
  finish();
}

void Trainer::checkFlags() const {
  if (opt_.saveEvery > 0 && opt_.save.empty())
    throw UserError("", "--save-every", "needs --save FILE (the checkpoint it rewrites)");
  if (opt_.saveEvery > 0 && opt_.saveParamsOnly)
    throw UserError("", "--save-every", "writes checkpoints to resume from; it cannot be combined "
                                        "with --save-params-only");
  if (opt_.saveParamsOnly && opt_.save.empty())
    throw UserError("", "--save-params-only", "needs --save FILE");
  if (opt_.force && opt_.resume.empty())
    throw UserError("", "--force", "only applies to --resume");
  if (!opt_.init.empty() && !opt_.resume.empty())
    throw UserError("", "--init", "starts a new run and --resume continues one; give one of them");
}

/// Every rank must run the same plan with the same result-changing flags,
/// and every flag that decides which collective steps a rank takes part in.
void Trainer::agree(const plan::Plan &p) {
  job::StartupRecord r = {
      {"the plan's checksum", hex64(checksum_)},
      {"the plan's devices", std::to_string(p.devices.size())},
      {"--steps", opt_.steps ? std::to_string(opt_.steps) : ""},
      {"--epochs", opt_.epochs ? std::to_string(opt_.epochs) : ""},
      {"--shuffle", opt_.shuffle ? "on" : "off"},
      {"--seed", opt_.seedGiven ? std::to_string(opt_.seed) : ""},
      {"--init", opt_.init},
      {"--resume", opt_.resume},
      {"--force", opt_.force ? "on" : "off"},
      {"--save", opt_.save},
      {"--save-every", opt_.saveEvery ? std::to_string(opt_.saveEvery) : ""},
      {"--save-params-only", opt_.saveParamsOnly ? "on" : "off"},
      {"--output", joined(opt_.outputs)},
      {"--input", joined(opt_.inputs)},
      {"--print-params", opt_.printParams ? "on" : "off"},
      {"--allow-nonfinite", opt_.allowNonfinite ? "on" : "off"},
      {"--rank-map", opt_.rankMap},
      // Both record every rank's spans and gather them on rank 0.
      {"--trace", opt_.trace.empty() ? "off" : "on"},
      {"--profile", opt_.profile ? "on" : "off"},
  };
  for (const auto &kv : opt_.agreeAlso) r.push_back(kv);
  job::checkAgreement(group_, r);
}

void Trainer::placeDevices(const plan::Plan &p) {
  placement_.rankOf =
      onEveryRank([&] { return job::assignRanks(p, group_.size(), opt_.rankMap); });
  placement_.hosted.assign(p.devices.size(), false);
  for (size_t d = 0; d < p.devices.size(); ++d)
    placement_.hosted[d] = placement_.rankOf[d] == group_.rank();
  if (group_.size() > 1) devicesHere_ = job::devicesOfRank(p, placement_.rankOf, group_.rank());
}

/// Ranks that read no dataset learn its size from those that did; two that
/// read different sizes are stopped (files differ between hosts).
void Trainer::agreeOnRows(int64_t &rows, const std::string &rowsFile) {
  if (group_.size() == 1) return;
  std::vector<std::string> all = group_.allGather(std::to_string(rows) + " " + rowsFile);
  int64_t agreed = -1;
  std::string agreedFile;
  int agreedRank = -1;
  for (int r = 0; r < int(all.size()); ++r) {
    size_t sp = all[size_t(r)].find(' ');
    int64_t n = std::stoll(all[size_t(r)].substr(0, sp));
    std::string file = all[size_t(r)].substr(sp + 1);
    if (n < 0) continue;
    if (agreed >= 0 && n != agreed)
      throw job::AgreedError(file, "", "dataset of " + std::to_string(n) + " rows on rank " +
                                           std::to_string(r) + ", but " + agreedFile +
                                           " has " + std::to_string(agreed) + " rows on rank " +
                                           std::to_string(agreedRank) +
                                           "; every rank must see the same data");
    agreed = n;
    agreedFile = file;
    agreedRank = r;
  }
  rows = agreed;
}

void Trainer::prepare() {
  plan::Plan p = plan::readPlanFile(opt_.planFile, &checksum_);
  agree(p);
  onEveryRank([&] { checkFlags(); });
  placeDevices(p);

  // Datasets: each rank reads those of the inputs its devices consume.
  int64_t rows = -1;
  std::string rowsFile;
  try {
    data_ = loadInputs(
        p, opt_.inputs, opt_.arrays,
        [&](const plan::TensorRef &t) { return bool(placement_.hosted[t.device]); },
        opt_.allowNonfinite, rows, rowsFile);
  } catch (const UserError &e) {
    // Errors in the --input flags themselves (no file named) are found alike
    // on every rank; a file's errors belong to the rank that read it.
    if (!e.file().empty()) throw;
    throw job::AgreedError(e.file(), e.where(), e.message());
  }
  agreeOnRows(rows, rowsFile);
  int64_t batch = 0;
  std::string batchInput;
  for (const plan::TensorRef &t : p.inputs) {
    if (t.shape.empty()) continue;
    if (batch && t.shape[0] != batch)
      throw job::AgreedError(opt_.planFile, "input '" + t.name + "'",
                             "inputs have different batch sizes (" + std::to_string(t.shape[0]) +
                                 " and " + std::to_string(batch) + " of '" + batchInput + "')");
    batch = t.shape[0];
    batchInput = t.name;
  }
  int64_t batchesPerEpoch = 1;
  if (batch > 0 && rows >= 0) {
    if (rows < batch)
      throw job::AgreedError(rowsFile, "", "dataset of " + std::to_string(rows) +
                                               " rows is smaller than the batch of " +
                                               std::to_string(batch));
    batchesPerEpoch = rows / batch; // a remainder smaller than a batch is dropped
    if (rows % batch)
      note("mpc run: note: dataset of " + std::to_string(rows) +
           " rows is not a multiple of the batch " + std::to_string(batch) + "; the last " +
           std::to_string(rows % batch) + " rows of each epoch are dropped");
  }
  if (opt_.steps > 0) {
    total_ = opt_.steps;
  } else {
    int64_t epochs = opt_.epochs > 0 ? opt_.epochs : 1;
    if (epochs > INT64_MAX / batchesPerEpoch)
      throw job::AgreedError("", "--epochs", std::to_string(epochs) + " epochs of " +
                                                 std::to_string(batchesPerEpoch) +
                                                 " steps overflow the step counter");
    total_ = epochs * batchesPerEpoch;
  }

  for (const std::string &spec : opt_.outputs) {
    auto [name, file] = onEveryRank([&] { return splitSpec(spec, "--output"); });
    const plan::TensorRef *ref = nullptr;
    for (const plan::TensorRef &t : p.outputs)
      if (t.name == name) ref = &t;
    if (!ref)
      throw job::AgreedError("", "--output", "the plan has no output '" + name +
                                                 "' (outputs: " + namesOf(p.outputs) + ")");
    outputs_.push_back({ref, file, {}});
  }
  lossRank_ = p.hasLoss ? placement_.rankOf[p.loss.device] : 0;

  info_.planChecksum = checksum_;
  info_.modelChecksum = p.modelChecksum;
  info_.model = p.model;
  info_.optimizer = io::describeOptimizer(p);
  info_.version = MPC_VERSION;
  for (const plan::TensorRef &s : p.states) info_.states.push_back(s.name);
  info_.position.batchesPerEpoch = batchesPerEpoch;
  info_.position.datasetRows = rows;
  info_.position.shuffle = opt_.shuffle;
  info_.position.shuffleSeed = opt_.seed;

  // Every rank reads the checkpoint before the runtime starts (each needs
  // the position; a bad file fails fast).
  if (!opt_.resume.empty()) {
    resumeFrom_ = std::make_unique<io::Checkpoint>(io::readCheckpoint(opt_.resume));
    if (resumeFrom_->resumable) {
      const io::TrainingPosition &was = resumeFrom_->info.position, &now = info_.position;
      const std::string &file = resumeFrom_->file;
      if (was.datasetRows != now.datasetRows || was.batchesPerEpoch != now.batchesPerEpoch)
        throw UserError(file, "", "checkpoint was written for a dataset of " +
                                      std::to_string(was.datasetRows) + " rows (" +
                                      std::to_string(was.batchesPerEpoch) +
                                      " steps per epoch); this run has " +
                                      std::to_string(now.datasetRows) + " rows (" +
                                      std::to_string(now.batchesPerEpoch) +
                                      "); resume with the same data, or use --init to start a "
                                      "new run from its weights");
      if (opt_.shuffleGiven && !was.shuffle)
        throw UserError(file, "", "checkpoint was written by a run without --shuffle; resume "
                                  "without --shuffle to keep its data order");
      if (opt_.seedGiven && opt_.seed != was.shuffleSeed)
        throw UserError(file, "", "checkpoint was written with --seed " +
                                      std::to_string(was.shuffleSeed) + ", not " +
                                      std::to_string(opt_.seed) +
                                      "; leave --seed out to keep its data order");
    }
  }

  executor_ = make_(std::move(p), placement_, group_);
  Executor &ex = *executor_;
  // Dataset and output refs pointed into the moved-from plan: rebind by name.
  for (Dataset &d : data_) d.ref = ex.findInput(d.ref->name);
  for (Collected &c : outputs_) c.ref = ex.findOutput(c.ref->name);
  loadStart();
}

/// --init or --resume: the devices of this rank take their tensors.
void Trainer::loadStart() {
  Executor &ex = *executor_;
  const plan::Plan &p = ex.plan();
  if (!opt_.init.empty()) {
    // Read by the ranks that host parameters or state; the lowest of them
    // prints the warnings (every reader finds the same ones).
    int reader = group_.size();
    bool hostsAny = false;
    for (const auto *list : {&p.params, &p.states})
      for (const plan::TensorRef &t : *list) {
        reader = std::min(reader, placement_.rankOf[t.device]);
        hostsAny = hostsAny || ex.hosts(t);
      }
    if (hostsAny)
      for (const std::string &w : loadInit(ex, opt_.init)) note(w, reader);
  }
  if (resumeFrom_) {
    for (const std::string &w :
         restoreCheckpoint(ex, *resumeFrom_, checksum_, opt_.force).warnings)
      note(w);
    info_.position.shuffle = resumeFrom_->info.position.shuffle;
    info_.position.shuffleSeed = resumeFrom_->info.position.shuffleSeed;
    setStep(info_.position, resumeFrom_->info.position.step);
    if (info_.position.step >= total_)
      note("mpc run: note: " + opt_.resume + " is at step " +
           std::to_string(info_.position.step) + ", at or past the " + std::to_string(total_) +
           " steps asked for; no step runs");
    resumeFrom_.reset();
  }
  first_ = info_.position.step;
}

std::string Trainer::keptCheckpoint() const {
  if (opt_.save.empty()) return "";
  if (savedStep_ < 0) return "; " + opt_.save + " is not written";
  return "; " + opt_.save + " keeps the checkpoint of step " + std::to_string(savedStep_);
}

void Trainer::writeCheckpoint(std::vector<io::NamedTensor> &params) {
  Executor &ex = *executor_;
  // A NaN or an infinity in a weight poisons every later step: a file of
  // them would replace a good checkpoint with one that cannot be resumed.
  auto requireFinite = [&](const std::vector<io::NamedTensor> &tensors) {
    if (group_.rank() != 0) return;
    for (const io::NamedTensor &t : tensors) {
      if (t.dtype != plan::DType::F32) continue;
      int64_t bad = firstNonFinite(t.data.data(), t.data.size() / 4);
      if (bad < 0) continue;
      float v;
      std::memcpy(&v, t.data.data() + size_t(bad) * 4, 4);
      throw UserError(opt_.planFile, "step " + std::to_string(info_.position.step),
                      "'" + t.name + "' holds " + valueText(v) + " at flat index " +
                          std::to_string(bad) + " after this step; training stopped" +
                          keptCheckpoint());
    }
  };
  if (opt_.saveParamsOnly) {
    requireFinite(params);
    if (group_.rank() == 0) io::writeParamsOnly(opt_.save, params);
    savedStep_ = info_.position.step;
    return;
  }
  // The state follows the parameters in the file; `params` is left as it came.
  const size_t count = params.size();
  for (io::NamedTensor &t : job::gatherTensors(group_, ex, placement_.rankOf, ex.plan().states))
    params.push_back(std::move(t));
  requireFinite(params);
  if (group_.rank() == 0) io::writeCheckpoint(opt_.save, params, info_);
  params.resize(count);
  savedStep_ = info_.position.step;
}

void Trainer::runSteps() {
  Executor &ex = *executor_;
  io::TrainingPosition &pos = info_.position;
  const int64_t first = pos.step, total = total_;
  BatchFeed feed(data_, pos.datasetRows, pos.batchesPerEpoch, pos.shuffle, pos.shuffleSeed, first);
  const bool printsLoss = ex.plan().hasLoss && group_.rank() == lossRank_;
  const uint32_t lossDevice = ex.plan().hasLoss ? ex.plan().loss.device : 0;
  // fp16's loss scaler (passes/LossScale.cpp): its scale and the steps it
  // skipped go on the loss line.
  const plan::TensorRef *scaleRef = nullptr, *skippedRef = nullptr;
  for (const plan::TensorRef &t : ex.plan().states) {
    if (t.name == "loss_scale") scaleRef = &t;
    if (t.name == "loss_scale.skipped") skippedRef = &t;
  }
  if (!scaleRef || !skippedRef || !ex.hosts(*scaleRef) || !ex.hosts(*skippedRef))
    scaleRef = skippedRef = nullptr;
  // Steps overlap (Executor::runSteps) where the transport lets them (the
  // devices of one process) and every tensor read after a step is on the
  // device whose hook reads it: the loss line's scaler state on the loss's
  // device, each output on one device. Otherwise they run one at a time and
  // everything is read after the whole step.
  overlapped_ = ex.canOverlapSteps();
  if (scaleRef && (scaleRef->device != lossDevice || skippedRef->device != lossDevice ||
                   !scaleRef->mirrors.empty() || !skippedRef->mirrors.empty()))
    overlapped_ = false;
  for (const Collected &c : outputs_)
    if (!c.ref->shards.empty() || !c.ref->mirrors.empty()) overlapped_ = false;
  int64_t finiteAt = first; // the last step whose loss was read and finite
  const bool gpuPlan = plan::usesGpu(ex.plan());

  Progress progress(err_, first, total, opt_.progress && group_.rank() == lossRank_);
  ex.setNextStep(first + 1);
  std::mutex traceMutex;
  if (!opt_.trace.empty() || opt_.profile) {
    trace_ = std::make_unique<Trace>(ex.plan());
    trace_->alignClocks(group_);
    ex.setTracing(true);
  }
  auto readOutput = [&](Collected &c) {
    if (!ex.hosts(*c.ref)) return;
    size_t n = size_t(c.ref->numElements()) * 4;
    c.bytes.resize(c.bytes.size() + n);
    ex.read(*c.ref, c.bytes.data() + c.bytes.size() - n, n);
  };
  auto saves = [&](int64_t step) {
    // The final checkpoint is finish()'s (after --output files are written).
    return opt_.saveEvery > 0 && step % opt_.saveEvery == 0 && step < total;
  };
  // After step `step` on the device holding the loss: the loss line, the
  // progress line, and a stop at a loss that is not finite.
  auto afterLossStep = [&](int64_t step) {
    progress.update(step);
    if (!printsLoss) return;
    const bool logs = step % opt_.logEvery == 0 || step == total;
    // On a GPU the loss is read where the host waits for the devices anyway
    // (a GPU runs ahead of the host between reads): at the steps logged, and
    // before each checkpoint, so no checkpoint follows a loss that is not
    // finite. On the CPU a step has ended when the device's step has and
    // the loss is in host memory: it is read every step. A NaN or an
    // infinity stops the run there, its line printed.
    if (logs || saves(step) || !gpuPlan) {
      float loss = ex.loss();
      bool finite = std::isfinite(loss);
      if (logs || !finite) {
        progress.clear();
        out_ << "step " << step << " loss " << valueText(double(loss));
        if (scaleRef)
          out_ << " scale " << valueText(double(ex.readFloats(*scaleRef)[0])) << " skipped "
               << valueText(double(ex.readFloats(*skippedRef)[0]));
        out_ << "\n" << std::flush;
      }
      if (!finite)
        throw LossNotFinite(opt_.planFile, "step " + std::to_string(step),
                            "the loss is " + valueText(double(loss)) +
                                (finiteAt > first ? " (finite at step " +
                                                        std::to_string(finiteAt) +
                                                        ", when last read)"
                                                  : "") +
                                "; training stopped" + keptCheckpoint());
      finiteAt = step;
    }
  };
  // What a device's step leaves for the host: its spans (--trace,
  // --profile), and when steps overlap, its outputs and the loss line, read
  // on the device's thread as it ends the step.
  auto takeSpans = [&](uint32_t device, int64_t step) {
    if (!trace_) return;
    std::vector<InstrSpan> mine;
    ex.takeSpans(device, mine);
    std::lock_guard<std::mutex> lock(traceMutex);
    trace_->add(step, device, mine);
  };
  Executor::StepHooks hooks;
  hooks.before = [&](uint32_t device, int64_t step) { feed.write(ex, device, step); };
  hooks.after = [&](uint32_t device, int64_t step) {
    takeSpans(device, step);
    for (Collected &c : outputs_)
      if (c.ref->device == device) readOutput(c);
    if (device == lossDevice) afterLossStep(step);
  };
  // Runs of overlapped steps, each ending where a checkpoint is written (or
  // at the end): the checkpoint needs every device at the same step. One
  // step at a time, the host does everything between steps, on this
  // thread, as a GPU runtime needs.
  for (int64_t s = first; s < total;) {
    int64_t end = total;
    if (opt_.saveEvery > 0) end = std::min(total, (s / opt_.saveEvery + 1) * opt_.saveEvery);
    try {
      if (overlapped_) ex.runSteps(end - s, hooks);
      else
        for (int64_t k = s; k < end; ++k) {
          feed.writeAll(ex, k + 1);
          ex.step();
          for (uint32_t d = 0; d < ex.plan().devices.size(); ++d) takeSpans(d, k + 1);
          for (Collected &c : outputs_) readOutput(c);
          afterLossStep(k + 1);
        }
    } catch (const LossNotFinite &) {
      progress.clear();
      throw;
    } catch (const UserError &e) {
      progress.clear();
      throw UserError(e.file().empty() ? opt_.planFile : e.file(), e.where(),
                      e.message() + " (step " + std::to_string(ex.failedStep()) + ")");
    }
    s = end;
    setStep(pos, s);
    if (saves(s)) {
      std::vector<io::NamedTensor> params =
          job::gatherTensors(group_, ex, placement_.rankOf, ex.plan().params);
      writeCheckpoint(params);
    }
  }
  progress.clear();
}

void Trainer::finish() {
  Executor &ex = *executor_;
  int64_t ran = std::max<int64_t>(total_ - first_, 0);
  for (Collected &c : outputs_) {
    job::moveToRoot(group_, placement_.rankOf[c.ref->device], c.bytes);
    if (group_.rank() != 0) continue;
    std::vector<int64_t> shape = c.ref->shape;
    if (shape.empty()) shape = {ran};
    else shape[0] *= ran;
    io::writeNpy(c.file, c.ref->dtype, shape, c.bytes.data());
  }
  // The parameters are gathered once for the checkpoint and the listing.
  std::vector<io::NamedTensor> params;
  if (!opt_.save.empty() || opt_.printParams)
    params = job::gatherTensors(group_, ex, placement_.rankOf, ex.plan().params);
  if (!opt_.save.empty()) writeCheckpoint(params);
  if (opt_.printParams && group_.rank() == 0) printParams(params, out_);
  if (trace_) {
    ex.setTracing(false);
    trace_->gather(group_);
    if (group_.rank() == 0 && !opt_.trace.empty()) writeFileAtomic(opt_.trace, trace_->json());
    if (group_.rank() == 0 && opt_.profile)
      printProfile(ex.plan(), trace_->spans(),
                   group_.size() > 1 ? placement_.rankOf : std::vector<int>{}, overlapped_, out_);
  }
}

} // namespace mpc::runtime::train
