//===- runtime/cuda/GpuAssignment.h - the GPUs of one rank of a job -----===//
//
// Under mpirun each rank drives GPUs of its own host, and the ranks of one
// host must not pick the same ones: each rank takes a contiguous block of
// the host's GPUs, one per gpu device it hosts, after the blocks of the
// lower ranks on that host. A rank learns the lower ranks' counts from one
// all-gather of (hostname, hosted gpu devices) records; the prefix sum over
// the lower ranks with its hostname is its first GPU. So two ranks hosting
// one device each take GPUs 0 and 1, and a rank hosting two devices followed
// by one hosting one take 0-1 and 2.
//
// --device-map (CudaOptions::deviceMap) still names the GPU of a logical
// device outright, on whichever rank hosts it.
//
// Pure functions over strings and counts, so the assignment is tested
// without GPUs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <map>
#include <string>
#include <vector>

namespace mpc::runtime::cuda {

/// What one rank tells the others before GPUs are chosen.
struct HostRecord {
  std::string host;   ///< gethostname()
  int gpuDevices = 0; ///< gpu devices of the plan this rank hosts
};

/// "COUNT HOSTNAME"; decodeHostRecord throws InternalError on anything else
/// (the records come from mpc itself).
std::string encodeHostRecord(const HostRecord &record);
HostRecord decodeHostRecord(const std::string &text);

/// The first GPU ordinal of `rank`: the gpu devices of the ranks below it
/// with the same host, summed.
int firstLocalGpu(const std::vector<HostRecord> &records, int rank);

/// True for "gpu:N" device names.
bool isGpuDevice(const std::string &device);

/// The physical GPU of each device of `plan` as seen by `rank`: -1 for cpu
/// devices and for devices other ranks host; the k-th gpu device this rank
/// hosts (plan order) takes `firstGpu + k` unless `deviceMap` names its GPU.
/// `visible` is this host's GPU count and `whyNone` why it is 0. Throws
/// UserError naming the rank and device ("rank 1: gpu:2 needs GPU 3 but this
/// host has 2 visible"), or --device-map when it names no device of the plan.
std::vector<int> assignRankGpus(const plan::Plan &plan, const std::vector<int> &rankOf, int rank,
                                int firstGpu, const std::map<std::string, int> &deviceMap,
                                int visible, const std::string &whyNone);

} // namespace mpc::runtime::cuda
