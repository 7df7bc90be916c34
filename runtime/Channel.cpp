//===- runtime/Channel.cpp - in-process send/recv between device workers -===//
//
// Mailboxes with one lock and condition variable each. A message is a
// private copy of the sender's bytes: the receiver copies it into its own
// memory, so no device ever reads another device's arena.
//
//===----------------------------------------------------------------------===//
#include "runtime/Channel.h"

#include "runtime/WakeWord.h"
#include "support/Error.h"

#include <cstring>

namespace mpc::runtime {

void Channel::send(const void *src, size_t bytes) {
  std::vector<uint8_t> msg;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) throw TransportClosed();
    if (!free_.empty()) {
      msg = std::move(free_.back());
      free_.pop_back();
    }
  }
  msg.resize(bytes);
  if (bytes) std::memcpy(msg.data(), src, bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) throw TransportClosed();
    queue_.push_back(std::move(msg));
    queued_.store(queue_.size(), std::memory_order_release);
  }
  cv_.notify_one();
}

void Channel::recv(void *dst, size_t bytes) {
  for (int round = 0; spinRound(round); ++round)
    if (queued_.load(std::memory_order_acquire) != 0 || closedFlag_.load(std::memory_order_acquire))
      break;
  std::vector<uint8_t> msg;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (closed_) throw TransportClosed();
    msg = std::move(queue_.front());
    queue_.pop_front();
    queued_.store(queue_.size(), std::memory_order_release);
  }
  MPC_ASSERT(msg.size() == bytes, "channel message of " + std::to_string(msg.size()) +
                                      " bytes received into a buffer of " +
                                      std::to_string(bytes));
  if (bytes) std::memcpy(dst, msg.data(), bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(msg));
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

ChannelTransport::ChannelTransport(const plan::Plan &plan) {
  for (const plan::DeviceProgram &dev : plan.devices)
    for (const plan::Instr &in : dev.instrs)
      if (in.kind != plan::InstrKind::Kernel && !channels_.count(in.channel))
        channels_.emplace(in.channel, std::make_unique<Channel>());
}

ChannelTransport::ChannelTransport(const std::vector<uint32_t> &channels) {
  for (uint32_t id : channels)
    if (!channels_.count(id)) channels_.emplace(id, std::make_unique<Channel>());
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

void ChannelTransport::close() {
  closed_ = true;
  for (auto &entry : channels_) entry.second->close();
}

} // namespace mpc::runtime
