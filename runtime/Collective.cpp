//===- runtime/Collective.cpp - a collective instruction, run on host memory ===//
#include "runtime/Collective.h"

#include "plan/Collective.h"
#include "support/Error.h"

#include <algorithm>
#include <cstring>

namespace mpc::runtime {

size_t collectiveScratchFloats(const plan::Plan &plan, uint32_t device, const plan::Instr &in) {
  plan::CollectiveShape s = plan::collectiveShape(plan.devices[device], device, in);
  if (s.kind == ops::OpKind::AllGather) return 0;
  return size_t(ops::partOf(s.elements, in.group.size(), s.member).size());
}

std::vector<CollectiveStep> expandCollective(const plan::Plan &plan, uint32_t device,
                                             const plan::Instr &in, const void *contribution,
                                             void *result, float *scratch) {
  plan::CollectiveShape s = plan::collectiveShape(plan.devices[device], device, in);
  std::vector<plan::CollectiveMessage> messages = plan::collectiveMessages(in, s);
  const size_t elementBytes = size_t(s.elementBytes);
  const uint8_t *src = static_cast<const uint8_t *>(contribution);
  uint8_t *dst = static_cast<uint8_t *>(result);
  size_t r = in.group.size();
  ops::ElementRange mine = ops::partOf(s.elements, r, s.member);
  // Where this member's part of the result lies: all of it for
  // reduce_scatter, its part of the whole for the others.
  uint8_t *myPart =
      s.kind == ops::OpKind::ReduceScatter ? dst : dst + size_t(mine.begin) * elementBytes;
  size_t partBytes = size_t(mine.size()) * elementBytes;

  std::vector<CollectiveStep> steps;
  auto each = [&](int phase, bool send, auto fn) {
    for (const plan::CollectiveMessage &m : messages)
      if (m.phase == phase && m.send == send) fn(m);
  };
  if (s.kind != ops::OpKind::AllGather) {
    // Phase 0: parts out, then this member's part summed in group order.
    each(0, true, [&](const plan::CollectiveMessage &m) {
      steps.push_back({CollectiveStep::Send, m.channel, src + size_t(m.part.begin) * elementBytes,
                       nullptr, size_t(m.bytes)});
    });
    std::vector<plan::CollectiveMessage> in0;
    each(0, false, [&](const plan::CollectiveMessage &m) { in0.push_back(m); });
    const uint8_t *local = src + size_t(mine.begin) * elementBytes;
    for (size_t i = 0, next = 0; i < r; ++i) {
      if (i == s.member) {
        steps.push_back(i == 0 ? CollectiveStep{CollectiveStep::Copy, 0, local, myPart, partBytes}
                               : CollectiveStep{CollectiveStep::Add, 0, local, myPart, partBytes});
        continue;
      }
      const plan::CollectiveMessage &m = in0[next++];
      MPC_ASSERT(m.peer == in.group[i], "collective messages out of group order");
      if (i == 0) {
        steps.push_back({CollectiveStep::Recv, m.channel, nullptr, myPart, partBytes});
      } else {
        steps.push_back({CollectiveStep::Recv, m.channel, nullptr, scratch, partBytes});
        steps.push_back({CollectiveStep::Add, 0, scratch, myPart, partBytes});
      }
    }
  } else {
    steps.push_back({CollectiveStep::Copy, 0, src, myPart, partBytes});
  }
  // Phase 1: this member's part of the result out, the others' parts in.
  each(1, true, [&](const plan::CollectiveMessage &m) {
    steps.push_back({CollectiveStep::Send, m.channel, myPart, nullptr, size_t(m.bytes)});
  });
  each(1, false, [&](const plan::CollectiveMessage &m) {
    steps.push_back({CollectiveStep::Recv, m.channel, nullptr,
                     dst + size_t(m.part.begin) * elementBytes, size_t(m.bytes)});
  });
  return steps;
}

bool runCollective(Transport &transport, const std::vector<CollectiveStep> &steps,
                   size_t &cursor, bool poll, DeviceStats &stats) {
  for (; cursor < steps.size(); ++cursor) {
    const CollectiveStep &s = steps[cursor];
    switch (s.kind) {
    case CollectiveStep::Send:
      transport.send(s.channel, s.src, s.bytes);
      stats.bytesSent += s.bytes;
      break;
    case CollectiveStep::Recv:
      if (poll) {
        if (!transport.tryRecv(s.channel, s.dst, s.bytes)) return false;
      } else {
        transport.recv(s.channel, s.dst, s.bytes);
      }
      stats.bytesReceived += s.bytes;
      break;
    case CollectiveStep::Copy:
      if (s.bytes) std::memcpy(s.dst, s.src, s.bytes);
      break;
    case CollectiveStep::Add: { // f32: the reducing collectives' one type
      float *d = static_cast<float *>(s.dst);
      const float *a = static_cast<const float *>(s.src);
      for (size_t k = 0, n = s.bytes / sizeof(float); k < n; ++k) d[k] += a[k];
      break;
    }
    }
  }
  cursor = 0;
  return true;
}

} // namespace mpc::runtime
