//===- runtime/MessagePool.h - message buffers shared by all channels ---===//
//
// An in-process send copies the sender's bytes into a message buffer, and
// the receiver copies them out. Buffers are recycled, so a step allocates
// nothing once the first one has run. They used to be recycled per channel,
// which kept one buffer per channel alive for the whole run: a pipelined plan
// has a channel per edge and micro-batch, so that was the size of every
// transfer of a step, resident for good, and a second copy of each
// activation and gradient that crosses devices.
//
// The pool is shared by every channel of a transport, so the buffer a
// receive has just emptied serves the next send anywhere, and the memory held
// is about the bytes in flight at once, not the bytes sent per step. It is
// also bounded: at most `idleLimit` bytes wait idle in it; a buffer returned
// beyond that is freed. ChannelTransport sets the limit to the plan's largest
// number of bytes in flight at once, so the steady state still allocates
// nothing. A buffer is reused for a message of at least half its capacity,
// so a small message never pins a large buffer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace mpc::runtime {

/// One message's bytes: `size` of them, in a buffer of `capacity`.
struct MessageBuffer {
  std::unique_ptr<uint8_t[]> data;
  size_t capacity = 0;
  size_t size = 0;
};

class MessagePool {
public:
  explicit MessagePool(size_t idleLimit) : idleLimit_(idleLimit) {}

  /// A buffer of `bytes` bytes (contents undefined): the smallest idle one
  /// that fits within twice the size, else a new one.
  MessageBuffer take(size_t bytes);
  /// Returns a buffer for reuse, or frees it when the idle bytes would
  /// exceed the limit.
  void give(MessageBuffer buffer);

  size_t idleLimit() const { return idleLimit_; }
  /// Bytes in idle buffers now.
  size_t idleBytes();
  /// Buffers allocated since construction (a steady state adds none).
  size_t allocations();

private:
  std::mutex mutex_;
  std::multimap<size_t, std::unique_ptr<uint8_t[]>> idle_; ///< by capacity
  size_t idleBytes_ = 0;
  size_t idleLimit_;
  size_t allocations_ = 0;
};

} // namespace mpc::runtime
