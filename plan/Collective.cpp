//===- plan/Collective.cpp - a collective instruction's messages ----------===//
#include "plan/Collective.h"

#include "ops/OpSchema.h"

#include <algorithm>

namespace mpc::plan {

std::optional<ops::OpKind> collectiveKind(const std::string &op) {
  const ops::OpSchema *s = ops::lookupSchema(op);
  if (!s || !ops::isCollective(s->kind)) return std::nullopt;
  return s->kind;
}

CollectiveShape collectiveShape(const DeviceProgram &device, uint32_t deviceIndex,
                                const Instr &in) {
  CollectiveShape s;
  s.kind = *collectiveKind(in.op);
  s.member = size_t(std::find(in.group.begin(), in.group.end(), deviceIndex) - in.group.begin());
  const Buffer &x = device.buffers[in.inputs[0]], &y = device.buffers[in.output];
  s.elements = s.kind == ops::OpKind::AllGather ? y.numElements() : x.numElements();
  return s;
}

std::vector<CollectiveMessage> collectiveMessages(const Instr &in, const CollectiveShape &s) {
  std::vector<CollectiveMessage> out;
  size_t r = in.group.size();
  auto add = [&](bool send, int phase, size_t other, size_t partIndex) {
    CollectiveMessage m;
    m.send = send;
    m.phase = phase;
    m.peer = in.group[other];
    m.channel = send ? collectiveChannel(in, phase, s.member, other)
                     : collectiveChannel(in, phase, other, s.member);
    m.part = ops::partOf(s.elements, r, partIndex);
    m.bytes = uint64_t(m.part.size()) * s.elementBytes;
    out.push_back(m);
  };
  if (s.kind != ops::OpKind::AllGather) {
    for (size_t i = 0; i < r; ++i)
      if (i != s.member) add(true, 0, i, i);
    for (size_t i = 0; i < r; ++i)
      if (i != s.member) add(false, 0, i, s.member);
  }
  if (s.kind != ops::OpKind::ReduceScatter) {
    for (size_t i = 0; i < r; ++i)
      if (i != s.member) add(true, 1, i, s.member);
    for (size_t i = 0; i < r; ++i)
      if (i != s.member) add(false, 1, i, i);
  }
  return out;
}

} // namespace mpc::plan
