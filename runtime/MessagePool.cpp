//===- runtime/MessagePool.cpp - message buffers shared by all channels -===//
#include "runtime/MessagePool.h"

namespace mpc::runtime {

MessageBuffer MessagePool::take(size_t bytes) {
  MessageBuffer buf;
  buf.size = bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = idle_.lower_bound(bytes);
    if (it != idle_.end() && it->first / 2 <= bytes) {
      buf.capacity = it->first;
      buf.data = std::move(it->second);
      idleBytes_ -= it->first;
      idle_.erase(it);
      return buf;
    }
    ++allocations_;
  }
  // Allocated outside the lock; not zeroed, the send overwrites it.
  buf.capacity = bytes;
  buf.data = std::make_unique_for_overwrite<uint8_t[]>(bytes == 0 ? 1 : bytes);
  return buf;
}

void MessagePool::give(MessageBuffer buffer) {
  if (!buffer.data) return;
  std::unique_ptr<uint8_t[]> drop; // freed after the lock is released
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idleBytes_ + buffer.capacity > idleLimit_) {
      drop = std::move(buffer.data);
    } else {
      idleBytes_ += buffer.capacity;
      idle_.emplace(buffer.capacity, std::move(buffer.data));
    }
  }
}

size_t MessagePool::idleBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return idleBytes_;
}

size_t MessagePool::allocations() {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

} // namespace mpc::runtime
