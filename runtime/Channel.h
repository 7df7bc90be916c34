//===- runtime/Channel.h - in-process send/recv between device workers --===//
//
// The default Transport: one mailbox per channel id of the plan. A send
// copies the sender's bytes into a message; a recv waits for the message and
// copies it into the receiver's memory. Message buffers come from one pool
// shared by every channel (runtime/MessagePool.h), bounded, so the steady
// state allocates nothing and holds about the bytes in flight at once.
// Mailboxes are created up front from the plan, so the lookup during a step
// is read-only and lock-free; each mailbox has its own lock, so unrelated
// transfers never contend, and a receiver spins briefly before it sleeps on
// the mailbox's condition variable. The transport can poll (tryRecv, watch),
// so several devices may share a thread (runtime/Executor.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"
#include "runtime/MessagePool.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mpc::runtime {

class WakeWord;

/// One FIFO of byte messages.
class Channel {
public:
  explicit Channel(MessagePool &pool) : pool_(pool) {}
  void send(const void *src, size_t bytes);
  /// Blocks for a message; throws TransportClosed once closed.
  void recv(void *dst, size_t bytes);
  /// Takes a waiting message (true) or returns false at once.
  bool tryRecv(void *dst, size_t bytes);
  /// Every later send and close() bump `wake` (set before use).
  void watch(WakeWord &wake) { wake_ = &wake; }
  void close();
  size_t pending();

private:
  /// Copies the front message out and recycles its buffer; `lock` holds
  /// mutex_ and a message is queued.
  void take(std::unique_lock<std::mutex> &lock, void *dst, size_t bytes);

  MessagePool &pool_;
  WakeWord *wake_ = nullptr;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<MessageBuffer> queue_;
  bool closed_ = false;
  /// Mirrors of queue_.size() and closed_ that a receiver polls without
  /// the lock before it sleeps (the sender is usually microseconds away).
  std::atomic<size_t> queued_{0};
  std::atomic<bool> closedFlag_{false};
};

class ChannelTransport : public Transport {
public:
  /// Creates a mailbox for every channel id used by a Send or Recv in `plan`;
  /// the pool keeps at most the plan's peak bytes in flight idle
  /// (plan::walkTransfers).
  explicit ChannelTransport(const plan::Plan &plan);
  /// Creates mailboxes for the given ids (tests; the local channels of a
  /// multi-process transport), keeping at most `idleLimit` bytes idle.
  explicit ChannelTransport(const std::vector<uint32_t> &channels,
                            size_t idleLimit = kDefaultIdleLimit);

  void send(uint32_t channel, const void *src, size_t bytes) override;
  void recv(uint32_t channel, void *dst, size_t bytes) override;
  void close() override;
  bool closed() const override { return closed_.load(); }
  bool canPoll() const override { return true; }
  bool canOverlapSteps() const override { return true; }
  bool tryRecv(uint32_t channel, void *dst, size_t bytes) override;
  void watch(uint32_t channel, WakeWord &wake) override;

  MessagePool &pool() { return pool_; }

  static constexpr size_t kDefaultIdleLimit = size_t(64) << 20;

private:
  Channel &get(uint32_t channel);
  MessagePool pool_;
  std::unordered_map<uint32_t, std::unique_ptr<Channel>> channels_;
  std::vector<WakeWord *> watchers_; ///< bumped by close()
  std::atomic<bool> closed_{false};
};

} // namespace mpc::runtime
