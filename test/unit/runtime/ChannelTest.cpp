//===- test/unit/runtime/ChannelTest.cpp - send/recv between workers ----===//
//
// Messages are private copies delivered in order; a recv blocks until its
// send; close wakes blocked receivers with TransportClosed. Polling (tryRecv,
// watch) for devices sharing a thread; the shared, bounded buffer pool; the
// walk that sizes it.
//
//===----------------------------------------------------------------------===//
#include "plan/TransferWalk.h"
#include "runtime/Channel.h"
#include "runtime/WakeWord.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace mpc::runtime {
namespace {

TEST(Channel, DeliversPrivateCopiesInOrder) {
  ChannelTransport t(std::vector<uint32_t>{7});
  std::vector<float> a = {1, 2, 3};
  t.send(7, a.data(), 12);
  a[0] = 100; // the message must not alias the sender's memory
  std::vector<float> b = {4, 5, 6};
  t.send(7, b.data(), 12);
  std::vector<float> got(3);
  t.recv(7, got.data(), 12);
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3}));
  t.recv(7, got.data(), 12);
  EXPECT_EQ(got, (std::vector<float>{4, 5, 6}));
}

TEST(Channel, RecvWaitsForSendOnAnotherThread) {
  ChannelTransport t(std::vector<uint32_t>{1, 2});
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) {
      int v = i;
      t.send(1, &v, 4);
      int back;
      t.recv(2, &back, 4);
      EXPECT_EQ(back, i * 2);
    }
  });
  for (int i = 0; i < 1000; ++i) {
    int v;
    t.recv(1, &v, 4);
    EXPECT_EQ(v, i);
    v *= 2;
    t.send(2, &v, 4);
  }
  producer.join();
}

TEST(Channel, CloseWakesBlockedReceivers) {
  ChannelTransport t(std::vector<uint32_t>{3});
  std::atomic<int> woke{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.emplace_back([&] {
      float x;
      try {
        t.recv(3, &x, 4);
      } catch (const TransportClosed &) {
        ++woke;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t.close();
  for (std::thread &w : waiters) w.join();
  EXPECT_EQ(woke.load(), 3);
  EXPECT_TRUE(t.closed());
  float x = 0;
  EXPECT_THROW(t.send(3, &x, 4), TransportClosed);
}

TEST(Channel, TryRecvTakesOnlyWhatIsThere) {
  ChannelTransport t(std::vector<uint32_t>{4});
  EXPECT_TRUE(t.canPoll());
  int v = 0;
  EXPECT_FALSE(t.tryRecv(4, &v, 4));
  int sent = 42;
  t.send(4, &sent, 4);
  EXPECT_TRUE(t.tryRecv(4, &v, 4));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(t.tryRecv(4, &v, 4));
  t.close();
  EXPECT_THROW(t.tryRecv(4, &v, 4), TransportClosed);
}

TEST(Channel, WatchedChannelsBumpTheWordOnSendAndClose) {
  ChannelTransport t(std::vector<uint32_t>{1, 2, 3});
  WakeWord wake;
  t.watch(1, wake);
  t.watch(2, wake);
  int v = 1;
  uint32_t before = wake.load();
  t.send(3, &v, 4); // not watched
  EXPECT_EQ(wake.load(), before);
  t.send(2, &v, 4);
  EXPECT_NE(wake.load(), before);
  // A thread asleep on the word wakes for a send from another thread.
  uint32_t seen = wake.load();
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t.send(1, &v, 4);
  });
  wake.waitWhile(seen);
  EXPECT_TRUE(t.tryRecv(1, &v, 4));
  sender.join();
  seen = wake.load();
  t.close();
  EXPECT_NE(wake.load(), seen);
}

TEST(MessagePool, ReusesTheSmallestFittingBuffer) {
  MessagePool pool(1 << 20);
  MessageBuffer a = pool.take(1000), b = pool.take(4000);
  EXPECT_EQ(pool.allocations(), 2u);
  uint8_t *small = a.data.get(), *large = b.data.get();
  pool.give(std::move(a));
  pool.give(std::move(b));
  EXPECT_EQ(pool.idleBytes(), 5000u);
  MessageBuffer c = pool.take(900); // the 1000-byte buffer fits best
  EXPECT_EQ(c.data.get(), small);
  EXPECT_EQ(c.size, 900u);
  MessageBuffer d = pool.take(1500); // 4000 is more than twice 1500: a new one
  EXPECT_NE(d.data.get(), large);
  EXPECT_EQ(pool.allocations(), 3u);
  MessageBuffer e = pool.take(2500);
  EXPECT_EQ(e.data.get(), large);
  EXPECT_EQ(pool.idleBytes(), 0u);
}

TEST(MessagePool, KeepsNoMoreThanTheLimitIdle) {
  MessagePool pool(3000);
  MessageBuffer a = pool.take(2000), b = pool.take(2000);
  pool.give(std::move(a));
  pool.give(std::move(b)); // would make 4000 idle: freed
  EXPECT_EQ(pool.idleBytes(), 2000u);
}

/// The buffer a receive empties serves the next send on any channel, so a
/// transport holds about the bytes in flight, not a buffer per channel.
TEST(Channel, ChannelsShareBuffers) {
  ChannelTransport t(std::vector<uint32_t>{1, 2, 3, 4});
  std::vector<float> x(1024, 1.f), y(1024);
  for (int step = 0; step < 3; ++step)
    for (uint32_t c = 1; c <= 4; ++c) {
      t.send(c, x.data(), 4096);
      t.recv(c, y.data(), 4096);
    }
  EXPECT_EQ(t.pool().allocations(), 1u);
  EXPECT_EQ(t.pool().idleBytes(), 4096u);
}

plan::Plan transferPlan(bool stuck) {
  plan::Plan p;
  p.devices.resize(2);
  for (auto &d : p.devices)
    for (uint64_t bytes : {16, 32}) {
      plan::Buffer b;
      b.id = uint32_t(d.buffers.size());
      b.bytes = bytes;
      d.buffers.push_back(b);
    }
  auto send = [](uint32_t buf, uint32_t channel) {
    plan::Instr in;
    in.kind = plan::InstrKind::Send;
    in.inputs = {buf};
    in.channel = channel;
    return in;
  };
  auto recv = [](uint32_t buf, uint32_t channel) {
    plan::Instr in;
    in.kind = plan::InstrKind::Recv;
    in.output = buf;
    in.channel = channel;
    return in;
  };
  // cpu:0 sends 16 then 32 bytes; cpu:1 receives both, then answers with 16.
  p.devices[0].instrs = {send(0, 1), send(1, 2), recv(0, 3)};
  p.devices[1].instrs = {recv(0, 1), recv(1, 2), send(0, stuck ? 9 : 3)};
  return p;
}

TEST(TransferWalk, PeakBytesInFlightAndDeadlock) {
  plan::TransferWalk w = plan::walkTransfers(transferPlan(false));
  EXPECT_FALSE(w.stuck);
  EXPECT_EQ(w.peakBytesInFlight, 48u);
  EXPECT_EQ(w.largestMessage, 32u);
  w = plan::walkTransfers(transferPlan(true));
  EXPECT_TRUE(w.stuck);
  EXPECT_EQ(w.device, 0u);
  EXPECT_EQ(w.instr, 2u);
  // The transport of a plan keeps what a step holds in flight.
  EXPECT_EQ(ChannelTransport(transferPlan(false)).pool().idleLimit(), 48u);
}

} // namespace
} // namespace mpc::runtime
