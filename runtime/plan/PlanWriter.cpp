//===- runtime/plan/PlanWriter.cpp - Plan -> plan.bin --------------------===//
//
// Encodes a Plan as plan.bin (docs/plan-format.md): the header, the
// structured part as CBOR (nlohmann::json::to_cbor; objects are std::map
// backed, so keys come out sorted and the bytes are a pure function of the
// plan), zero padding to 64, then each initial value at a 64-aligned offset of
// the data section. The checksum (FNV-1a 64) covers everything after the
// header. Writing goes through writeFileAtomic, so a failed write never
// leaves a half-written plan behind.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan/OpSignatures.h"
#include "runtime/plan/PlanFormat.h"
#include "runtime/plan/PlanIO.h"

#include "support/Error.h"
#include "support/FileIO.h"

#include <nlohmann/json.hpp>

namespace mpc::plan {

using nlohmann::json;

uint64_t planChecksum(const uint8_t *data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

const char *regionName(Region r) { return r == Region::Arena ? "arena" : "persistent"; }

const char *kindName(InstrKind k) {
  switch (k) {
  case InstrKind::Kernel: return "kernel";
  case InstrKind::Send: return "send";
  case InstrKind::Recv: return "recv";
  }
  return "?";
}

json attrToJson(const AttrValue &v) {
  return std::visit([](const auto &x) { return json(x); }, v);
}

json bufferToJson(const Buffer &b) {
  return {{"name", b.name},     {"dtype", dtypeName(b.dtype)}, {"shape", b.shape},
          {"region", regionName(b.region)}, {"offset", b.offset}, {"bytes", b.bytes}};
}

json instrToJson(const Instr &in) {
  json j = {{"kind", kindName(in.kind)}, {"node", in.node}};
  switch (in.kind) {
  case InstrKind::Kernel: {
    j["op"] = in.op;
    json attrs = json::object();
    for (const auto &[k, v] : in.attrs) attrs[k] = attrToJson(v);
    j["attrs"] = std::move(attrs);
    j["inputs"] = in.inputs;
    j["output"] = in.output;
    break;
  }
  case InstrKind::Send:
    j["inputs"] = in.inputs;
    j["peer"] = in.peer;
    j["channel"] = in.channel;
    break;
  case InstrKind::Recv:
    j["output"] = in.output;
    j["peer"] = in.peer;
    j["channel"] = in.channel;
    break;
  }
  if (in.action.kind != Action::None)
    j["action"] = {uint64_t(in.action.kind), in.action.stage, in.action.microbatch};
  return j;
}

json refToJson(const TensorRef &r) {
  return {{"name", r.name},     {"dtype", dtypeName(r.dtype)}, {"shape", r.shape},
          {"device", r.device}, {"buffer", r.buffer}};
}

json refsToJson(const std::vector<TensorRef> &refs) {
  json a = json::array();
  for (const TensorRef &r : refs) a.push_back(refToJson(r));
  return a;
}

/// The structured part, with the data-section offset of every initial value;
/// `dataLen` receives the data section's length.
json metaOf(const Plan &plan, uint64_t &dataLen) {
  json meta;
  meta["model"] = plan.model;
  meta["seed"] = plan.seed;
  json devices = json::array();
  for (const DeviceProgram &d : plan.devices) {
    json buffers = json::array(), instrs = json::array();
    for (const Buffer &b : d.buffers) buffers.push_back(bufferToJson(b));
    for (const Instr &in : d.instrs) instrs.push_back(instrToJson(in));
    devices.push_back({{"name", d.device},
                       {"arena_bytes", d.arenaBytes},
                       {"persistent_bytes", d.persistentBytes},
                       {"no_reuse_bytes", d.noReuseBytes},
                       {"buffers", std::move(buffers)},
                       {"instrs", std::move(instrs)}});
  }
  meta["devices"] = std::move(devices);
  meta["inputs"] = refsToJson(plan.inputs);
  meta["outputs"] = refsToJson(plan.outputs);
  meta["params"] = refsToJson(plan.params);
  meta["states"] = refsToJson(plan.states);
  meta["loss"] = plan.hasLoss ? refToJson(plan.loss) : json(nullptr);
  json hyper = json::object();
  for (const auto &[k, v] : plan.optimizer.hyper) hyper[k] = v;
  meta["optimizer"] = {{"kind", plan.optimizer.kind}, {"hyper", std::move(hyper)}};
  json ops = json::array();
  for (const OpSignature &s : plan.ops) {
    json attrs = json::array();
    for (const auto &[name, kind] : s.attrs) attrs.push_back({name, attrKindName(kind)});
    ops.push_back({{"name", s.name},
                   {"operands", {s.minInputs, s.maxInputs}},
                   {"attrs", std::move(attrs)}});
  }
  meta["ops"] = std::move(ops);
  if (plan.pipeline.microbatches > 1)
    meta["pipeline"] = {{"microbatches", plan.pipeline.microbatches},
                        {"schedule", plan.pipeline.schedule},
                        {"stages", plan.pipeline.stages}};

  // Tensor bytes: each at the next 64-aligned offset of the data section.
  json values = json::array();
  dataLen = 0;
  for (const auto &v : plan.initialValues) {
    uint64_t off = alignUp(dataLen);
    values.push_back({{"offset", off}, {"bytes", uint64_t(v.size())}});
    dataLen = off + v.size();
  }
  meta["initial_values"] = std::move(values);
  return meta;
}

} // namespace

std::string planMetaJson(const Plan &plan) {
  uint64_t dataLen = 0;
  return metaOf(plan, dataLen).dump(2) + "\n";
}

std::vector<uint8_t> serializePlan(const Plan &plan) {
  uint64_t dataLen = 0;
  json meta = metaOf(plan, dataLen);
  std::vector<uint8_t> cbor = json::to_cbor(meta);
  uint64_t dataOff = dataOffset(cbor.size());
  std::vector<uint8_t> out(dataOff + dataLen, 0);
  std::copy(cbor.begin(), cbor.end(), out.begin() + metaOffset());
  uint64_t off = dataOff;
  for (const auto &v : plan.initialValues) {
    off = dataOff + alignUp(off - dataOff);
    std::copy(v.begin(), v.end(), out.begin() + off);
    off += v.size();
  }

  std::copy(std::begin(kPlanMagic), std::end(kPlanMagic), out.begin() + kHeaderMagicOffset);
  storeLE(&out[kHeaderVersionOffset], kPlanFormatVersion, 4);
  storeLE(&out[kHeaderFlagsOffset], 0, 4);
  storeLE(&out[kHeaderMetaLenOffset], cbor.size(), 8);
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
