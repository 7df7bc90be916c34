//===- tools/mpc/RunLoop.cpp - `mpc run`'s step loop ---------------------===//
#include "tools/mpc/RunLoop.h"

#include "support/Error.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <unistd.h>

namespace mpc::tool {

namespace {

/// The progress line on a terminal: steps done, steps/s, ETA.
class Progress {
public:
  Progress(int64_t first, int64_t total, bool enabled)
      : first_(first), total_(total), enabled_(enabled) {
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
  int64_t first_, total_;
  bool enabled_, shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

/// The row order of the dataset. Each epoch with --shuffle permutes the
/// previous epoch's order again, so the order at a step depends on every
/// shuffle before it: seeking replays them (cheap next to a training step).
class DataOrder {
public:
  DataOrder(int64_t rows, bool shuffle, uint64_t seed) : shuffle_(shuffle), rng_(seed) {
    perm_.resize(size_t(std::max<int64_t>(rows, 0)));
    for (size_t i = 0; i < perm_.size(); ++i) perm_[i] = int64_t(i);
  }
  /// Called before each step with its position in its epoch.
  void beginStep(int64_t epochStep) {
    if (epochStep == 0 && shuffle_ && !perm_.empty()) shuffleRows(perm_, rng_);
  }
  /// The order in effect after `step` steps: one shuffle per epoch begun.
  void seek(int64_t step, int64_t batchesPerEpoch) {
    for (int64_t s = 0; s < step; s += batchesPerEpoch) beginStep(0);
  }
  int64_t row(int64_t i) const { return perm_[size_t(i)]; }

private:
  bool shuffle_;
  std::mt19937_64 rng_;
  std::vector<int64_t> perm_;
};

} // namespace

void setStep(runtime::io::TrainingPosition &pos, int64_t step) {
  pos.step = step;
  pos.epoch = step / pos.batchesPerEpoch;
  pos.epochStep = step % pos.batchesPerEpoch;
}

void runSteps(runtime::Executor &ex, std::vector<Dataset> &data, std::vector<Collected> &outputs,
              LoopSettings &settings) {
  runtime::io::TrainingPosition &pos = settings.info.position;
  const int64_t first = pos.step, total = settings.totalSteps;
  DataOrder order(pos.datasetRows, pos.shuffle, pos.shuffleSeed);
  order.seek(first, pos.batchesPerEpoch);

  Progress progress(first, total, isatty(STDERR_FILENO) != 0);
  for (int64_t s = first; s < total; ++s) {
    int64_t inEpoch = s % pos.batchesPerEpoch;
    order.beginStep(inEpoch);
    for (Dataset &d : data) {
      for (int64_t r = 0; r < d.batch; ++r)
        std::memcpy(d.staging.data() + size_t(r) * d.rowBytes,
                    d.array.data.data() + size_t(order.row(inEpoch * d.batch + r)) * d.rowBytes,
                    d.rowBytes);
      ex.write(*d.ref, d.staging.data(), d.staging.size());
    }
    try {
      ex.step();
    } catch (const UserError &e) {
      progress.clear();
      throw UserError(e.file().empty() ? settings.planFile : e.file(), e.where(),
                      e.message() + " (step " + std::to_string(s + 1) + ")");
    }
    setStep(pos, s + 1);
    for (Collected &c : outputs) {
      size_t n = size_t(c.ref->numElements()) * 4;
      c.bytes.resize(c.bytes.size() + n);
      ex.read(*c.ref, c.bytes.data() + c.bytes.size() - n, n);
    }
    if (ex.plan().hasLoss && ((s + 1) % settings.logEvery == 0 || s + 1 == total)) {
      progress.clear();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", double(ex.loss()));
      std::cout << "step " << s + 1 << " loss " << buf << "\n" << std::flush;
    }
    // The final checkpoint is the caller's (after --output files are written).
    if (settings.saveEvery > 0 && (s + 1) % settings.saveEvery == 0 && s + 1 < total)
      runtime::io::writeCheckpoint(settings.checkpoint, ex, settings.info);
    progress.update(s + 1);
  }
  progress.clear();
}

} // namespace mpc::tool
