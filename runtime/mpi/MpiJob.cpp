//===- runtime/mpi/MpiJob.cpp - the MPI process group -------------------===//
//
// Two duplicates of MPI_COMM_WORLD, both with MPI_ERRORS_RETURN: one for the
// group's own collectives and gathers, one for the plan's messages, so a
// gather between steps can never match a message of a step.
//
//===----------------------------------------------------------------------===//
#include "runtime/mpi/MpiJob.h"

#include "runtime/mpi/MpiCheck.h"
#include "runtime/mpi/MpiTransport.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace mpc::runtime::mpi {

namespace {

class MpiGroup : public job::ProcessGroup {
public:
  MpiGroup() {
    int provided = 0;
    mpiCheck(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
             "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      throw UserError("", "", "the MPI library gives thread level " + std::to_string(provided) +
                                  ", and mpc's ranks need MPI_THREAD_MULTIPLE (every device "
                                  "worker sends and receives itself); use an MPI built with "
                                  "thread support, such as Debian's OpenMPI");
    }
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    for (MPI_Comm *c : {&control_, &data_}) {
      mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, c), "MPI_Comm_dup");
      MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
    }
    MPI_Comm host;
    mpiCheck(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host),
             "MPI_Comm_split_type");
    MPI_Comm_rank(host, &localRank_);
    MPI_Comm_size(host, &localSize_);
    MPI_Comm_free(&host);
  }
  ~MpiGroup() override {
    MPI_Comm_free(&control_);
    MPI_Comm_free(&data_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  std::string describe() const override {
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    return "an MPI " + std::to_string(major) + "." + std::to_string(minor) + " job of " +
           std::to_string(size_) + " ranks";
  }

  std::vector<std::string> allGather(const std::string &mine) override {
    MPC_ASSERT(mine.size() < size_t(INT_MAX), "start-up record too large");
    int n = int(mine.size());
    std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    mpiCheck(MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, control_), "MPI_Allgather");
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[size_t(r)] = int(total);
      total += sizes[size_t(r)];
    }
    MPC_ASSERT(total < INT_MAX, "start-up records too large");
    std::string all(size_t(total), '\0');
    mpiCheck(MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(),
                            MPI_CHAR, control_),
             "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(sizes[size_t(r)])));
    return out;
  }

  void sendBytes(int to, const void *data, size_t bytes) override {
    const auto *p = static_cast<const uint8_t *>(data);
    forEachChunk(bytes, [&](size_t, size_t off, size_t n) {
      mpiCheck(MPI_Send(p + off, int(n), MPI_BYTE, to, 0, control_), "MPI_Send to rank " +
                                                                         std::to_string(to));
    });
  }
  void recvBytes(int from, void *data, size_t bytes) override {
    auto *p = static_cast<uint8_t *>(data);
    forEachChunk(bytes, [&](size_t, size_t off, size_t n) {
      MPI_Status st;
      mpiCheck(MPI_Recv(p + off, int(n), MPI_BYTE, from, 0, control_, &st),
               "MPI_Recv from rank " + std::to_string(from));
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      MPC_ASSERT(size_t(got) == n, "message from rank " + std::to_string(from) +
                                       " has the wrong size");
    });
  }

  std::unique_ptr<Transport> makeTransport(const plan::Plan &plan,
                                           const std::vector<int> &rankOf) override {
    return std::make_unique<MpiTransport>(plan, rankOf, data_);
  }

  [[noreturn]] void abortJob(int code) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; if it did, still stop
  }
  [[noreturn]] void exitJob(int code) override {
    std::fflush(nullptr);
    MPI_Comm_free(&control_);
    MPI_Comm_free(&data_);
    MPI_Finalize();
    std::_Exit(code);
  }

private:
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  MPI_Comm control_ = MPI_COMM_NULL, data_ = MPI_COMM_NULL;
};

} // namespace

std::unique_ptr<job::ProcessGroup> joinJob() {
  if (job::launcherVariable().empty()) return job::makeLocalGroup();
  return std::make_unique<MpiGroup>();
}

} // namespace mpc::runtime::mpi
