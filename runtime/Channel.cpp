//===- runtime/Channel.cpp - in-process send/recv between device workers -===//
//
// Mailboxes with one lock and condition variable each. A message is a
// private copy of the sender's bytes: the receiver copies it into its own
// memory, so no device ever reads another device's arena.
//
//===----------------------------------------------------------------------===//
#include "runtime/Channel.h"

#include "plan/TransferWalk.h"
#include "runtime/WakeWord.h"
#include "support/Error.h"

#include <algorithm>
#include <cstring>

namespace mpc::runtime {

void Channel::send(const void *src, size_t bytes) {
  if (closedFlag_.load(std::memory_order_acquire)) throw TransportClosed();
  MessageBuffer msg = pool_.take(bytes);
  if (bytes) std::memcpy(msg.data.get(), src, bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      pool_.give(std::move(msg));
      throw TransportClosed();
    }
    queue_.push_back(std::move(msg));
    queued_.store(queue_.size(), std::memory_order_release);
  }
  cv_.notify_one();
  if (wake_) wake_->bump();
}

void Channel::take(std::unique_lock<std::mutex> &lock, void *dst, size_t bytes) {
  MessageBuffer msg = std::move(queue_.front());
  queue_.pop_front();
  queued_.store(queue_.size(), std::memory_order_release);
  lock.unlock();
  MPC_ASSERT(msg.size == bytes, "channel message of " + std::to_string(msg.size) +
                                    " bytes received into a buffer of " + std::to_string(bytes));
  if (bytes) std::memcpy(dst, msg.data.get(), bytes);
  pool_.give(std::move(msg));
}

void Channel::recv(void *dst, size_t bytes) {
  for (int round = 0; spinRound(round); ++round)
    if (queued_.load(std::memory_order_acquire) != 0 || closedFlag_.load(std::memory_order_acquire))
      break;
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
  if (closed_) throw TransportClosed();
  take(lock, dst, bytes);
}

bool Channel::tryRecv(void *dst, size_t bytes) {
  if (closedFlag_.load(std::memory_order_acquire)) throw TransportClosed();
  if (queued_.load(std::memory_order_acquire) == 0) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) throw TransportClosed();
  if (queue_.empty()) return false;
  take(lock, dst, bytes);
  return true;
}

void Channel::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    closedFlag_ = true;
  }
  cv_.notify_all();
}

size_t Channel::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

namespace {
/// The idle limit of a plan's pool: what a step holds in flight at once
/// (never less than its largest message, so every buffer can be kept).
size_t idleLimitOf(const plan::Plan &plan) {
  plan::TransferWalk walk = plan::walkTransfers(plan);
  return size_t(std::max(walk.peakBytesInFlight, walk.largestMessage));
}
} // namespace

ChannelTransport::ChannelTransport(const plan::Plan &plan) : pool_(idleLimitOf(plan)) {
  for (const plan::ChannelRoute &r : plan::channelRoutes(plan))
    channels_.emplace(r.channel, std::make_unique<Channel>(pool_));
}

ChannelTransport::ChannelTransport(const std::vector<uint32_t> &channels, size_t idleLimit)
    : pool_(idleLimit) {
  for (uint32_t id : channels)
    if (!channels_.count(id)) channels_.emplace(id, std::make_unique<Channel>(pool_));
}

Channel &ChannelTransport::get(uint32_t channel) {
  auto it = channels_.find(channel);
  MPC_ASSERT(it != channels_.end(), "unknown channel " + std::to_string(channel));
  return *it->second;
}

void ChannelTransport::send(uint32_t channel, const void *src, size_t bytes) {
  get(channel).send(src, bytes);
}

void ChannelTransport::recv(uint32_t channel, void *dst, size_t bytes) {
  get(channel).recv(dst, bytes);
}

bool ChannelTransport::tryRecv(uint32_t channel, void *dst, size_t bytes) {
  return get(channel).tryRecv(dst, bytes);
}

void ChannelTransport::watch(uint32_t channel, WakeWord &wake) {
  get(channel).watch(wake);
  if (std::find(watchers_.begin(), watchers_.end(), &wake) == watchers_.end())
    watchers_.push_back(&wake);
}

void ChannelTransport::close() {
  closed_ = true;
  for (auto &entry : channels_) entry.second->close();
  for (WakeWord *w : watchers_) w->bump();
}

} // namespace mpc::runtime
