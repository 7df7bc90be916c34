//===- runtime/cuda/CudaJobRun.cpp - prepareCudaRun for one rank of a job -===//
//
// Every rank runs the same sequence of collectives, decided only from the
// plan, the rank map and gathered records, so all ranks take the same
// branches:
//   1. all-gather (hostname, hosted gpu devices): this rank's GPUs;
//   2. when some channel joins GPU devices of different ranks, all-gather
//      each gpu device's GPU (host and PCI bus id) to decide whether NCCL
//      can carry those channels: it cannot drive two ranks of one
//      communicator on one GPU, so a job whose GPU devices share a GPU (one
//      GPU for the whole job, --device-map) moves them through host memory;
//   3. with NCCL: rank 0's unique id to everyone, ncclCommInitRank per
//      hosted gpu device;
//   4. the group's transport for the host path.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaJobTransport.h"
#include "runtime/cuda/CudaRunParts.h"
#include "runtime/cuda/GpuAssignment.h"
#include "runtime/cuda/NcclBootstrap.h"
#include "runtime/cuda/NcclProxy.h"
#include "runtime/cuda/TransferOrder.h"
#include "runtime/job/ProcessGroup.h"
#include "support/Error.h"

#include <map>
#include <unistd.h>

namespace mpc::runtime::cuda {

namespace {

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

/// "HOST BUSID": what NCCL compares to find two ranks on one GPU.
std::string gpuIdentity(const std::string &host, int gpu) {
  char bus[64] = {};
  cudaCheck(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, gpu), "cudaDeviceGetPCIBusId");
  return host + " " + bus;
}

/// Why the job's GPU devices cannot form one NCCL communicator (two of
/// them on one GPU), or "". `gathered[r]`: rank r's "DEVICE=IDENTITY" lines.
std::string sharedGpu(const plan::Plan &plan, const std::vector<std::string> &gathered,
                      const std::vector<int> &rankOf) {
  std::map<std::string, uint32_t> owner;
  for (const std::string &record : gathered) {
    size_t pos = 0;
    while (pos < record.size()) {
      size_t end = record.find('\n', pos);
      if (end == std::string::npos) end = record.size();
      std::string line = record.substr(pos, end - pos);
      pos = end + 1;
      size_t eq = line.find('=');
      MPC_ASSERT(eq != std::string::npos, "malformed GPU identity record");
      uint32_t d = uint32_t(std::stoul(line.substr(0, eq)));
      MPC_ASSERT(d < plan.devices.size(), "GPU identity of a device outside the plan");
      auto [it, fresh] = owner.emplace(line.substr(eq + 1), d);
      if (!fresh)
        return plan.devices[it->second].device + " (rank " + std::to_string(rankOf[it->second]) +
               ") and " + plan.devices[d].device + " (rank " + std::to_string(rankOf[d]) +
               ") are on one GPU, and NCCL needs a GPU of its own for each";
    }
  }
  return "";
}

} // namespace

CudaRun prepareCudaRun(const plan::Plan &plan, const CudaOptions &options,
                       const std::vector<int> &rankOf, job::ProcessGroup &group) {
  if (group.size() == 1) return prepareCudaRun(plan, options);
  MPC_ASSERT(rankOf.size() == plan.devices.size(), "rank map of the wrong size");
  const int rank = group.rank();
  const std::string host = hostName();

  // 1. This rank's GPUs.
  std::vector<int> ncclRankOf(plan.devices.size(), -1);
  int gpuDevices = 0, hostedGpus = 0;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    if (!isGpuDevice(plan.devices[d].device)) continue;
    ncclRankOf[d] = gpuDevices++;
    if (rankOf[d] == rank) ++hostedGpus;
  }
  std::vector<HostRecord> records;
  for (const std::string &r : group.allGather(encodeHostRecord({host, hostedGpus})))
    records.push_back(decodeHostRecord(r));
  std::string why;
  int visible = cudaAvailable(&why) ? visibleGpuCount() : 0;
  std::vector<int> physical = assignRankGpus(plan, rankOf, rank, firstLocalGpu(records, rank),
                                             options.deviceMap, visible, why);
  enablePeerAccess(physical);

  // 2. Can NCCL carry the channels between ranks?
  std::vector<Transfer> order = transferOrder(plan);
  bool crossRank = false;
  for (const Transfer &t : order)
    crossRank |= rankOf[t.sender] != rankOf[t.receiver] &&
                 isGpuDevice(plan.devices[t.sender].device) &&
                 isGpuDevice(plan.devices[t.receiver].device);
  std::string fallback;
  if (crossRank && !ncclAvailable()) fallback = "this mpc was built without NCCL";
  if (crossRank && fallback.empty()) {
    std::string mine;
    for (size_t d = 0; d < plan.devices.size(); ++d)
      if (physical[d] >= 0) mine += std::to_string(d) + "=" + gpuIdentity(host, physical[d]) + "\n";
    if (!mine.empty()) mine.pop_back();
    fallback = sharedGpu(plan, group.allGather(mine), rankOf);
  }

  // 3. The job's communicator.
  std::unique_ptr<NcclProxy> proxy;
  if (crossRank && fallback.empty()) {
    std::string id = agreeNcclUniqueId(group);
    std::vector<CommMember> members;
    std::vector<uint32_t> devices;
    for (uint32_t d = 0; d < plan.devices.size(); ++d)
      if (physical[d] >= 0) {
        members.push_back({ncclRankOf[d], physical[d]});
        devices.push_back(d);
      }
    std::vector<void *> comms = initJobComms(id, gpuDevices, members, rank);
    std::map<uint32_t, NcclProxy::Member> byDevice;
    for (size_t i = 0; i < devices.size(); ++i) byDevice[devices[i]] = {members[i].gpu, comms[i]};
    if (!byDevice.empty())
      proxy = std::make_unique<NcclProxy>(proxyOps(plan, order, rankOf, rank),
                                          std::move(byDevice), ncclRankOf, rank);
  }

  // 4. The host path, and the run.
  auto transport = std::make_unique<CudaJobTransport>(plan, physical,
                                                      group.makeTransport(plan, rankOf),
                                                      std::move(proxy));
  CudaRun run = assembleCudaRun(options, std::move(physical), std::move(transport));
  if (!fallback.empty())
    run.note = fallback + "; GPU data between ranks moves through host memory over MPI";
  return run;
}

} // namespace mpc::runtime::cuda
