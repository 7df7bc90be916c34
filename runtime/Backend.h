//===- runtime/Backend.h - one logical device of a runtime --------------===//
//
// The executor (runtime/Executor.h) is backend-agnostic: it owns one worker
// thread per logical device of a plan and, on each step, asks every device's
// Backend to run its instruction list once, concurrently. A Backend owns that
// device's memory (the arena of temporaries and the persistent region, sized
// by the DeviceProgram), resolves each kernel instruction to a function once
// at load, and moves data to and from other devices only through a Transport:
// a send hands bytes to the transport, a recv copies them out into the
// destination's own memory. No backend ever holds a pointer into another
// device's memory.
//
// The CPU backend lives in runtime/cpu/, the CUDA one in runtime/cuda/.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpc::runtime {

class WakeWord;

/// Thrown by a Transport when it was closed while a device waited on it (or
/// sent to it): another device failed, the step is being abandoned. Never
/// reaches the user; the executor reports the error that caused the close.
class TransportClosed : public std::runtime_error {
public:
  TransportClosed() : std::runtime_error("transport closed") {}
};

/// Moves bytes between logical devices. Each send/recv pair of a plan shares a
/// channel id; a channel carries one message per use and keeps them in order.
/// Implementations are thread-safe: every device's worker calls them
/// concurrently.
class Transport {
public:
  virtual ~Transport() = default;
  /// Copies `bytes` bytes from `src` (host memory of the sending device) into
  /// a message on `channel`. Does not wait for the receiver.
  virtual void send(uint32_t channel, const void *src, size_t bytes) = 0;
  /// Blocks until a message is on `channel`, then copies it into `dst`
  /// (`bytes` must equal the message size, else InternalError).
  virtual void recv(uint32_t channel, void *dst, size_t bytes) = 0;
  /// Wakes every waiting recv and makes every later send/recv throw
  /// TransportClosed. Idempotent.
  virtual void close() = 0;
  virtual bool closed() const = 0;
  /// Called by the executor after every worker of this process finished a
  /// step without error: waits until every message sent during the step has
  /// left this process's send buffers (a cross-process transport completes
  /// its outstanding sends here; in-process transports have nothing to do).
  virtual void finishStep() {}
  /// Whether devices may run different steps at once (Executor::runSteps):
  /// the transport then keeps a channel's messages of successive steps in
  /// order and holds them for as long as their receiver is a step behind,
  /// with no finishStep between the steps. The in-process channels can.
  virtual bool canOverlapSteps() const { return false; }

  /// Polling, for devices that share a thread (Executor): a transport that
  /// can poll says so here, and then implements tryRecv and watch. Others
  /// keep the defaults, and the executor gives each of their devices a
  /// thread of its own, as a blocking recv needs.
  virtual bool canPoll() const { return false; }
  /// Like recv when a message is waiting on `channel` (returns true); returns
  /// false at once when none is. Throws TransportClosed once closed.
  virtual bool tryRecv(uint32_t channel, void *dst, size_t bytes);
  /// From now on, every send on `channel` and close() bump `wake`, so that
  /// a thread whose devices all wait for messages can sleep on that one
  /// word (it outlives the transport's use). Called before the first step.
  virtual void watch(uint32_t channel, WakeWord &wake);
};

/// Per-step counters a backend may fill (benchmarks, `mpc run --stats`).
struct DeviceStats {
  uint64_t instructions = 0;
  uint64_t kernels = 0;
  uint64_t bytesSent = 0;
  uint64_t bytesReceived = 0;
};

/// One instruction's run in a traced step (`mpc run --trace`): its index in
/// the device's list, and when it began (first tried, for a receive or a
/// collective that waited) and ended, in steady-clock nanoseconds.
struct InstrSpan {
  uint32_t instr = 0;
  int64_t begin = 0, end = 0;
};

/// Nanoseconds of the steady clock, the time base of InstrSpan.
int64_t traceClockNs();

/// The cheap clock a traced device reads per instruction: the CPU's
/// time-stamp counter on x86-64 (a few nanoseconds to read, against tens
/// for the steady clock), else the steady clock itself. TraceTicks turns
/// ticks into traceClockNs() time.
inline uint64_t traceTicks() {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return uint64_t(traceClockNs());
#endif
}

/// Ticks to steady-clock nanoseconds by anchors: pairs of readings of both
/// clocks, one when tracing starts and one each time spans are taken. The
/// ticks recorded between two anchors convert on the line through them, so
/// the map is continuous and increasing across steps (a device's slices
/// never overlap), and its error is an anchor's, not a rate's error times
/// the run's length: no drift between devices over a long run. An anchor
/// reads the ticks on both sides of the clock and keeps the tightest of a
/// few tries, so a preemption between the reads does not skew it.
struct TraceTicks {
  struct Anchor {
    uint64_t tick = 0;
    int64_t ns = 0;
  };
  Anchor from, to;

  static Anchor read() {
    Anchor best;
    uint64_t width = UINT64_MAX;
    for (int k = 0; k < 4; ++k) {
      uint64_t t0 = traceTicks();
      int64_t ns = traceClockNs();
      uint64_t t1 = traceTicks();
      if (t1 - t0 < width) {
        width = t1 - t0;
        best = {t0 + (t1 - t0) / 2, ns};
      }
    }
    return best;
  }
  /// Tracing starts: the first anchor.
  void start() { from = to = read(); }
  /// Spans are taken: a new anchor, after every tick recorded since the
  /// last one; toNs converts between the two.
  void advance() {
    from = to;
    to = read();
  }
  int64_t toNs(uint64_t tick) const {
    double rate = to.tick > from.tick && to.ns > from.ns
                      ? double(to.ns - from.ns) / double(to.tick - from.tick)
                      : 1.0;
    return from.ns + int64_t(double(int64_t(tick - from.tick)) * rate);
  }
};

/// One logical device (Plan::devices[index]).
class Backend {
public:
  virtual ~Backend() = default;

  /// "cpu", "cuda": used in diagnostics.
  virtual std::string kind() const = 0;

  /// Allocates this device's memory from `plan.devices[device]` (arenaBytes +
  /// persistentBytes) and resolves every kernel instruction to a kernel once.
  /// Throws UserError naming the device, instruction and op when an op has no
  /// kernel in this backend or a buffer does not fit the op's expectations.
  virtual void load(const plan::Plan &plan, uint32_t device) = 0;

  /// Copies host bytes into buffer `buffer` of this device (any region);
  /// `bytes` must equal the buffer's size. Only called between steps.
  virtual void upload(uint32_t buffer, const void *src, size_t bytes) = 0;
  /// Copies buffer `buffer` into host memory. Only called between steps.
  virtual void download(uint32_t buffer, void *dst, size_t bytes) = 0;

  /// Runs the device's instruction list once, in order, on the calling
  /// (worker) thread; Send/Recv go through `transport`. `step` is the
  /// training step's number (1 for the first step of a run from scratch),
  /// which dropout masks depend on. Throws UserError for bad data (e.g. a
  /// label out of range), TransportClosed when another device failed first.
  virtual void runStep(Transport &transport, int64_t step) = 0;

  /// Devices that can pause at a receive share threads when a host has
  /// fewer cores than devices (Executor). Such a backend returns true here
  /// and implements runUntilBlocked.
  virtual bool canPause() const { return false; }
  /// runStep in pieces: runs from instruction `pc` on until the list ends
  /// (returns true) or a Recv finds no message (transport.tryRecv; returns
  /// false with `pc` at that Recv, to be called again later). The first
  /// call of a step has pc 0. Requires canPause() and transport.canPoll().
  virtual bool runUntilBlocked(Transport &transport, int64_t step, size_t &pc);

  /// Counters accumulated since load.
  virtual DeviceStats stats() const { return {}; }
  /// Tracing: from the next step on, record every instruction's span; off,
  /// no clock is read. A backend that cannot trace records nothing.
  virtual void setTracing(bool on) { (void)on; }
  /// Appends the spans recorded since the last call to `out`, in execution
  /// order.
  virtual void takeSpans(std::vector<InstrSpan> &out) { (void)out; }
};

/// Makes the backend of logical device `device` of `plan` (not yet loaded).
using BackendFactory =
    std::function<std::unique_ptr<Backend>(const plan::Plan &plan, uint32_t device)>;

/// The CPU backend for every device (runtime/cpu/CpuDevice.cpp); the
/// default. Devices named "gpu:N" in the plan run on the CPU as well.
BackendFactory cpuBackendFactory();

} // namespace mpc::runtime
