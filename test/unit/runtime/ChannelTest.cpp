//===- test/unit/runtime/ChannelTest.cpp - send/recv between workers ----===//
//
// Messages are private copies delivered in order; a recv blocks until its
// send; close wakes blocked receivers with TransportClosed.
//
//===----------------------------------------------------------------------===//
#include "runtime/Channel.h"

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

} // namespace
} // namespace mpc::runtime
