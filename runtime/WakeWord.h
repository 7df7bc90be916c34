//===- runtime/WakeWord.h - waking one thread without a shared lock -----===//
//
// The executor hands each step to its workers, and the last worker hands
// the finished step back, many thousand times a second for small models.
// A mutex with notify-all made every hand-off a trip through the kernel for
// every thread. A WakeWord is a 32-bit sequence number per waiter: the waker
// bumps it, and enters the kernel (futex wake) only when the waiter is
// actually asleep; the waiter spins briefly first, since the next hand-off
// usually comes within microseconds, and only then sleeps (futex wait).
//
// The sleepers count and the sequence number are both sequentially
// consistent, so a waker that bumps after a waiter announced itself always
// sees it (and the kernel re-checks the number before sleeping).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mpc::runtime {

/// A polite busy-wait step: tells the core the thread is spinning.
inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// How waits spin before sleeping: a few spinPause() rounds (well under a
/// microsecond), then rounds of sched_yield, which hand the core to any
/// thread that has work (a host may have fewer cores than device threads,
/// and a spinning thread must not keep the one it waits for off the core),
/// and cost a fraction of a microsecond when there is none.
constexpr int kPauseRounds = 4;
constexpr int kYieldRounds = 64;

/// Spins one round of a wait: `round` counts from 0. Returns false once the
/// spinning budget is spent and the caller should sleep.
inline bool spinRound(int round) {
  if (round < kPauseRounds) {
    spinPause();
    return true;
  }
  if (round < kPauseRounds + kYieldRounds) {
    sched_yield();
    return true;
  }
  return false;
}

class WakeWord {
public:
  uint32_t load() const { return seq_.load(std::memory_order_seq_cst); }

  /// Advances the number and wakes the waiter if it sleeps.
  void bump() {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0)
      syscall(SYS_futex, reinterpret_cast<uint32_t *>(&seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
              nullptr, 0);
  }

  /// Returns once the number differs from `seen` (spinning, then sleeping).
  void waitWhile(uint32_t seen) {
    for (int round = 0;; ++round) {
      if (seq_.load(std::memory_order_acquire) != seen) return;
      if (!spinRound(round)) break;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (seq_.load(std::memory_order_seq_cst) == seen)
      syscall(SYS_futex, reinterpret_cast<uint32_t *>(&seq_), FUTEX_WAIT_PRIVATE, seen, nullptr,
              nullptr, 0);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

private:
  static_assert(sizeof(std::atomic<uint32_t>) == 4, "futex words are 32 bits");
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> sleepers_{0};
};

} // namespace mpc::runtime
