//===- runtime/Channel.h - in-process send/recv between device workers --===//
//
// The default Transport: one mailbox per channel id of the plan. A send
// copies the sender's bytes into a message (buffers are recycled, so the
// steady state allocates nothing); a recv waits for the message and copies it
// into the receiver's memory. Mailboxes are created up front from the plan,
// so the lookup during a step is read-only and lock-free; each mailbox has its
// own lock, so unrelated transfers never contend, and a receiver spins
// briefly before it sleeps on the mailbox's condition variable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Backend.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace mpc::runtime {

/// One FIFO of byte messages.
class Channel {
public:
  void send(const void *src, size_t bytes);
  /// Blocks for a message; throws TransportClosed once closed.
  void recv(void *dst, size_t bytes);
  void close();
  size_t pending();

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<uint8_t>> queue_;
  std::vector<std::vector<uint8_t>> free_; ///< recycled message buffers
  bool closed_ = false;
  /// Mirrors of queue_.size() and closed_ that a receiver polls without
  /// the lock before it sleeps (the sender is usually microseconds away).
  std::atomic<size_t> queued_{0};
  std::atomic<bool> closedFlag_{false};
};

class ChannelTransport : public Transport {
public:
  /// Creates a mailbox for every channel id used by a Send or Recv in `plan`.
  explicit ChannelTransport(const plan::Plan &plan);
  /// Creates mailboxes for the given ids (tests).
  explicit ChannelTransport(const std::vector<uint32_t> &channels);

  void send(uint32_t channel, const void *src, size_t bytes) override;
  void recv(uint32_t channel, void *dst, size_t bytes) override;
  void close() override;
  bool closed() const override { return closed_.load(); }

private:
  Channel &get(uint32_t channel);
  std::unordered_map<uint32_t, std::unique_ptr<Channel>> channels_;
  std::atomic<bool> closed_{false};
};

} // namespace mpc::runtime
