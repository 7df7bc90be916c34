//===- runtime/Executor.cpp - runs a plan step by step ------------------===//
//
// Worker threads are started once and each waits on its own WakeWord:
// runSteps() bumps every worker's word, runs the first group on the calling
// thread, then waits for the last worker to bump `done_`. Within a run of
// several steps, each device counts the steps it finished (doneSteps_), and
// one that may not start its next yet (mayStart) sleeps on its group's word,
// which every finished step bumps. A failing device
// closes the transport before reporting, so peers blocked in a recv for data
// that will never come wake up with TransportClosed, and step() can never
// hang.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executor.h"

#include "ops/Float16.h"

#include "plan/TransferWalk.h"
#include "runtime/Channel.h"
#include "support/Error.h"

#include <algorithm>
#include <cstring>
#include <sched.h>

namespace mpc::runtime {

namespace {

/// Throws a UserError if some device would wait forever: a plan file is
/// untrusted, and a step must never hang.
void checkNoDeadlock(const plan::Plan &plan, const plan::TransferWalk &walk) {
  if (!walk.stuck) return;
  const plan::Instr &in = plan.devices[walk.device].instrs[walk.instr];
  bool collective = in.kind == plan::InstrKind::Collective;
  throw UserError("", "device " + plan.devices[walk.device].device + ", instruction " +
                          std::to_string(walk.instr) + " (" + (collective ? in.op : "recv") +
                          " '" + in.node + "')",
                  collective ? "the plan deadlocks: this collective on channel " +
                                   std::to_string(in.channel) +
                                   " waits for a member of its group that never comes to it"
                             : "the plan deadlocks: this receive on channel " +
                                   std::to_string(in.channel) +
                                   " waits for a send that never comes");
}

/// The cores this process may run on (its affinity mask, which a container
/// or `taskset` narrows; hardware_concurrency counts the machine's).
unsigned usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return unsigned(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Below this much work per message (elements read and written by kernels,
/// plan::TransferWalk::kernelElements), the default is one thread: each
/// hand-off between threads costs about a microsecond, and devices that
/// exchange a message every few thousand elements of work spend more time
/// handing over than they gain by running at once. At this size a step
/// between two messages takes tens of microseconds.
constexpr uint64_t kElementsPerMessageForThreads = 1 << 16;

/// The default number of threads for a plan (see the file comment of
/// Executor.h).
unsigned defaultThreads(const plan::TransferWalk &walk) {
  if (walk.messages > 0 && walk.kernelElements / walk.messages < kElementsPerMessageForThreads)
    return 1;
  return usableCores();
}

} // namespace

Executor::Executor(plan::Plan plan, BackendFactory factory, std::unique_ptr<Transport> transport,
                   std::vector<bool> hosted, unsigned threads)
    : plan_(std::move(plan)), transport_(std::move(transport)) {
  plan::TransferWalk walk = plan::walkTransfers(plan_);
  checkNoDeadlock(plan_, walk);
  if (threads == 0) threads = defaultThreads(walk);
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
  doneSteps_ = std::make_unique<std::atomic<int64_t>[]>(backends_.size());
  makeGroups(threads);
  for (size_t i = 1; i < groups_.size(); ++i) {
    Group &ref = *groups_[i];
    ref.thread = std::thread([this, &ref] { workerLoop(ref); });
  }
}

void Executor::makeGroups(unsigned threads) {
  std::vector<uint32_t> hosted;
  bool canShare = transport_->canPoll();
  for (uint32_t d = 0; d < backends_.size(); ++d)
    if (backends_[d]) {
      hosted.push_back(d);
      canShare = canShare && backends_[d]->canPause();
    }
  size_t n = hosted.size();
  size_t count = canShare ? std::min<size_t>(n, threads) : n;
  count = std::max<size_t>(count, 1);
  // Contiguous runs of devices: a pipeline's neighbours exchange the most,
  // and two devices on one thread hand over without waking anyone.
  for (size_t g = 0, next = 0; g < count; ++g) {
    auto group = std::make_unique<Group>();
    size_t size = n / count + (g < n % count ? 1 : 0);
    for (size_t i = 0; i < size; ++i) group->devices.push_back(hosted[next++]);
    groups_.push_back(std::move(group));
  }
  // A thread running several devices sleeps on one word that every message
  // to them bumps (receives' and collectives' messages alike).
  std::vector<plan::ChannelRoute> routes = plan::channelRoutes(plan_);
  for (auto &g : groups_) {
    if (g->devices.size() < 2) continue;
    for (const plan::ChannelRoute &r : routes)
      if (std::find(g->devices.begin(), g->devices.end(), r.to) != g->devices.end())
        transport_->watch(r.channel, g->arrivals);
  }
}

Executor::~Executor() {
  shutdown_ = true;
  for (size_t i = 1; i < groups_.size(); ++i) groups_[i]->start.bump();
  for (size_t i = 1; i < groups_.size(); ++i) groups_[i]->thread.join();
}

void Executor::runGroup(Group &g) {
  try {
    if (g.devices.size() == 1)
      runAlone(g);
    else if (!g.devices.empty())
      runInTurn(g);
  } catch (const TransportClosed &) {
    // Another device failed first; its error is the one reported.
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(errorMutex_);
      if (!error_) {
        error_ = std::current_exception();
        failedStep_ = g.current;
      }
    }
    transport_->close();
    wakeAll();
  }
}

bool Executor::mayStart(int64_t k) const {
  if (k < 2) return true;
  for (uint32_t d = 0; d < backends_.size(); ++d)
    if (backends_[d] && doneSteps_[d].load(std::memory_order_acquire) < k - 1) return false;
  return true;
}

void Executor::markDone(uint32_t device) {
  doneSteps_[device].fetch_add(1, std::memory_order_acq_rel);
  if (runCount_ > 1) wakeAll();
}

void Executor::wakeAll() {
  for (auto &g : groups_) g->arrivals.bump();
}

void Executor::beginStep(Group &g, uint32_t device, int64_t k) {
  g.current = runningStep_ + k;
  if (hooks_ && hooks_->before) hooks_->before(device, runningStep_ + k);
}

void Executor::endStep(uint32_t device, int64_t k) {
  // The hook reads the device's results before another device may start
  // step k + 2 and overwrite what it reads (inputs staged for step k).
  if (hooks_ && hooks_->after) hooks_->after(device, runningStep_ + k);
  markDone(device);
}

void Executor::runAlone(Group &g) {
  const uint32_t d = g.devices[0];
  for (int64_t k = 0; k < runCount_; ++k) {
    while (!mayStart(k)) {
      uint32_t seen = g.arrivals.load();
      if (mayStart(k)) break;
      if (transport_->closed()) throw TransportClosed();
      g.arrivals.waitWhile(seen);
    }
    beginStep(g, d, k);
    backends_[d]->runStep(*transport_, runningStep_ + k);
    endStep(d, k);
  }
}

void Executor::runInTurn(Group &g) {
  // Per device: where it stopped, the step of the run it is in, and whether
  // it has started that step (its `before` hook called).
  std::vector<size_t> pc(g.devices.size(), 0);
  std::vector<int64_t> at(g.devices.size(), 0);
  std::vector<uint8_t> started(g.devices.size(), 0);
  size_t left = g.devices.size();
  while (left > 0) {
    // Read before trying: a message (or a finished step) that lands after a
    // failed try bumps the word past this value, so the wait below returns
    // at once.
    uint32_t seen = g.arrivals.load();
    bool moved = false;
    for (size_t i = 0; i < g.devices.size(); ++i) {
      if (at[i] == runCount_) continue;
      const uint32_t d = g.devices[i];
      g.current = runningStep_ + at[i];
      if (!started[i]) {
        if (!mayStart(at[i])) continue;
        beginStep(g, d, at[i]);
        started[i] = true;
      }
      size_t before = pc[i];
      if (backends_[d]->runUntilBlocked(*transport_, runningStep_ + at[i], pc[i])) {
        endStep(d, at[i]);
        pc[i] = 0;
        started[i] = false;
        if (++at[i] == runCount_) --left;
        moved = true;
      } else if (pc[i] != before) {
        moved = true;
      }
    }
    if (!moved && left > 0) {
      if (transport_->closed()) throw TransportClosed();
      g.arrivals.waitWhile(seen);
    }
  }
}

void Executor::workerLoop(Group &g) {
  uint32_t seen = 0; // the word's value before any step (a bump may precede this thread's start)
  for (;;) {
    g.start.waitWhile(seen);
    seen = g.start.load();
    if (shutdown_) return;
    runGroup(g);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.bump();
  }
}

void Executor::checkUsable() const {
  if (failed_)
    throw UserError("", "", "the run was stopped by an earlier error");
}

void Executor::step() { runSteps(1); }

void Executor::runSteps(int64_t count, const StepHooks &hooks) {
  checkUsable();
  if (count <= 0) return;
  if (count > 1 && !canOverlapSteps()) {
    // One at a time, each ended by finishStep, with the same hooks.
    for (int64_t k = 0; k < count; ++k) runSteps(1, hooks);
    return;
  }
  uint32_t seen = done_.load();
  runningStep_ = nextStep_;
  nextStep_ += count;
  runCount_ = count;
  hooks_ = hooks.before || hooks.after ? &hooks : nullptr;
  for (uint32_t d = 0; d < backends_.size(); ++d) doneSteps_[d].store(0, std::memory_order_relaxed);
  pending_.store(groups_.size() - 1, std::memory_order_release);
  for (size_t i = 1; i < groups_.size(); ++i) groups_[i]->start.bump();
  runGroup(*groups_[0]);
  while (pending_.load(std::memory_order_acquire) != 0) {
    done_.waitWhile(seen);
    seen = done_.load();
  }
  hooks_ = nullptr;
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

void Executor::write(const plan::TensorRef &tensor, const void *src, size_t bytes) {
  MPC_ASSERT(hosts(tensor), "tensor '" + tensor.name + "' is on devices of other processes");
  writeWhere(tensor, src, bytes, [this](uint32_t d) { return hosts(d); });
}

void Executor::writeTo(uint32_t device, const plan::TensorRef &tensor, const void *src,
                       size_t bytes) {
  MPC_ASSERT(hosts(device), "device " + std::to_string(device) + " is not hosted here");
  writeWhere(tensor, src, bytes, [device](uint32_t d) { return d == device; });
}

template <class On>
void Executor::writeWhere(const plan::TensorRef &tensor, const void *src, size_t bytes, On on) {
  MPC_ASSERT(bytes == size_t(tensor.numElements()) * size_t(ops::dtypeSize(tensor.dtype)),
             "size mismatch writing '" + tensor.name + "'");
  if (!tensor.shards.empty()) {
    // Each part to write: its elements of the whole.
    std::vector<uint8_t> part(size_t(tensor.shardElements()) * size_t(ops::dtypeSize(tensor.dtype)));
    for (size_t i = 0; i < tensor.shards.size(); ++i) {
      const plan::Placement &at = tensor.shards[i];
      if (!on(at.device)) continue;
      plan::extractPart(tensor, i, static_cast<const uint8_t *>(src), part.data());
      backends_[at.device]->upload(at.buffer, part.data(), part.size());
    }
    // Split along an axis: the replicas' parts (TensorRef::mirrors).
    for (size_t k = 0; k < tensor.mirrors.size(); ++k) {
      const plan::Placement &at = tensor.mirrors[k];
      if (!on(at.device)) continue;
      plan::extractPart(tensor, k % tensor.shards.size(), static_cast<const uint8_t *>(src),
                        part.data());
      backends_[at.device]->upload(at.buffer, part.data(), part.size());
    }
    return;
  }
  // Every placement: a data-parallel replica's copy starts equal.
  if (on(tensor.device)) backends_[tensor.device]->upload(tensor.buffer, src, bytes);
  for (const plan::Placement &m : tensor.mirrors)
    if (on(m.device)) backends_[m.device]->upload(m.buffer, src, bytes);
}

void Executor::read(const plan::TensorRef &tensor, void *dst, size_t bytes) {
  MPC_ASSERT(bytes == size_t(tensor.numElements()) * size_t(ops::dtypeSize(tensor.dtype)),
             "size mismatch reading '" + tensor.name + "'");
  MPC_ASSERT(hosts(tensor), "tensor '" + tensor.name + "' is on devices of other processes");
  if (!tensor.shards.empty()) {
    for (size_t i = 0; i < tensor.shards.size(); ++i)
      plan::joinPart(tensor, i, readShard(tensor, i).data(), static_cast<uint8_t *>(dst));
    return;
  }
  if (hosts(tensor.device)) return backends_[tensor.device]->download(tensor.buffer, dst, bytes);
  for (const plan::Placement &m : tensor.mirrors)
    if (hosts(m.device)) return backends_[m.device]->download(m.buffer, dst, bytes);
}

std::vector<uint8_t> Executor::readShard(const plan::TensorRef &tensor, size_t i) {
  MPC_ASSERT(i < tensor.shards.size(), "'" + tensor.name + "' has no shard " + std::to_string(i));
  const plan::Placement &at = tensor.shards[i];
  MPC_ASSERT(hosts(at.device), "shard " + std::to_string(i) + " of '" + tensor.name +
                                   "' is on a device of another process");
  std::vector<uint8_t> part(size_t(tensor.shardElements()) * size_t(ops::dtypeSize(tensor.dtype)));
  backends_[at.device]->download(at.buffer, part.data(), part.size());
  return part;
}

void Executor::setTracing(bool on) {
  for (auto &b : backends_)
    if (b) b->setTracing(on);
}

void Executor::takeSpans(uint32_t device, std::vector<InstrSpan> &out) {
  if (hosts(device)) backends_[device]->takeSpans(out);
}

std::vector<float> Executor::readFloats(const plan::TensorRef &tensor) {
  std::vector<float> out(size_t(tensor.numElements()));
  if (ops::isLowPrecision(tensor.dtype)) {
    std::vector<uint8_t> bytes(out.size() * 2);
    read(tensor, bytes.data(), bytes.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = ops::loadFloat(tensor.dtype, bytes.data(), int64_t(i));
    return out;
  }
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
