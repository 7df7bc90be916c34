//===- runtime/job/Gather.cpp - bringing tensors to rank 0 -------------===//
#include "runtime/job/Gather.h"

#include "support/Error.h"

#include <cstring>

namespace mpc::runtime::job {

void moveToRoot(ProcessGroup &group, int owner, std::vector<uint8_t> &bytes) {
  if (owner == 0) return;
  if (group.rank() == owner) {
    uint64_t n = bytes.size();
    group.sendBytes(0, &n, sizeof n);
    group.sendBytes(0, bytes.data(), bytes.size());
  } else if (group.rank() == 0) {
    uint64_t n = 0;
    group.recvBytes(owner, &n, sizeof n);
    bytes.resize(size_t(n));
    group.recvBytes(owner, bytes.data(), bytes.size());
  }
}

namespace {

/// A sharded tensor (plan::TensorRef::shards) whole on rank 0: each part
/// from the rank that hosts it, joined in part order.
std::vector<uint8_t> gatherShards(ProcessGroup &group, Executor &ex, const std::vector<int> &rankOf,
                                  const plan::TensorRef &r) {
  std::vector<uint8_t> whole;
  if (group.rank() == 0) whole.resize(size_t(r.numElements()) * 4);
  const int64_t parts = int64_t(r.shards.size());
  for (int64_t i = 0; i < parts; ++i) {
    const plan::Placement &at = r.shards[size_t(i)];
    MPC_ASSERT(at.device < rankOf.size(), "shard of '" + r.name + "' on an unknown device");
    int owner = rankOf[at.device];
    std::vector<uint8_t> part;
    if (group.rank() == owner) part = ex.readShard(r, size_t(i));
    moveToRoot(group, owner, part);
    if (group.rank() != 0) continue;
    MPC_ASSERT(part.size() == size_t(r.shardElements()) * 4,
               "shard of '" + r.name + "' arrived with the wrong size");
    plan::joinPart(r, size_t(i), part.data(), whole.data());
  }
  return whole;
}

} // namespace

std::vector<io::NamedTensor> gatherTensors(ProcessGroup &group, Executor &ex,
                                           const std::vector<int> &rankOf,
                                           const std::vector<plan::TensorRef> &refs) {
  std::vector<io::NamedTensor> out;
  for (const plan::TensorRef &r : refs) {
    MPC_ASSERT(r.device < rankOf.size(), "tensor '" + r.name + "' on an unknown device");
    std::vector<uint8_t> bytes;
    if (!r.shards.empty()) {
      bytes = gatherShards(group, ex, rankOf, r);
    } else {
      int owner = rankOf[r.device];
      if (group.rank() == owner) {
        bytes.resize(size_t(r.numElements()) * 4);
        ex.read(r, bytes.data(), bytes.size());
      }
      moveToRoot(group, owner, bytes);
    }
    if (group.rank() != 0) continue;
    MPC_ASSERT(bytes.size() == size_t(r.numElements()) * 4,
               "tensor '" + r.name + "' arrived with the wrong size");
    io::NamedTensor t;
    t.name = r.name;
    t.dtype = r.dtype;
    t.shape = r.shape;
    t.data = std::move(bytes);
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace mpc::runtime::job
