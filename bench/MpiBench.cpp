//===- bench/MpiBench.cpp - what crossing processes costs ----------------===//
//
// A plain program run under mpirun (all ranks take part):
//   mpirun --oversubscribe -np 3 build/bench/mpc-mpi-bench [--quick]
// Two tables, each with its baseline measured in the same run:
//   1. Transport: one-way time and bandwidth of a message between ranks 0
//      and 1 (MpiTransport, ping-pong halved) against the same ping-pong
//      between two threads of rank 0 through in-process channels
//      (ChannelTransport), for 4 KiB to 64 MiB. Ratio = MPI / in-process.
//   2. The seed model's training step (3 devices, regression3) through the
//      trainer, with the devices spread over all ranks of the job, against
//      the same trainer in one process (rank 0 alone). Ratio = R ranks / 1.
// Figures are medians of 5 repetitions; the machines are shared, so read
// ratios, not absolute times.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile.h"
#include "plan/PlanIO.h"
#include "runtime/Channel.h"
#include "runtime/mpi/MpiJob.h"
#include "runtime/mpi/MpiTransport.h"
#include "runtime/train/Trainer.h"
#include "support/FileIO.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace {

using namespace mpc;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Seconds for one message one way: `rounds` ping-pongs of `bytes`, halved.
template <typename Send, typename Recv>
double pingPong(bool first, size_t bytes, int rounds, Send send, Recv recv) {
  std::vector<uint8_t> buf(bytes, 1);
  auto start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    if (first) {
      send(buf);
      recv(buf);
    } else {
      recv(buf);
      send(buf);
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count() / rounds / 2;
}

int roundsFor(size_t bytes, bool quick) {
  int r = bytes <= (64u << 10) ? 2000 : bytes <= (1u << 20) ? 200 : bytes <= (16u << 20) ? 20 : 6;
  return quick ? std::max(2, r / 10) : r;
}

void transportTable(runtime::job::ProcessGroup &group, bool quick) {
  const size_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 64u << 20};
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  runtime::mpi::MpiTransport mpi({{1, 0, 1}, {2, 1, 0}}, comm);
  if (group.rank() == 0)
    std::printf("%-10s %14s %14s %12s %12s %8s\n", "bytes", "mpi one-way", "in-process",
                "mpi GB/s", "in-proc GB/s", "ratio");
  for (size_t bytes : sizes) {
    int rounds = roundsFor(bytes, quick);
    std::vector<double> tm, tl;
    for (int rep = 0; rep < 5; ++rep) {
      group.allGather("");
      if (group.rank() <= 1) {
        bool first = group.rank() == 0;
        tm.push_back(pingPong(
            first, bytes, rounds,
            [&](std::vector<uint8_t> &b) {
              mpi.send(first ? 1 : 2, b.data(), b.size());
              mpi.finishStep();
            },
            [&](std::vector<uint8_t> &b) { mpi.recv(first ? 2 : 1, b.data(), b.size()); }));
      }
      group.allGather("");
      if (group.rank() == 0) {
        runtime::ChannelTransport local(std::vector<uint32_t>{1, 2});
        double other = 0;
        std::thread peer([&] {
          other = pingPong(
              false, bytes, rounds,
              [&](std::vector<uint8_t> &b) { local.send(2, b.data(), b.size()); },
              [&](std::vector<uint8_t> &b) { local.recv(1, b.data(), b.size()); });
        });
        tl.push_back(pingPong(
            true, bytes, rounds,
            [&](std::vector<uint8_t> &b) { local.send(1, b.data(), b.size()); },
            [&](std::vector<uint8_t> &b) { local.recv(2, b.data(), b.size()); }));
        peer.join();
      }
    }
    if (group.rank() == 0) {
      double m = median(tm), l = median(tl);
      std::printf("%-10zu %11.1f us %11.1f us %12.2f %12.2f %7.2fx\n", bytes, m * 1e6, l * 1e6,
                  double(bytes) / m / 1e9, double(bytes) / l / 1e9, m / l);
    }
  }
  MPI_Comm_free(&comm);
}

/// Seconds per step of the trainer on `group` (all its ranks take part).
double trainerStep(runtime::job::ProcessGroup &group, const std::string &planFile,
                   const plan::Plan &p, int64_t steps) {
  runtime::train::TrainOptions opt;
  opt.planFile = planFile;
  for (const plan::TensorRef &t : p.inputs) {
    io::NpyArray a;
    a.dtype = t.dtype;
    a.shape = t.shape;
    a.data.resize(size_t(t.numElements()) * 4);
    for (size_t i = 0; i < a.data.size() / 4; ++i) {
      float v = float(int(i % 13) - 6) / 6.0f;
      std::memcpy(a.data.data() + 4 * i, &v, 4);
    }
    opt.arrays[t.name] = a;
  }
  opt.steps = steps;
  opt.logEvery = steps;
  std::ostringstream out, err;
  runtime::train::Trainer trainer(opt, group, runtime::train::cpuExecutorMaker(), out, err);
  trainer.prepare();
  group.allGather("");
  auto start = Clock::now();
  trainer.runSteps();
  group.allGather("");
  return std::chrono::duration<double>(Clock::now() - start).count() / double(steps);
}

void seedTable(runtime::job::ProcessGroup &group, bool quick) {
  plan::Plan p = compiler::compileModel(
      readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json"));
  std::string planFile = "/tmp/mpc-mpi-bench-" + std::to_string(getppid()) + ".bin";
  if (group.rank() == 0) plan::writePlanFile(planFile, p);
  group.allGather("");
  int64_t steps = quick ? 300 : 3000;
  std::vector<double> many, one;
  for (int rep = 0; rep < 5; ++rep) {
    if (size_t(group.size()) <= p.devices.size())
      many.push_back(trainerStep(group, planFile, p, steps));
    if (group.rank() == 0) {
      std::unique_ptr<runtime::job::ProcessGroup> local = runtime::job::makeLocalGroup();
      one.push_back(trainerStep(*local, planFile, p, steps));
    }
    group.allGather("");
  }
  if (group.rank() == 0) {
    std::remove(planFile.c_str());
    double m = median(many), o = median(one);
    std::printf("\nseed model step (3 devices), %lld steps x 5\n", (long long)steps);
    std::printf("  %d ranks: %8.1f us\n  1 process: %8.1f us\n  ratio: %.2fx\n", group.size(),
                m * 1e6, o * 1e6, m / o);
  }
}

} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  if (runtime::job::launcherVariable().empty()) {
    std::fprintf(stderr, "mpc-mpi-bench: run it under mpirun, e.g. mpirun --oversubscribe -np 3 "
                         "%s\n", argv[0]);
    return 1;
  }
  try {
    std::unique_ptr<runtime::job::ProcessGroup> group = runtime::mpi::joinJob();
    if (group->size() < 2) {
      std::fprintf(stderr, "mpc-mpi-bench: needs 2 or more ranks (3 for the seed table)\n");
      return 1;
    }
    if (group->rank() == 0)
      std::printf("mpc-mpi-bench: %s, %u hardware threads on rank 0's host\n",
                  group->describe().c_str(), std::thread::hardware_concurrency());
    transportTable(*group, quick);
    seedTable(*group, quick);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mpc-mpi-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
