//===- test/unit/runtime_cuda/NcclBootstrapTest.cpp - the job's start-up -===//
//
// What a gpu plan under mpirun exchanges before it runs, with a scripted
// process group standing in for MPI: the hex encoding of NCCL's unique id
// (and a real id's round trip where the build has NCCL: ncclGetUniqueId
// needs no GPU), rank 0's id reaching every rank, and the error a rank
// without a GPU reports.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/NcclBootstrap.h"

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/GpuAssignment.h"
#include "support/Error.h"

#include <gtest/gtest.h>

namespace mpc::runtime::cuda {
namespace {

/// Rank `rank` of `size`; allGather answers with `others` and this rank's
/// record in its place, and remembers what it was given.
class ScriptedGroup : public job::ProcessGroup {
public:
  ScriptedGroup(int rank, int size, std::vector<std::string> others)
      : rank_(rank), size_(size), others_(std::move(others)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return "scripted"; }
  std::vector<std::string> allGather(const std::string &mine) override {
    gathered.push_back(mine);
    std::vector<std::string> all = others_;
    all.resize(size_t(size_));
    all[size_t(rank_)] = mine;
    return all;
  }
  void sendBytes(int, const void *, size_t) override { throw InternalError("unexpected"); }
  void recvBytes(int, void *, size_t) override { throw InternalError("unexpected"); }
  std::unique_ptr<Transport> makeTransport(const plan::Plan &, const std::vector<int> &) override {
    throw InternalError("unexpected");
  }
  [[noreturn]] void abortJob(int) override { throw InternalError("unexpected"); }
  [[noreturn]] void exitJob(int) override { throw InternalError("unexpected"); }

  std::vector<std::string> gathered;

private:
  int rank_, size_;
  std::vector<std::string> others_;
};

TEST(NcclBootstrap, HexRoundTripsEveryByte) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes += char(c);
  std::string hex = toHex(bytes);
  EXPECT_EQ(hex.size(), 512u);
  EXPECT_EQ(hex.substr(0, 6), "000102");
  EXPECT_EQ(fromHex(hex), bytes);
  EXPECT_THROW(fromHex("abc"), InternalError);
  EXPECT_THROW(fromHex("zz"), InternalError);
  EXPECT_THROW(fromHex("AB"), InternalError); // toHex writes lower case only
}

TEST(NcclBootstrap, OtherRanksTakeRankZerosId) {
  ScriptedGroup rank1(1, 3, {"0a0b", "", ""});
  EXPECT_EQ(agreeNcclUniqueId(rank1), "0a0b");
  ASSERT_EQ(rank1.gathered.size(), 1u);
  EXPECT_EQ(rank1.gathered[0], ""); // only rank 0 sends an id
}

TEST(NcclBootstrap, RealUniqueIdRoundTrips) {
  if (!ncclAvailable()) GTEST_SKIP() << "this build has no NCCL";
  ScriptedGroup rank0(0, 2, {"", ""});
  std::string id = agreeNcclUniqueId(rank0);
  EXPECT_EQ(id.size(), 256u); // NCCL_UNIQUE_ID_BYTES, hex
  ASSERT_EQ(rank0.gathered.size(), 1u);
  EXPECT_EQ(rank0.gathered[0], id);
  EXPECT_EQ(toHex(fromHex(id)), id);
  EXPECT_EQ(fromHex(id).size(), 128u);
}

TEST(NcclBootstrap, ARankWithoutAGpuSaysWhichRankAndDevice) {
  if (cudaAvailable()) GTEST_SKIP() << "needs a machine where no CUDA device is visible";
  plan::Plan p;
  for (const char *d : {"gpu:0", "gpu:1"}) {
    plan::DeviceProgram prog;
    prog.device = d;
    p.devices.push_back(prog);
  }
  ScriptedGroup rank1(1, 2, {"1 host", ""});
  try {
    prepareCudaRun(p, CudaOptions{}, {0, 1}, rank1);
    FAIL() << "expected an error";
  } catch (const UserError &e) {
    // The driver's reason may follow in parentheses.
    EXPECT_EQ(e.message().rfind("plan uses gpu:1 but no CUDA device is visible", 0), 0u)
        << e.message();
  }
  ASSERT_EQ(rank1.gathered.size(), 1u);
  HostRecord mine = decodeHostRecord(rank1.gathered[0]);
  EXPECT_EQ(mine.gpuDevices, 1);
  EXPECT_FALSE(mine.host.empty());
}

} // namespace
} // namespace mpc::runtime::cuda
