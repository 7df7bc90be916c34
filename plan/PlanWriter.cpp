//===- plan/PlanWriter.cpp - Plan -> plan.bin --------------------===//
//
// Encodes a Plan as plan.bin (docs/plan-format.md): the header, the
// structured part as CBOR (streamed by CborWriter, in nlohmann::json::to_cbor's
// encoding with every map's keys sorted, so the bytes are a pure function of
// the plan), zero padding to 64, then each initial value at a 64-aligned offset of
// the data section. The checksum (FNV-1a 64) covers everything after the
// header. Writing goes through writeFileAtomic, so a failed write never
// leaves a half-written plan behind.
//
//===----------------------------------------------------------------------===//
#include "plan/CborWriter.h"
#include "plan/OpSignatures.h"
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"

#include "support/Error.h"
#include "support/FileIO.h"
#include "support/Hash.h"

#include <nlohmann/json.hpp>

namespace mpc::plan {

using nlohmann::json;

uint64_t planChecksum(const uint8_t *data, size_t size) { return fnv1a64(data, size); }

namespace {

const char *regionName(Region r) { return r == Region::Arena ? "arena" : "persistent"; }

void writeAttr(CborWriter &w, const AttrValue &v) {
  std::visit(
      [&w](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          w.writeBool(x);
        else if constexpr (std::is_same_v<T, int64_t>)
          w.writeInt(x);
        else if constexpr (std::is_same_v<T, double>)
          w.writeDouble(x);
        else if constexpr (std::is_same_v<T, std::string>)
          w.writeString(x);
        else
          w.writeInts(x);
      },
      v);
}

// Each map below writes its keys in sorted order (CborWriter.h).

void writeBuffer(CborWriter &w, const Buffer &b) {
  w.beginMap(6);
  w.key("bytes").writeUnsigned(b.bytes);
  w.key("dtype").writeString(dtypeName(b.dtype));
  w.key("name").writeString(b.name);
  w.key("offset").writeUnsigned(b.offset);
  w.key("region").writeString(regionName(b.region));
  w.key("shape").writeInts(b.shape);
}

void writeInstr(CborWriter &w, const Instr &in) {
  bool hasAction = in.action.kind != Action::None;
  size_t fields = in.kind == InstrKind::Kernel ? 6 : 2;
  if (in.kind == InstrKind::Send || in.kind == InstrKind::Recv) fields = 5;
  if (in.kind == InstrKind::Collective) fields = 7;
  w.beginMap(fields + hasAction);
  if (hasAction) {
    w.key("action");
    w.beginArray(3);
    w.writeUnsigned(uint64_t(in.action.kind));
    w.writeInt(in.action.stage);
    w.writeInt(in.action.microbatch);
  }
  auto kindAndNode = [&] {
    w.key("kind").writeString(instrKindName(in.kind));
    w.key("node").writeString(in.node);
  };
  switch (in.kind) {
  case InstrKind::Kernel:
    w.key("attrs");
    w.beginMap(in.attrs.size());
    for (const auto &[k, v] : in.attrs) { // an std::map: sorted
      w.key(k);
      writeAttr(w, v);
    }
    w.key("inputs").writeInts(in.inputs);
    kindAndNode();
    w.key("op").writeString(in.op);
    w.key("output").writeUnsigned(in.output);
    return;
  case InstrKind::Send:
    w.key("channel").writeUnsigned(in.channel);
    w.key("inputs").writeInts(in.inputs);
    kindAndNode();
    w.key("peer").writeUnsigned(in.peer);
    return;
  case InstrKind::Recv:
    w.key("channel").writeUnsigned(in.channel);
    kindAndNode();
    w.key("output").writeUnsigned(in.output);
    w.key("peer").writeUnsigned(in.peer);
    return;
  case InstrKind::Collective:
    w.key("channel").writeUnsigned(in.channel);
    w.key("group").writeInts(in.group);
    w.key("inputs").writeInts(in.inputs);
    kindAndNode();
    w.key("op").writeString(in.op);
    w.key("output").writeUnsigned(in.output);
    return;
  }
  kindAndNode();
}

void writeRef(CborWriter &w, const TensorRef &r) {
  auto placements = [&](const char *key, const std::vector<Placement> &list) {
    w.key(key);
    w.beginArray(list.size());
    for (const Placement &m : list) w.writeInts(std::vector<uint32_t>{m.device, m.buffer});
  };
  const bool axis = !r.shards.empty() && r.shardAxis >= 0;
  w.beginMap(5 + !r.mirrors.empty() + !r.shards.empty() + axis);
  w.key("buffer").writeUnsigned(r.buffer);
  w.key("device").writeUnsigned(r.device);
  w.key("dtype").writeString(dtypeName(r.dtype));
  if (!r.mirrors.empty()) placements("mirrors", r.mirrors);
  w.key("name").writeString(r.name);
  w.key("shape").writeInts(r.shape);
  if (axis) w.key("shard_axis").writeUnsigned(uint32_t(r.shardAxis));
  if (!r.shards.empty()) placements("shards", r.shards);
}

void writeRefs(CborWriter &w, const std::vector<TensorRef> &refs) {
  w.beginArray(refs.size());
  for (const TensorRef &r : refs) writeRef(w, r);
}

void writeDevice(CborWriter &w, const DeviceProgram &d) {
  w.beginMap(6);
  w.key("arena_bytes").writeUnsigned(d.arenaBytes);
  w.key("buffers");
  w.beginArray(d.buffers.size());
  for (const Buffer &b : d.buffers) writeBuffer(w, b);
  w.key("instrs");
  w.beginArray(d.instrs.size());
  for (const Instr &in : d.instrs) writeInstr(w, in);
  w.key("name").writeString(d.device);
  w.key("no_reuse_bytes").writeUnsigned(d.noReuseBytes);
  w.key("persistent_bytes").writeUnsigned(d.persistentBytes);
}

void writeOpSignature(CborWriter &w, const OpSignature &s) {
  w.beginMap(3);
  w.key("attrs");
  w.beginArray(s.attrs.size());
  for (const auto &[name, kind] : s.attrs) {
    w.beginArray(2);
    w.writeString(name);
    w.writeString(attrKindName(kind));
  }
  w.key("name").writeString(s.name);
  w.key("operands");
  w.beginArray(2);
  w.writeUnsigned(s.minInputs);
  w.writeUnsigned(s.maxInputs);
}

/// Appends the structured part to `out`, with the data-section offset of
/// every initial value; returns the data section's length.
uint64_t writeMeta(const Plan &plan, std::vector<uint8_t> &out) {
  CborWriter w(out);
  bool pipelined = plan.pipeline.microbatches > 1;
  w.beginMap(13 + pipelined);
  w.key("devices");
  w.beginArray(plan.devices.size());
  for (const DeviceProgram &d : plan.devices) writeDevice(w, d);

  // Tensor bytes: each at the next 64-aligned offset of the data section.
  w.key("initial_values");
  w.beginArray(plan.initialValues.size());
  uint64_t dataLen = 0;
  for (const auto &v : plan.initialValues) {
    uint64_t off = alignUp(dataLen);
    w.beginMap(2);
    w.key("bytes").writeUnsigned(v.size());
    w.key("offset").writeUnsigned(off);
    dataLen = off + v.size();
  }

  writeRefs(w.key("inputs"), plan.inputs);
  w.key("loss");
  if (plan.hasLoss)
    writeRef(w, plan.loss);
  else
    w.writeNull();
  w.key("model").writeString(plan.model);
  w.key("model_checksum").writeUnsigned(plan.modelChecksum);
  w.key("ops");
  w.beginArray(plan.ops.size());
  for (const OpSignature &s : plan.ops) writeOpSignature(w, s);
  w.key("optimizer");
  w.beginMap(2);
  w.key("hyper");
  w.beginMap(plan.optimizer.hyper.size());
  for (const auto &[k, v] : plan.optimizer.hyper) { // an std::map: sorted
    w.key(k);
    w.writeDouble(v);
  }
  w.key("kind").writeString(plan.optimizer.kind);
  writeRefs(w.key("outputs"), plan.outputs);
  writeRefs(w.key("params"), plan.params);
  if (pipelined) {
    w.key("pipeline");
    w.beginMap(plan.pipeline.inFlight > 0 ? 4 : 3);
    if (plan.pipeline.inFlight > 0) w.key("in_flight").writeInt(plan.pipeline.inFlight);
    w.key("microbatches").writeInt(plan.pipeline.microbatches);
    w.key("schedule").writeString(plan.pipeline.schedule);
    w.key("stages").writeInts(plan.pipeline.stages);
  }
  w.key("precision").writeString(plan.precision);
  w.key("seed").writeUnsigned(plan.seed);
  writeRefs(w.key("states"), plan.states);
  return dataLen;
}

} // namespace

std::string planMetaJson(const Plan &plan) {
  // The JSON form is the decoded CBOR, so the two cannot drift apart.
  std::vector<uint8_t> cbor;
  writeMeta(plan, cbor);
  return json::from_cbor(cbor).dump(2) + "\n";
}

std::vector<uint8_t> serializePlan(const Plan &plan) {
  // The meta is written in place after room for the header, then the
  // padding and the data section are appended.
  std::vector<uint8_t> out(metaOffset(), 0);
  uint64_t dataLen = writeMeta(plan, out);
  uint64_t metaLen = out.size() - metaOffset();
  uint64_t dataOff = dataOffset(metaLen);
  out.resize(dataOff + dataLen, 0);
  uint64_t off = dataOff;
  for (const auto &v : plan.initialValues) {
    off = dataOff + alignUp(off - dataOff);
    std::copy(v.begin(), v.end(), out.begin() + off);
    off += v.size();
  }

  std::copy(std::begin(kPlanMagic), std::end(kPlanMagic), out.begin() + kHeaderMagicOffset);
  storeLE(&out[kHeaderVersionOffset], kPlanFormatVersion, 4);
  storeLE(&out[kHeaderFlagsOffset], 0, 4);
  storeLE(&out[kHeaderMetaLenOffset], metaLen, 8);
  storeLE(&out[kHeaderDataLenOffset], dataLen, 8);
  uint64_t sum = planChecksum(out.data() + kHeaderSize, out.size() - kHeaderSize);
  storeLE(&out[kHeaderChecksumOffset], sum, 8);
  return out;
}

void writePlanFile(const std::string &path, const Plan &plan) {
  std::vector<uint8_t> bytes = serializePlan(plan);
  writeFileAtomic(path, bytes.data(), bytes.size());
}

} // namespace mpc::plan
