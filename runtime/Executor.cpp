//===- runtime/Executor.cpp - runs a plan step by step ------------------===//
//
// Workers are started once and each waits on its own WakeWord: step() bumps
// every worker's word, runs the first hosted device on the calling thread,
// then waits for the last worker to bump `done_`. A failing device closes
// the transport before reporting, so peers blocked in a recv for data that
// will never come wake up with TransportClosed, and step() can never hang.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

#include "runtime/Channel.h"
#include "support/Error.h"

#include <unordered_map>

namespace mpc::runtime {

namespace {

/// Runs the plan's send/recv structure symbolically (sends never block, a
/// recv waits for its channel's send) and throws a UserError if some device
/// would wait forever: a plan file is untrusted, and a step must never hang.
void checkNoDeadlock(const plan::Plan &plan) {
  std::vector<size_t> pc(plan.devices.size(), 0);
  std::unordered_map<uint32_t, int64_t> inFlight;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 0; d < plan.devices.size(); ++d) {
      const std::vector<plan::Instr> &instrs = plan.devices[d].instrs;
      while (pc[d] < instrs.size()) {
        const plan::Instr &in = instrs[pc[d]];
        if (in.kind == plan::InstrKind::Recv) {
          if (inFlight[in.channel] == 0) break;
          --inFlight[in.channel];
        } else if (in.kind == plan::InstrKind::Send) {
          ++inFlight[in.channel];
        }
        ++pc[d];
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < plan.devices.size(); ++d)
    if (pc[d] < plan.devices[d].instrs.size()) {
      const plan::Instr &in = plan.devices[d].instrs[pc[d]];
      throw UserError("", "device " + plan.devices[d].device + ", instruction " +
                              std::to_string(pc[d]) + " (recv '" + in.node + "')",
                      "the plan deadlocks: this receive on channel " +
                          std::to_string(in.channel) + " waits for a send that never comes");
    }
}

} // namespace

Executor::Executor(plan::Plan plan, BackendFactory factory, std::unique_ptr<Transport> transport,
                   std::vector<bool> hosted)
    : plan_(std::move(plan)), transport_(std::move(transport)) {
  checkNoDeadlock(plan_);
  MPC_ASSERT(hosted.empty() || hosted.size() == plan_.devices.size(),
             "hosted-device mask of the wrong size");
  if (!transport_) transport_ = std::make_unique<ChannelTransport>(plan_);
  for (uint32_t d = 0; d < plan_.devices.size(); ++d) {
    if (!hosted.empty() && !hosted[d]) {
      backends_.push_back(nullptr);
      continue;
    }
    backends_.push_back(factory(plan_, d));
    MPC_ASSERT(backends_.back() != nullptr, "backend factory returned no backend");
    backends_.back()->load(plan_, d);
  }
  // Initial values: params, then states, in that order.
  size_t k = 0;
  for (const auto *list : {&plan_.params, &plan_.states})
    for (const plan::TensorRef &t : *list) {
      if (k >= plan_.initialValues.size()) break;
      std::vector<uint8_t> &bytes = plan_.initialValues[k++];
      if (!bytes.empty() && hosts(t)) write(t, bytes.data(), bytes.size());
      // Freed one by one, so that the values and the device memory they go
      // to are never both resident in full.
      std::vector<uint8_t>().swap(bytes);
    }
  // The devices hold them now; a second copy for the whole run would cost
  // as much memory as the parameters and optimizer state themselves.
  std::vector<std::vector<uint8_t>>().swap(plan_.initialValues);
  for (uint32_t d = 0; d < backends_.size(); ++d) {
    if (!backends_[d]) continue;
    if (callerDevice_ < 0) {
      callerDevice_ = d;
      continue;
    }
    auto w = std::make_unique<Worker>();
    w->device = d;
    workers_.push_back(std::move(w));
  }
  for (auto &w : workers_) {
    Worker &ref = *w;
    w->thread = std::thread([this, &ref] { workerLoop(ref); });
  }
}

Executor::~Executor() {
  shutdown_ = true;
  for (auto &w : workers_) w->start.bump();
  for (auto &w : workers_) w->thread.join();
}

void Executor::runDevice(uint32_t device) {
  try {
    backends_[device]->runStep(*transport_, runningStep_);
  } catch (const TransportClosed &) {
    // Another device failed first; its error is the one reported.
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(errorMutex_);
      if (!error_) error_ = std::current_exception();
    }
    transport_->close();
  }
}

void Executor::workerLoop(Worker &w) {
  uint32_t seen = 0; // the word's value before any step (a bump may precede this thread's start)
  for (;;) {
    w.start.waitWhile(seen);
    seen = w.start.load();
    if (shutdown_) return;
    runDevice(w.device);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.bump();
  }
}

void Executor::checkUsable() const {
  if (failed_)
    throw UserError("", "", "the run was stopped by an earlier error");
}

void Executor::step() {
  checkUsable();
  uint32_t seen = done_.load();
  runningStep_ = nextStep_++;
  pending_.store(workers_.size(), std::memory_order_release);
  for (auto &w : workers_) w->start.bump();
  if (callerDevice_ >= 0) runDevice(uint32_t(callerDevice_));
  while (pending_.load(std::memory_order_acquire) != 0) {
    done_.waitWhile(seen);
    seen = done_.load();
  }
  std::exception_ptr err;
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    err = error_;
    error_ = nullptr;
  }
  if (err || transport_->closed()) {
    failed_ = true;
    if (err) std::rethrow_exception(err);
    throw InternalError("transport closed without an error");
  }
  try {
    transport_->finishStep();
  } catch (...) {
    failed_ = true;
    throw;
  }
}

Backend &Executor::backendOf(const plan::TensorRef &tensor) {
  MPC_ASSERT(hosts(tensor), "tensor '" + tensor.name + "' is on a device of another process");
  return *backends_[tensor.device];
}

void Executor::write(const plan::TensorRef &tensor, const void *src, size_t bytes) {
  MPC_ASSERT(bytes == size_t(tensor.numElements()) * 4,
             "size mismatch writing '" + tensor.name + "'");
  backendOf(tensor).upload(tensor.buffer, src, bytes);
}

void Executor::read(const plan::TensorRef &tensor, void *dst, size_t bytes) {
  MPC_ASSERT(bytes == size_t(tensor.numElements()) * 4,
             "size mismatch reading '" + tensor.name + "'");
  backendOf(tensor).download(tensor.buffer, dst, bytes);
}

std::vector<float> Executor::readFloats(const plan::TensorRef &tensor) {
  std::vector<float> out(size_t(tensor.numElements()));
  read(tensor, out.data(), out.size() * 4);
  return out;
}

namespace {
const plan::TensorRef *findIn(const std::vector<plan::TensorRef> &list, const std::string &name) {
  for (const plan::TensorRef &t : list)
    if (t.name == name) return &t;
  return nullptr;
}
} // namespace

const plan::TensorRef *Executor::findInput(const std::string &name) const {
  return findIn(plan_.inputs, name);
}
const plan::TensorRef *Executor::findOutput(const std::string &name) const {
  return findIn(plan_.outputs, name);
}
const plan::TensorRef *Executor::findParam(const std::string &name) const {
  return findIn(plan_.params, name);
}

float Executor::loss() {
  MPC_ASSERT(plan_.hasLoss, "loss() on a plan without a loss");
  float value = 0;
  read(plan_.loss, &value, 4);
  return value;
}

DeviceStats Executor::stats() const {
  DeviceStats total;
  for (const auto &b : backends_) {
    if (!b) continue;
    DeviceStats s = b->stats();
    total.instructions += s.instructions;
    total.kernels += s.kernels;
    total.bytesSent += s.bytesSent;
    total.bytesReceived += s.bytesReceived;
  }
  return total;
}

uint64_t Executor::instructionsPerStep() const {
  uint64_t n = 0;
  for (const plan::DeviceProgram &d : plan_.devices) n += d.instrs.size();
  return n;
}

} // namespace mpc::runtime
