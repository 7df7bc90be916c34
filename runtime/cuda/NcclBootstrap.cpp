//===- runtime/cuda/NcclBootstrap.cpp - one NCCL communicator for a job -===//
#include "runtime/cuda/NcclBootstrap.h"

#include "runtime/cuda/CudaCheck.h"
#include "support/Error.h"

#ifdef MPC_HAVE_NCCL
#include <nccl.h>
#endif

#include <cstring>

namespace mpc::runtime::cuda {

std::string toHex(const std::string &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string fromHex(const std::string &hex) {
  auto value = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw InternalError("malformed hex record '" + escapeForMessage(hex) + "'");
  };
  if (hex.size() % 2 != 0) throw InternalError("hex record of odd length");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = char(value(hex[2 * i]) * 16 + value(hex[2 * i + 1]));
  return out;
}

#ifdef MPC_HAVE_NCCL

std::string makeNcclUniqueId() {
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess)
    throw UserError("", "", std::string("NCCL cannot make the job's unique id: ") +
                                ncclGetErrorString(r) + " (NCCL_DEBUG=WARN says more)");
  return toHex(std::string(id.internal, sizeof id.internal));
}

std::vector<void *> initJobComms(const std::string &uniqueIdHex, int nranks,
                                 const std::vector<CommMember> &members, int /*rank: named by the job's report*/) {
  std::string raw = fromHex(uniqueIdHex);
  ncclUniqueId id;
  if (raw.size() != sizeof id.internal)
    throw InternalError("NCCL unique id of " + std::to_string(raw.size()) + " bytes");
  std::memcpy(id.internal, raw.data(), sizeof id.internal);

  std::vector<ncclComm_t> comms(members.size(), nullptr);
  int saved = 0;
  cudaGetDevice(&saved);
  auto fail = [&](ncclResult_t r, const std::string &what) {
    cudaSetDevice(saved);
    throw UserError("", "", "NCCL cannot join the job's " +
                                std::to_string(nranks) + "-GPU communicator (" + what +
                                "): " + ncclGetErrorString(r) +
                                " (NCCL_DEBUG=WARN says more)");
  };
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) fail(r, "ncclGroupStart");
  for (size_t i = 0; i < members.size(); ++i) {
    cudaCheck(cudaSetDevice(members[i].gpu), "cudaSetDevice");
    r = ncclCommInitRank(&comms[i], nranks, id, members[i].ncclRank);
    if (r != ncclSuccess) {
      ncclGroupEnd();
      fail(r, "ncclCommInitRank of NCCL rank " + std::to_string(members[i].ncclRank) +
                  " on GPU " + std::to_string(members[i].gpu));
    }
  }
  r = ncclGroupEnd();
  if (r != ncclSuccess) fail(r, "ncclGroupEnd");
  cudaSetDevice(saved);
  return std::vector<void *>(comms.begin(), comms.end());
}

#else

std::string makeNcclUniqueId() {
  throw UserError("", "", "this mpc was built without NCCL");
}

std::vector<void *> initJobComms(const std::string &, int, const std::vector<CommMember> &, int) {
  throw UserError("", "", "this mpc was built without NCCL");
}

#endif

std::string agreeNcclUniqueId(job::ProcessGroup &group) {
  // Every rank takes part in the gather; only rank 0's record carries the id.
  std::string mine = group.rank() == 0 ? makeNcclUniqueId() : std::string();
  std::vector<std::string> all = group.allGather(mine);
  MPC_ASSERT(!all.empty() && !all[0].empty(), "rank 0 sent no NCCL unique id");
  return all[0];
}

} // namespace mpc::runtime::cuda
