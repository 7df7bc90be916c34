//===- runtime/cuda/GpuAssignment.cpp - the GPUs of one rank of a job ---===//
#include "runtime/cuda/GpuAssignment.h"

#include "support/Error.h"

#include <cstdlib>
#include <set>

namespace mpc::runtime::cuda {

std::string encodeHostRecord(const HostRecord &record) {
  // The count first: a hostname may hold any byte but a NUL, the count only
  // digits, so the first space splits them unambiguously.
  return std::to_string(record.gpuDevices) + " " + record.host;
}

HostRecord decodeHostRecord(const std::string &text) {
  size_t space = text.find(' ');
  if (space == std::string::npos || space == 0 || space > 9 ||
      text.find_first_not_of("0123456789") != space)
    throw InternalError("malformed GPU start-up record '" + escapeForMessage(text) + "'");
  HostRecord r;
  r.gpuDevices = std::atoi(text.substr(0, space).c_str());
  r.host = text.substr(space + 1);
  return r;
}

int firstLocalGpu(const std::vector<HostRecord> &records, int rank) {
  MPC_ASSERT(rank >= 0 && size_t(rank) < records.size(), "rank outside the GPU records");
  int first = 0;
  for (int r = 0; r < rank; ++r)
    if (records[size_t(r)].host == records[size_t(rank)].host)
      first += records[size_t(r)].gpuDevices;
  return first;
}

bool isGpuDevice(const std::string &device) { return device.rfind("gpu:", 0) == 0; }

std::vector<int> assignRankGpus(const plan::Plan &plan, const std::vector<int> &rankOf, int rank,
                                int firstGpu, const std::map<std::string, int> &deviceMap,
                                int visible, const std::string &whyNone) {
  MPC_ASSERT(rankOf.size() == plan.devices.size(), "rank map of the wrong size");
  std::set<std::string> names;
  for (const plan::DeviceProgram &d : plan.devices) names.insert(d.device);
  for (const auto &[name, ordinal] : deviceMap) {
    (void)ordinal;
    if (!names.count(name))
      throw UserError("", "--device-map", "the plan has no device '" + name + "'");
  }
  // The job's fail-fast report names the rank ("rank 1 (gpu:2): ..."), so
  // the messages here do not repeat it.
  std::vector<int> physical(plan.devices.size(), -1);
  int k = 0;
  for (size_t d = 0; d < plan.devices.size(); ++d) {
    const std::string &name = plan.devices[d].device;
    if (!isGpuDevice(name) || rankOf[d] != rank) continue;
    if (visible == 0) throw UserError("", "", "plan uses " + name + " but " + whyNone);
    auto it = deviceMap.find(name);
    bool mapped = it != deviceMap.end();
    int ordinal = mapped ? it->second : firstGpu + k;
    ++k;
    if (ordinal >= visible) {
      std::string seen = "this host has " + std::to_string(visible) + " visible";
      if (mapped)
        throw UserError("", "--device-map",
                        name + " is mapped to GPU " + std::to_string(ordinal) + " but " +
                            seen);
      std::string how =
          firstGpu > 0 ? " (lower ranks on this host take GPUs 0-" + std::to_string(firstGpu - 1) +
                             "; start fewer ranks per host or share GPUs with --device-map " +
                             name + "=0)"
                       : " (share GPUs with --device-map " + name + "=0)";
      throw UserError("", "", name + " needs GPU " + std::to_string(ordinal) + " but " +
                                  seen + how);
    }
    physical[d] = ordinal;
  }
  return physical;
}

} // namespace mpc::runtime::cuda
