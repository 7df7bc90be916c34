//===- runtime/cuda/NcclBootstrap.h - one NCCL communicator for a job ---===//
//
// The GPU devices of a job spread over MPI ranks share one NCCL
// communicator: NCCL rank k is the k-th gpu device of the plan (plan order),
// whichever process hosts it. Rank 0 makes the communicator's unique id
// (ncclGetUniqueId) and the job's process group carries it to every rank in
// an all-gather, as hex text; each process then calls ncclCommInitRank once
// per gpu device it hosts, inside one ncclGroupStart/End (a process with two
// devices would otherwise block in the first init, waiting for the second).
// No MPI here: the ProcessGroup interface is enough.
//
// Without NCCL in the build, makeNcclUniqueId and initJobComms throw.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/job/ProcessGroup.h"

#include <string>
#include <vector>

namespace mpc::runtime::cuda {

/// Lower-case hex of `bytes`, and back; fromHex throws InternalError on odd
/// lengths or non-hex digits.
std::string toHex(const std::string &bytes);
std::string fromHex(const std::string &hex);

/// A fresh ncclUniqueId, hex-encoded (NCCL_UNIQUE_ID_BYTES bytes). Needs no
/// GPU (NCCL opens its bootstrap socket).
std::string makeNcclUniqueId();

/// Collective: rank 0's makeNcclUniqueId(), on every rank.
std::string agreeNcclUniqueId(job::ProcessGroup &group);

/// One gpu device of this process in the job's communicator.
struct CommMember {
  int ncclRank = 0;
  int gpu = 0; ///< physical GPU ordinal
};

/// ncclCommInitRank for every member in one group call; returns the
/// ncclComm_t of each member (as void*, so callers need not include
/// nccl.h). Throws UserError naming `rank` when NCCL cannot set up.
std::vector<void *> initJobComms(const std::string &uniqueIdHex, int nranks,
                                 const std::vector<CommMember> &members, int rank);

} // namespace mpc::runtime::cuda
