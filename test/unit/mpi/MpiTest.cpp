//===- test/unit/mpi/MpiTest.cpp - the MPI group and transport ----------===//
//
// Runs under mpirun (ctest starts it with -np 2 and -np 3; see
// CMakeLists.txt): every rank runs every test, and the job fails when one
// rank fails. Covers the transport's messages between ranks (sizes from 0
// bytes to several MiB, many steps, in order, mixed with an in-process
// channel), close() waking a receive that would never be matched, and the
// group's collectives and point-to-point moves.
//
//===----------------------------------------------------------------------===//
#include "runtime/job/Gather.h"
#include "runtime/mpi/MpiJob.h"
#include "runtime/mpi/MpiTransport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

namespace mpc::runtime::mpi {
namespace {

job::ProcessGroup *group = nullptr;

/// A fresh communicator per test, so one test's messages never meet
/// another's.
struct Comm {
  Comm() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  }
  ~Comm() {
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
  }
  MPI_Comm comm;
};

std::vector<uint8_t> pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t((i * 31 + size_t(seed) * 7) % 251);
  return v;
}

TEST(MpiTransport, MessagesBetweenRanksArriveWholeAndInOrder) {
  Comm c;
  int rank = group->rank();
  // 1: rank 0 -> rank 1; 2: rank 1 -> rank 0; 3: within rank 0.
  MpiTransport t({{1, 0, 1}, {2, 1, 0}, {3, 0, 0}}, c.comm);
  const size_t sizes[] = {0, 1, 4096, 3u << 20, 17};
  for (int step = 0; step < 5; ++step) {
    for (size_t n : sizes) {
      if (rank == 0) {
        std::vector<uint8_t> out = pattern(n, step);
        t.send(1, out.data(), n);
        t.send(3, out.data(), n);
        std::vector<uint8_t> local(n), back(n);
        t.recv(3, local.data(), n);
        EXPECT_EQ(local, out);
        t.recv(2, back.data(), n);
        for (uint8_t &b : out) b = uint8_t(b + 1);
        EXPECT_EQ(back, out) << "step " << step << ", " << n << " bytes";
      } else if (rank == 1) {
        std::vector<uint8_t> in(n);
        t.recv(1, in.data(), n);
        EXPECT_EQ(in, pattern(n, step)) << "step " << step << ", " << n << " bytes";
        for (uint8_t &b : in) b = uint8_t(b + 1);
        t.send(2, in.data(), n);
      }
    }
    t.finishStep();
  }
}

TEST(MpiTransport, CloseWakesAReceiveThatIsNeverMatched) {
  Comm c;
  MpiTransport t({{5, 0, 1}}, c.comm);
  if (group->rank() != 1) return;
  auto start = std::chrono::steady_clock::now();
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    t.close();
  });
  std::vector<uint8_t> buf(64);
  EXPECT_THROW(t.recv(5, buf.data(), buf.size()), TransportClosed);
  closer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THROW(t.send(5, buf.data(), 0), TransportClosed);
}

TEST(MpiTransport, ARingOverEveryRank) {
  Comm c;
  int r = group->rank(), n = group->size();
  std::vector<MpiTransport::Route> routes;
  for (int k = 0; k < n; ++k) routes.push_back({uint32_t(100 + k), k, (k + 1) % n});
  MpiTransport t(routes, c.comm);
  std::vector<uint8_t> token = pattern(1000, 0);
  if (r == 0) t.send(100, token.data(), token.size());
  std::vector<uint8_t> in(token.size());
  t.recv(uint32_t(100 + (r + n - 1) % n), in.data(), in.size());
  if (r != 0) t.send(uint32_t(100 + r), in.data(), in.size());
  t.finishStep();
  EXPECT_EQ(in, token);
}

TEST(MpiGroup, AllGatherAndMovesToRankZero) {
  int r = group->rank(), n = group->size();
  std::vector<std::string> all = group->allGather(std::string(size_t(r) * 3, char('a' + r)));
  ASSERT_EQ(all.size(), size_t(n));
  for (int k = 0; k < n; ++k) EXPECT_EQ(all[size_t(k)], std::string(size_t(k) * 3, char('a' + k)));
  for (int owner = 0; owner < n; ++owner) {
    std::vector<uint8_t> bytes;
    if (r == owner) bytes = pattern(5u << 20, owner);
    job::moveToRoot(*group, owner, bytes);
    if (r == 0) {
      EXPECT_EQ(bytes, pattern(5u << 20, owner)) << "from rank " << owner;
    }
  }
  EXPECT_GE(group->localSize(), 1);
  EXPECT_LT(group->localRank(), group->localSize());
}

} // namespace
} // namespace mpc::runtime::mpi

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (mpc::runtime::job::launcherVariable().empty()) {
    std::fprintf(stderr, "unit_mpi: run it under mpirun -np 2 (or more)\n");
    return 1;
  }
  std::unique_ptr<mpc::runtime::job::ProcessGroup> g = mpc::runtime::mpi::joinJob();
  if (g->size() < 2) {
    std::fprintf(stderr, "unit_mpi: needs at least 2 ranks, got %d\n", g->size());
    return 1;
  }
  mpc::runtime::mpi::group = g.get();
  // One rank's report is enough to read; every rank still runs every test.
  if (g->rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  std::vector<std::string> all = g->allGather(failed ? "1" : "0");
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != "0") {
      if (g->rank() == 0) std::fprintf(stderr, "unit_mpi: rank %zu failed\n", r);
      failed = 1;
    }
  return failed ? 1 : 0;
}
