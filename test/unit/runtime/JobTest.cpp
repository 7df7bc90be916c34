//===- test/unit/runtime/JobTest.cpp - a plan spread over processes -----===//
//
// The parts of a job of several ranks that need no MPI: the rank map, the
// start-up records, executors that host a subset of the devices, and the
// trainer itself, run as two "ranks" on two threads of this process through
// an in-process ProcessGroup. The results must equal the one-process run's
// bit for bit: the loss lines, and the checkpoint rank 0 writes after
// gathering the other rank's tensors. (test/lit/mpi/ runs the same under
// mpirun.)
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "plan/PlanIO.h"
#include "runtime/Channel.h"
#include "runtime/Executor.h"
#include "runtime/job/Agreement.h"
#include "runtime/job/RankMap.h"
#include "runtime/train/Trainer.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "test/unit/SeedModel.h"

#include <gtest/gtest.h>

#include <barrier>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

namespace mpc::runtime {
namespace {

plan::Plan planWithDevices(int n) {
  plan::Plan p;
  for (int d = 0; d < n; ++d) {
    plan::DeviceProgram dev;
    dev.device = "cpu:" + std::to_string(d);
    p.devices.push_back(dev);
  }
  return p;
}

TEST(RankMap, DefaultBlocksAreContiguousWithTheRemainderFirst) {
  EXPECT_EQ(job::assignRanks(planWithDevices(3), 2, ""), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(job::assignRanks(planWithDevices(4), 3, ""), (std::vector<int>{0, 0, 1, 2}));
  EXPECT_EQ(job::assignRanks(planWithDevices(5), 2, ""), (std::vector<int>{0, 0, 0, 1, 1}));
  EXPECT_EQ(job::assignRanks(planWithDevices(3), 1, ""), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(job::assignRanks(planWithDevices(3), 3, ""), (std::vector<int>{0, 1, 2}));
}

TEST(RankMap, AnExplicitMapPlacesEachDevice) {
  plan::Plan p = planWithDevices(3);
  EXPECT_EQ(job::assignRanks(p, 2, "cpu:0=1,cpu:1=0,cpu:2=1"), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(job::devicesOfRank(p, {1, 0, 1}, 1), "cpu:0, cpu:2");
}

TEST(RankMap, MoreRanksThanDevicesIsAUserError) {
  try {
    job::assignRanks(planWithDevices(2), 3, "");
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("the job has 3 ranks but the plan has 2 devices"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(job::assignRanks(planWithDevices(3), 2, "cpu:0=0,cpu:1=0,cpu:2=01x"), UserError);
  EXPECT_THROW(job::assignRanks(planWithDevices(3), 2, "cpu:0=0,,cpu:1=1,cpu:2=1"), UserError);
}

TEST(Agreement, RecordsRoundTripAnyBytes) {
  job::StartupRecord r = {{"--input", "x=a b:c.npy"}, {"k", ""}, {"", std::string("\0:9", 3)}};
  EXPECT_EQ(job::decodeRecord(job::encodeRecord(r)), r);
}

TEST(Agreement, TheFirstDifferingRankAndKeyAreNamed) {
  job::StartupRecord a = {{"--steps", "4"}, {"--seed", "1"}};
  job::StartupRecord b = {{"--steps", "4"}, {"--seed", "2"}};
  EXPECT_EQ(job::compareRecords({a, a, a}), "");
  std::string msg = job::compareRecords({a, a, b, b});
  EXPECT_EQ(msg.rfind("rank 2 disagrees with rank 0 on --seed: '2' (rank 0: '1')", 0), 0u) << msg;
}

/// Forwards to one transport that several executors of this process share,
/// as the ranks of a job share the network.
class SharedTransport : public Transport {
public:
  explicit SharedTransport(std::shared_ptr<Transport> t) : t_(std::move(t)) {}
  void send(uint32_t c, const void *src, size_t n) override { t_->send(c, src, n); }
  void recv(uint32_t c, void *dst, size_t n) override { t_->recv(c, dst, n); }
  void close() override { t_->close(); }
  bool closed() const override { return t_->closed(); }

private:
  std::shared_ptr<Transport> t_;
};

std::vector<float> batchOf(const plan::TensorRef &t, int step) {
  std::vector<float> v(size_t(t.numElements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = float(int((i * 7 + size_t(step) * 13 + t.name.size()) % 17) - 8) / 8.0f;
  return v;
}

TEST(HostedDevices, TwoExecutorsSharingTheDevicesEqualOne) {
  plan::Plan p = compiler::compileModel(test::seedModelJson());
  ASSERT_EQ(p.devices.size(), 3u);
  Executor whole(p);
  auto shared = std::make_shared<ChannelTransport>(p);
  Executor a(p, cpuBackendFactory(), std::make_unique<SharedTransport>(shared), {true, true, false});
  Executor b(p, cpuBackendFactory(), std::make_unique<SharedTransport>(shared), {false, false, true});
  EXPECT_TRUE(a.hosts(0) && a.hosts(1) && !a.hosts(2));
  EXPECT_TRUE(!b.hosts(0) && b.hosts(2));
  for (int step = 0; step < 6; ++step) {
    for (const plan::TensorRef &t : p.inputs) {
      std::vector<float> v = batchOf(t, step);
      whole.write(t, v.data(), v.size() * 4);
      (a.hosts(t) ? a : b).write(t, v.data(), v.size() * 4);
    }
    whole.step();
    std::thread other([&] { b.step(); });
    a.step();
    other.join();
    Executor &lossHost = a.hosts(p.loss) ? a : b;
    float l1 = whole.loss(), l2 = lossHost.loss();
    EXPECT_EQ(std::memcmp(&l1, &l2, 4), 0) << "step " << step;
  }
  for (const plan::TensorRef &t : p.params) {
    Executor &host = a.hosts(t) ? a : b;
    EXPECT_EQ(whole.readFloats(t), host.readFloats(t)) << t.name;
  }
  EXPECT_THROW(a.readFloats(p.params.back()), InternalError); // w2 lives on cpu:2
}

/// Two ranks on two threads of this process: collectives meet at a barrier,
/// point-to-point moves go through per-pair queues, the plan's messages
/// through one shared ChannelTransport.
struct ThreadJob {
  explicit ThreadJob(int n) : size(n), arrive(n), slots(size_t(n)) {}
  int size;
  std::barrier<> arrive;
  std::vector<std::string> slots;
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<std::vector<uint8_t>>> mail;
  std::shared_ptr<Transport> transport;
  std::once_flag transportOnce;
};

class ThreadGroup : public job::ProcessGroup {
public:
  ThreadGroup(ThreadJob &job, int rank) : job_(job), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return job_.size; }
  std::string describe() const override { return "threads"; }
  std::vector<std::string> allGather(const std::string &mine) override {
    job_.slots[size_t(rank_)] = mine;
    job_.arrive.arrive_and_wait();
    std::vector<std::string> all = job_.slots;
    job_.arrive.arrive_and_wait();
    return all;
  }
  void sendBytes(int to, const void *data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(job_.mutex);
    auto *p = static_cast<const uint8_t *>(data);
    job_.mail[{rank_, to}].emplace_back(p, p + bytes);
    job_.cv.notify_all();
  }
  void recvBytes(int from, void *data, size_t bytes) override {
    std::unique_lock<std::mutex> lock(job_.mutex);
    auto &q = job_.mail[{from, rank_}];
    job_.cv.wait(lock, [&] { return !q.empty(); });
    ASSERT_EQ(q.front().size(), bytes);
    std::memcpy(data, q.front().data(), bytes);
    q.pop_front();
  }
  std::unique_ptr<Transport> makeTransport(const plan::Plan &plan,
                                           const std::vector<int> &) override {
    std::call_once(job_.transportOnce,
                   [&] { job_.transport = std::make_shared<ChannelTransport>(plan); });
    return std::make_unique<SharedTransport>(job_.transport);
  }
  [[noreturn]] void abortJob(int) override { std::abort(); }
  [[noreturn]] void exitJob(int) override { std::abort(); }

private:
  ThreadJob &job_;
  int rank_;
};

TEST(Trainer, TwoRanksWriteTheOneProcessCheckpointAndLossLines) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("mpc-dist-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  plan::Plan p = compiler::compileModel(test::seedModelJson());
  std::string planFile = (dir / "plan.bin").string();
  plan::writePlanFile(planFile, p);

  train::TrainOptions base;
  base.planFile = planFile;
  for (const plan::TensorRef &t : p.inputs) {
    io::NpyArray a;
    a.dtype = t.dtype;
    a.shape = t.shape;
    a.shape[0] *= 5; // five batches an epoch
    std::vector<float> v;
    for (int k = 0; k < 5; ++k) {
      std::vector<float> b = batchOf(t, k);
      v.insert(v.end(), b.begin(), b.end());
    }
    a.data.resize(v.size() * 4);
    std::memcpy(a.data.data(), v.data(), a.data.size());
    base.arrays[t.name] = a;
  }
  base.epochs = 3;
  base.shuffle = true;
  base.seed = 3;
  base.logEvery = 1;
  base.printParams = true;

  train::TrainOptions one = base;
  one.save = (dir / "one.st").string();
  std::ostringstream oneOut, oneErr;
  std::unique_ptr<job::ProcessGroup> local = job::makeLocalGroup();
  train::Trainer(one, *local, train::cpuExecutorMaker(), oneOut, oneErr).run();

  train::TrainOptions two = base;
  two.save = (dir / "two.st").string();
  ThreadJob job(2);
  std::ostringstream out[2], err[2];
  std::thread rank1([&] {
    ThreadGroup g(job, 1);
    train::Trainer(two, g, train::cpuExecutorMaker(), out[1], err[1]).run();
  });
  {
    ThreadGroup g(job, 0);
    train::Trainer(two, g, train::cpuExecutorMaker(), out[0], err[0]).run();
  }
  rank1.join();
  // Rank 0 hosts cpu:0 and cpu:1, rank 1 cpu:2 and the loss: the loss lines
  // come from rank 1, the parameters (gathered) from rank 0.
  std::string lossLines, params;
  std::istringstream lines(oneOut.str());
  for (std::string line; std::getline(lines, line);)
    (line.rfind("step ", 0) == 0 ? lossLines : params) += line + "\n";
  EXPECT_EQ(out[1].str(), lossLines);
  EXPECT_EQ(out[0].str(), params);
  EXPECT_NE(lossLines.find("step 15 loss"), std::string::npos);
  EXPECT_EQ(readFileText(one.save), readFileText(two.save));
  fs::remove_all(dir);
}

} // namespace
} // namespace mpc::runtime
