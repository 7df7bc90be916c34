//===- runtime/Backend.cpp - the optional parts of Transport and Backend -===//
//
// Polling and pausing are optional: the executor asks canPoll()/canPause()
// first and never calls these defaults, so reaching one is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/Backend.h"

#include <chrono>

#include "support/Error.h"

namespace mpc::runtime {

bool Transport::tryRecv(uint32_t, void *, size_t) {
  throw InternalError("tryRecv on a transport that cannot poll");
}

void Transport::watch(uint32_t, WakeWord &) {
  throw InternalError("watch on a transport that cannot poll");
}

int64_t traceClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Backend::runUntilBlocked(Transport &, int64_t, size_t &) {
  throw InternalError("runUntilBlocked on a " + kind() + " device, which cannot pause");
}

} // namespace mpc::runtime
