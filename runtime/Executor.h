//===- runtime/Executor.h - runs a plan step by step --------------------===//
//
// The Executor loads a plan onto one Backend per logical device and, for
// each step(), runs every device's instruction list once, concurrently.
// Sends and receives meet in a Transport (runtime/Channel.h by default).
// Between steps the caller feeds inputs, reads the loss, outputs and
// parameters, or overwrites parameters.
//
// Threads: the hosted devices are split, in plan order, into as many
// contiguous groups as there are threads, at most one per device; the
// calling thread runs the first group itself and a worker thread each of the
// others (each woken through its own WakeWord, so a step's hand-offs cost no
// kernel call while the threads are busy). A thread with several devices
// runs them in turn, each until it waits for a message, and sleeps only when
// all of them wait (Backend::runUntilBlocked, Transport::tryRecv).
//
// How many threads: by default one per device, but no more than the cores
// this process may use (three devices on two cores used to be three threads
// taking turns on the cores, and each hand-off between them waited for the
// OS to switch threads), and one alone when the plan does little work per
// message (plan::TransferWalk: fewer than 64Ki elements read and written by
// kernels per send; a hand-off between threads costs about a microsecond,
// more than such devices gain by running at once). The caller may set the
// number (`mpc run --threads`). Sharing needs a backend that can pause and a
// transport that can poll (the CPU backend, the in-process channels);
// otherwise every device gets a thread of its own, whatever was asked.
//
// Errors: when a device throws (a label out of range, a kernel error), the
// executor closes the transport so that every other device blocked in a recv
// wakes up and stops, joins the step, and rethrows the first error on the
// calling thread. The executor is then failed: a later step() throws again.
//
// Processes: a plan may be spread over several processes (MPI ranks, see
// runtime/job/). Each process builds an Executor that *hosts* some of the
// plan's devices: only those get a backend and a thread, and the transport
// reaches the others. Reading or writing a tensor of a device hosted
// elsewhere is a bug in the caller (hosts() says which are here).
//
// Steps may overlap (runSteps): a device starts its next step when it has
// finished its own, without waiting for the others, up to two steps in
// flight. A pipeline's fill and drain then overlap those of the next step.
//
// Determinism: every device runs its list in plan order and every kernel has
// a fixed summation order, so the same plan, inputs and initial values give
// bit-identical results whatever the thread timing or the number of threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "runtime/Backend.h"
#include "runtime/WakeWord.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mpc::runtime {

class Executor {
public:
  /// Loads `plan` (already verified by plan::verifyPlan) and uploads its
  /// initial parameter and state values, then frees the plan's copy of them
  /// (plan().initialValues is empty afterwards). `factory` makes each device's
  /// backend (the CPU backend by default); `transport` carries sends and
  /// receives (in-process channels by default). `hosted[d]` says whether
  /// device d runs in this process (empty: every device). `threads` caps the
  /// threads that run the devices (0: the default, see the file comment).
  explicit Executor(plan::Plan plan, BackendFactory factory = cpuBackendFactory(),
                    std::unique_ptr<Transport> transport = nullptr,
                    std::vector<bool> hosted = {}, unsigned threads = 0);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const plan::Plan &plan() const { return plan_; }

  /// Writes host bytes into a user tensor (an input, param or state); `bytes`
  /// must be 4 * numElements (float32 or int32 by the tensor's dtype).
  void write(const plan::TensorRef &tensor, const void *src, size_t bytes);
  /// write() restricted to the copies or parts of `tensor` on `device`:
  /// what runSteps' `before` hook writes while other devices run.
  void writeTo(uint32_t device, const plan::TensorRef &tensor, const void *src, size_t bytes);
  /// Reads a user tensor (input, output, param, state, loss) to host bytes.
  void read(const plan::TensorRef &tensor, void *dst, size_t bytes);
  /// A float tensor's values as f32 (a bf16 or f16 tensor widened).
  std::vector<float> readFloats(const plan::TensorRef &tensor);

  /// Looks a tensor up by name among inputs, outputs, params, states; null if
  /// absent.
  const plan::TensorRef *findInput(const std::string &name) const;
  const plan::TensorRef *findOutput(const std::string &name) const;
  const plan::TensorRef *findParam(const std::string &name) const;

  /// Runs one step on every device. Rethrows the first error of a worker.
  void step();

  /// What runSteps calls around each step of each device, on the thread that
  /// runs the device: `before(device, step)` as the device starts the step
  /// (write its inputs), `after(device, step)` as it has finished it (read
  /// its outputs, its loss). Either may be empty. A hook that throws stops
  /// the run as a failing device does.
  struct StepHooks {
    std::function<void(uint32_t device, int64_t step)> before, after;
  };
  /// True when runSteps may overlap steps: the transport carries one step's
  /// messages while another step's are in flight (canOverlapSteps on the
  /// transport). Otherwise runSteps runs them one after the other.
  bool canOverlapSteps() const { return transport_->canOverlapSteps(); }
  /// Runs `count` steps (numbered on from nextStep()) with no barrier
  /// between them: each device starts its next step as soon as it has
  /// finished its own last one and every device has finished the step
  /// before that (at most two steps in flight, which bounds the messages
  /// and inputs waiting). A pipeline's first stage then runs the next step's
  /// forward while the last stage still computes this step's weight
  /// gradients, so the fill and drain of successive steps overlap. Each
  /// device still runs its list in plan order and channels keep their
  /// messages in order, so the results are bit-identical to `count` step()
  /// calls. Rethrows the first error of a device or a hook.
  void runSteps(int64_t count, const StepHooks &hooks = {});
  /// The step a device or hook was running when the last run failed (its
  /// first error), for the caller's message.
  int64_t failedStep() const { return failedStep_; }
  /// The number the next step() passes to the devices (1 at first, then one
  /// more each step): a run resumed after step s sets s + 1, so its dropout
  /// masks continue those of the uninterrupted run.
  void setNextStep(int64_t step) { nextStep_ = step; }
  int64_t nextStep() const { return nextStep_; }
  /// The loss after the last step (requires plan().hasLoss).
  float loss();

  size_t numDevices() const { return backends_.size(); }
  /// Threads that run the devices, the calling one included.
  size_t numThreads() const { return groups_.size(); }
  /// True when device `device` (or the device of `tensor`) runs here.
  bool hosts(uint32_t device) const {
    return device < backends_.size() && backends_[device] != nullptr;
  }
  /// A tensor is here when one of its placements is (plan::TensorRef::mirrors,
  /// ::shards). Writing a sharded tensor writes the parts hosted here;
  /// reading one needs every part here (job::gatherTensors joins them
  /// across processes).
  bool hosts(const plan::TensorRef &tensor) const {
    for (const plan::Placement &m : tensor.placements())
      if (hosts(m.device)) return true;
    return false;
  }
  /// Part `i` of a sharded tensor (its padded bytes), hosted here.
  std::vector<uint8_t> readShard(const plan::TensorRef &tensor, size_t i);
  /// Sum of every device's counters.
  DeviceStats stats() const;
  /// Tracing (mpc run --trace): every hosted device records its
  /// instructions' spans from the next step on (Backend::setTracing).
  void setTracing(bool on);
  /// Appends device `device`'s spans since the last call to `out` (none
  /// when it is not hosted here).
  void takeSpans(uint32_t device, std::vector<InstrSpan> &out);
  /// Instructions of one step, all devices together.
  uint64_t instructionsPerStep() const;

private:
  /// Devices run by one thread (groups_[0]: the calling thread's).
  struct Group {
    std::vector<uint32_t> devices;
    WakeWord start;         ///< bumped by step(): run the devices once
    /// Bumped by every send to one of them, and by every finished step of
    /// a run of several (runSteps).
    WakeWord arrivals;
    std::thread thread;
    int64_t current = 0; ///< the step the group runs (for failedStep)
  };
  /// Splits the hosted devices into groups (see the file comment).
  void makeGroups(unsigned threads);
  void workerLoop(Group &g);
  /// Runs the group's devices once; a real error closes the transport and
  /// is kept.
  void runGroup(Group &g);
  /// The run's steps of a group's one device.
  void runAlone(Group &g);
  /// The run's steps of a group's devices, each in turn until it waits.
  void runInTurn(Group &g);
  /// Whether a device may start step `k` (0-based in the run): every device
  /// here has finished step k - 2.
  bool mayStart(int64_t k) const;
  /// Device `device` finished a step of the run: counts it and wakes every
  /// thread, one of which may wait for it to start its next.
  void markDone(uint32_t device);
  /// Wakes every thread waiting for a message or for mayStart.
  void wakeAll();
  /// Device `device` of group `g` starts step `k` of the run (0-based): its
  /// `before` hook.
  void beginStep(Group &g, uint32_t device, int64_t k);
  /// Device `device` finished step `k` of the run: its `after` hook, then
  /// markDone.
  void endStep(uint32_t device, int64_t k);
  void checkUsable() const;
  /// Writes the placements of `tensor` hosted here for which `on(device)`.
  template <class On>
  void writeWhere(const plan::TensorRef &tensor, const void *src, size_t bytes, On on);

  plan::Plan plan_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::unique_ptr<Transport> transport_;

  std::vector<std::unique_ptr<Group>> groups_;
  int64_t nextStep_ = 1;      ///< see setNextStep
  int64_t runningStep_ = 0;   ///< the run's first step (written before the workers wake)
  int64_t runCount_ = 1;      ///< the steps of the run (runSteps)
  const StepHooks *hooks_ = nullptr; ///< the run's hooks, or null
  /// Per device: steps of the current run it has finished (runSteps).
  std::unique_ptr<std::atomic<int64_t>[]> doneSteps_;
  WakeWord done_;             ///< bumped by the last worker to finish a step
  std::atomic<size_t> pending_{0}; ///< worker threads still running the current step
  std::atomic<bool> shutdown_{false};
  std::mutex errorMutex_;
  std::exception_ptr error_; ///< first real (non-TransportClosed) error
  int64_t failedStep_ = 0;   ///< the step of error_
  bool failed_ = false;
};

} // namespace mpc::runtime
