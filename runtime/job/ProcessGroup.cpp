//===- runtime/job/ProcessGroup.cpp - the single-process group ---------===//
#include "runtime/job/ProcessGroup.h"

#include "runtime/Channel.h"
#include "support/Error.h"

#include <cstdio>
#include <cstdlib>

namespace mpc::runtime::job {

namespace {

class LocalGroup : public ProcessGroup {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "one process"; }
  std::vector<std::string> allGather(const std::string &mine) override { return {mine}; }
  void sendBytes(int, const void *, size_t) override {
    throw InternalError("point-to-point send in a one-process job");
  }
  void recvBytes(int, void *, size_t) override {
    throw InternalError("point-to-point receive in a one-process job");
  }
  std::unique_ptr<Transport> makeTransport(const plan::Plan &plan,
                                           const std::vector<int> &) override {
    return std::make_unique<ChannelTransport>(plan);
  }
  [[noreturn]] void abortJob(int code) override {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  [[noreturn]] void exitJob(int code) override {
    std::fflush(nullptr);
    std::exit(code);
  }
};

} // namespace

std::unique_ptr<ProcessGroup> makeLocalGroup() { return std::make_unique<LocalGroup>(); }

std::string launcherVariable() {
  for (const char *var :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK"})
    if (std::getenv(var)) return var;
  return "";
}

} // namespace mpc::runtime::job
