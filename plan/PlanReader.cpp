//===- plan/PlanReader.cpp - plan.bin -> Plan --------------------===//
//
// Reads an untrusted plan file. Nothing is indexed, allocated or copied from
// a number in the file before that number is checked against the file's real
// size or a fixed limit, and every problem is a UserError naming the file and
// the section: `plan.bin: error: header: ...`, `plan.bin: error: meta:
// /devices/0/instrs/3/inputs/1: ...`. The steps, in order:
//   1. header: size, magic (foreign files), version (newer files), flags,
//      section lengths against the file size, checksum (corrupt files);
//   2. meta: a bounded walk over the CBOR bytes (well-formed, no tags or
//      indefinite lengths, nesting at most kMaxCborDepth, so the decoder
//      cannot recurse deeply), then nlohmann's decoder, then every field's
//      JSON type and range before use;
//   3. data: each initial value's offset and length against the data section
//      and against its tensor's shape;
//   4. verifyPlan: the cross-references (buffers, channels, bounds).
//
//===----------------------------------------------------------------------===//
#include "ops/Type.h"
#include "plan/OpSignatures.h"
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"

#include "support/Error.h"
#include "support/StringUtil.h"
#include "support/FileIO.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

namespace mpc::plan {

using nlohmann::json;

namespace {

/// A bounded, iterative walk over CBOR bytes: checks that they hold exactly
/// one well-formed item of the kinds the writer produces, nested at most
/// kMaxCborDepth deep. Returns an error message, or "" when fine.
std::string checkCbor(const uint8_t *p, size_t n) {
  size_t pos = 0;
  std::vector<uint64_t> open{1}; // items still expected in each open container
  auto at = [&](size_t where) { return " at byte " + std::to_string(where); };
  while (!open.empty()) {
    if (open.back() == 0) {
      open.pop_back();
      continue;
    }
    --open.back();
    if (pos >= n) return "unexpected end of the structured part" + at(pos);
    size_t start = pos;
    uint8_t ib = p[pos++];
    uint8_t major = ib >> 5, info = ib & 31;
    uint64_t arg = info;
    if (info >= 24 && info <= 27) {
      size_t len = size_t(1) << (info - 24);
      if (n - pos < len) return "unexpected end of the structured part" + at(pos);
      arg = 0;
      for (size_t i = 0; i < len; ++i) arg = (arg << 8) | p[pos + i];
      pos += len;
    } else if (info > 27) {
      return "unsupported CBOR item (indefinite length or reserved)" + at(start);
    }
    switch (major) {
    case 0: case 1: break;
    case 2: case 3:
      if (arg > n - pos) return "string runs past the end of the structured part" + at(start);
      pos += size_t(arg);
      break;
    case 4: case 5:
      // Every item takes at least one byte, which bounds the counts.
      if (arg > n - pos) return "container runs past the end of the structured part" + at(start);
      if (open.size() > kMaxCborDepth) return "structured part nested too deeply" + at(start);
      open.push_back(major == 5 ? arg * 2 : arg);
      break;
    case 6: return "unsupported CBOR tag" + at(start);
    case 7:
      if (!(info == 20 || info == 21 || info == 22 || info == 25 || info == 26 || info == 27))
        return "unsupported CBOR simple value" + at(start);
      break;
    }
  }
  if (pos != n) return "trailing bytes after the structured part" + at(pos);
  return "";
}

/// Typed access to the decoded meta with JSON-pointer diagnostics.
class MetaReader {
public:
  explicit MetaReader(const std::string &file) : file_(file) {}

  [[noreturn]] void fail(const std::string &ptr, const std::string &msg) const {
    throw UserError(file_, std::string(kSectionMeta) + ": " + (ptr.empty() ? "/" : ptr), msg);
  }

  const json &field(const json &obj, const char *key, const std::string &ptr) const {
    object(obj, ptr);
    auto it = obj.find(key);
    if (it == obj.end()) fail(ptr, std::string("missing field '") + key + "'");
    return *it;
  }
  const json &object(const json &j, const std::string &ptr) const {
    if (!j.is_object()) fail(ptr, std::string("expected an object, got ") + j.type_name());
    return j;
  }
  const json &array(const json &j, const std::string &ptr) const {
    if (!j.is_array()) fail(ptr, std::string("expected an array, got ") + j.type_name());
    return j;
  }
  std::string str(const json &j, const std::string &ptr) const {
    if (!j.is_string()) fail(ptr, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }
  uint64_t u64(const json &j, const std::string &ptr, uint64_t max = UINT64_MAX) const {
    if (!j.is_number_unsigned())
      fail(ptr, std::string("expected an unsigned integer, got ") + describe(j));
    uint64_t v = j.get<uint64_t>();
    if (v > max) fail(ptr, std::to_string(v) + " is out of range (at most " + std::to_string(max) + ")");
    return v;
  }
  uint32_t u32(const json &j, const std::string &ptr) const {
    return uint32_t(u64(j, ptr, std::numeric_limits<uint32_t>::max()));
  }
  /// An integer in [-1, 2^31): stage and micro-batch indices, -1 for none.
  int64_t i64(const json &j, const std::string &ptr) const {
    if (!j.is_number_integer()) fail(ptr, std::string("expected an integer, got ") + j.type_name());
    int64_t v = j.get<int64_t>();
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT32_MAX)) v = INT64_MAX;
    if (v < -1 || v > INT32_MAX)
      fail(ptr, "index " + j.dump() + " is out of range (-1 .. 2147483647)");
    return v;
  }
  double number(const json &j, const std::string &ptr) const {
    if (!j.is_number()) fail(ptr, std::string("expected a number, got ") + j.type_name());
    return j.get<double>();
  }
  DType dtype(const json &j, const std::string &ptr) const {
    std::string s = str(j, ptr);
    if (auto t = ops::parseDType(s)) return *t;
    fail(ptr, "unknown dtype '" + s + "' (expected " + ops::dtypeNameList() + ")");
  }
  std::vector<int64_t> shape(const json &j, const std::string &ptr) const {
    array(j, ptr);
    if (j.size() > ops::kMaxRank) fail(ptr, ops::rankLimitText(j.size()));
    std::vector<int64_t> dims;
    int64_t n = 1;
    for (size_t i = 0; i < j.size(); ++i) {
      std::string p = ptr + "/" + std::to_string(i);
      int64_t d = int64_t(u64(j[i], p, uint64_t(ops::kMaxElements)));
      if (d != 0 && n > ops::kMaxElements / d) fail(ptr, "shape has too many elements");
      n *= d;
      dims.push_back(d);
    }
    return dims;
  }
  std::vector<uint32_t> ids(const json &j, const std::string &ptr) const {
    array(j, ptr);
    std::vector<uint32_t> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(u32(j[i], ptr + "/" + std::to_string(i)));
    return out;
  }

  AttrValue attr(const json &j, const std::string &ptr) const {
    switch (j.type()) {
    case json::value_t::boolean: return j.get<bool>();
    case json::value_t::number_integer: return j.get<int64_t>();
    case json::value_t::number_unsigned:
      return int64_t(u64(j, ptr, uint64_t(std::numeric_limits<int64_t>::max())));
    case json::value_t::number_float: return j.get<double>();
    case json::value_t::string: return j.get<std::string>();
    case json::value_t::array: {
      std::vector<int64_t> xs;
      for (size_t i = 0; i < j.size(); ++i) {
        const json &e = j[i];
        std::string p = ptr + "/" + std::to_string(i);
        if (e.is_number_integer() && !e.is_number_unsigned()) xs.push_back(e.get<int64_t>());
        else xs.push_back(int64_t(u64(e, p, uint64_t(std::numeric_limits<int64_t>::max()))));
      }
      return xs;
    }
    default:
      fail(ptr, std::string("attribute value must be a bool, number, string or integer list, got ") +
                    j.type_name());
    }
  }

  Buffer buffer(const json &j, const std::string &ptr) const {
    Buffer b;
    b.name = str(field(j, "name", ptr), ptr + "/name");
    b.dtype = dtype(field(j, "dtype", ptr), ptr + "/dtype");
    b.shape = shape(field(j, "shape", ptr), ptr + "/shape");
    std::string region = str(field(j, "region", ptr), ptr + "/region");
    if (region == "arena") b.region = Region::Arena;
    else if (region == "persistent") b.region = Region::Persistent;
    else fail(ptr + "/region", "unknown region '" + region + "' (expected arena or persistent)");
    b.offset = u64(field(j, "offset", ptr), ptr + "/offset");
    b.bytes = u64(field(j, "bytes", ptr), ptr + "/bytes");
    return b;
  }

  Instr instr(const json &j, const std::string &ptr) const {
    Instr in;
    std::string kind = str(field(j, "kind", ptr), ptr + "/kind");
    in.node = str(field(j, "node", ptr), ptr + "/node");
    if (kind == "kernel") {
      in.kind = InstrKind::Kernel;
      in.op = str(field(j, "op", ptr), ptr + "/op");
      const json &attrs = object(field(j, "attrs", ptr), ptr + "/attrs");
      for (const auto &[k, v] : attrs.items()) in.attrs[k] = attr(v, ptr + "/attrs/" + k);
      in.inputs = ids(field(j, "inputs", ptr), ptr + "/inputs");
      in.output = u32(field(j, "output", ptr), ptr + "/output");
    } else if (kind == "send") {
      in.kind = InstrKind::Send;
      in.inputs = ids(field(j, "inputs", ptr), ptr + "/inputs");
      in.peer = u32(field(j, "peer", ptr), ptr + "/peer");
      in.channel = u32(field(j, "channel", ptr), ptr + "/channel");
    } else if (kind == "recv") {
      in.kind = InstrKind::Recv;
      in.output = u32(field(j, "output", ptr), ptr + "/output");
      in.peer = u32(field(j, "peer", ptr), ptr + "/peer");
      in.channel = u32(field(j, "channel", ptr), ptr + "/channel");
    } else if (kind == "collective") {
      in.kind = InstrKind::Collective;
      in.op = str(field(j, "op", ptr), ptr + "/op");
      in.group = ids(field(j, "group", ptr), ptr + "/group");
      in.inputs = ids(field(j, "inputs", ptr), ptr + "/inputs");
      in.output = u32(field(j, "output", ptr), ptr + "/output");
      in.channel = u32(field(j, "channel", ptr), ptr + "/channel");
    } else {
      fail(ptr + "/kind",
           "unknown instruction kind '" + kind + "' (expected kernel, send, recv or collective)");
    }
    if (auto it = j.find("action"); it != j.end()) {
      const json &a = array(*it, ptr + "/action");
      if (a.size() != 3) fail(ptr + "/action", "expected [kind, stage, microbatch]");
      uint64_t k = u64(a[0], ptr + "/action/0", Action::WeightGrad);
      if (k == Action::None) fail(ptr + "/action/0", "action kind 0 is written as no action");
      in.action.kind = Action::Kind(k);
      in.action.stage = int32_t(i64(a[1], ptr + "/action/1"));
      in.action.microbatch = int32_t(i64(a[2], ptr + "/action/2"));
    }
    return in;
  }

  TensorRef ref(const json &j, const std::string &ptr) const {
    TensorRef r;
    r.name = str(field(j, "name", ptr), ptr + "/name");
    r.dtype = dtype(field(j, "dtype", ptr), ptr + "/dtype");
    r.shape = shape(field(j, "shape", ptr), ptr + "/shape");
    r.device = u32(field(j, "device", ptr), ptr + "/device");
    r.buffer = u32(field(j, "buffer", ptr), ptr + "/buffer");
    r.mirrors = placements(j, "mirrors", ptr);
    r.shards = placements(j, "shards", ptr);
    if (auto it = j.find("shard_axis"); it != j.end()) {
      uint32_t axis = u32(*it, ptr + "/shard_axis");
      if (axis >= r.shape.size())
        fail(ptr + "/shard_axis", "shard_axis " + std::to_string(axis) + " of '" + r.name +
                                      "' is not an axis of its shape");
      r.shardAxis = int32_t(axis);
    }
    return r;
  }

  /// A list of [device, buffer] pairs under `key`; empty when absent.
  std::vector<Placement> placements(const json &j, const char *key, const std::string &ptr) const {
    std::vector<Placement> out;
    auto it = j.find(key);
    if (it == j.end()) return out;
    std::string lp = ptr + "/" + key;
    const json &a = array(*it, lp);
    for (size_t i = 0; i < a.size(); ++i) {
      std::string mp = lp + "/" + std::to_string(i);
      std::vector<uint32_t> pair = ids(a[i], mp);
      if (pair.size() != 2) fail(mp, "expected [device, buffer]");
      out.push_back({pair[0], pair[1]});
    }
    return out;
  }

  std::vector<TensorRef> refs(const json &meta, const char *key) const {
    std::string ptr = std::string("/") + key;
    const json &a = array(field(meta, key, ""), ptr);
    std::vector<TensorRef> out;
    for (size_t i = 0; i < a.size(); ++i) out.push_back(ref(a[i], ptr + "/" + std::to_string(i)));
    return out;
  }

  Plan plan(const json &meta) const {
    Plan p;
    object(meta, "");
    p.model = str(field(meta, "model", ""), "/model");
    p.seed = u64(field(meta, "seed", ""), "/seed");
    p.precision = str(field(meta, "precision", ""), "/precision");
    if (!ops::isPrecision(p.precision))
      fail("/precision", "unknown precision '" + p.precision + "' (expected " +
                             ops::precisionList() + ")");
    p.modelChecksum = u64(field(meta, "model_checksum", ""), "/model_checksum");
    const json &devices = array(field(meta, "devices", ""), "/devices");
    for (size_t di = 0; di < devices.size(); ++di) {
      std::string dp = "/devices/" + std::to_string(di);
      const json &dj = devices[di];
      DeviceProgram d;
      d.device = str(field(dj, "name", dp), dp + "/name");
      d.arenaBytes = u64(field(dj, "arena_bytes", dp), dp + "/arena_bytes");
      d.persistentBytes = u64(field(dj, "persistent_bytes", dp), dp + "/persistent_bytes");
      d.noReuseBytes = u64(field(dj, "no_reuse_bytes", dp), dp + "/no_reuse_bytes");
      const json &bufs = array(field(dj, "buffers", dp), dp + "/buffers");
      for (size_t i = 0; i < bufs.size(); ++i) {
        d.buffers.push_back(buffer(bufs[i], dp + "/buffers/" + std::to_string(i)));
        d.buffers.back().id = uint32_t(i);
      }
      const json &instrs = array(field(dj, "instrs", dp), dp + "/instrs");
      for (size_t i = 0; i < instrs.size(); ++i)
        d.instrs.push_back(instr(instrs[i], dp + "/instrs/" + std::to_string(i)));
      p.devices.push_back(std::move(d));
    }
    p.inputs = refs(meta, "inputs");
    p.outputs = refs(meta, "outputs");
    p.params = refs(meta, "params");
    p.states = refs(meta, "states");
    const json &loss = field(meta, "loss", "");
    if (!loss.is_null()) {
      p.hasLoss = true;
      p.loss = ref(loss, "/loss");
    }
    const json &opt = object(field(meta, "optimizer", ""), "/optimizer");
    p.optimizer.kind = str(field(opt, "kind", "/optimizer"), "/optimizer/kind");
    const json &hyper = object(field(opt, "hyper", "/optimizer"), "/optimizer/hyper");
    for (const auto &[k, v] : hyper.items())
      p.optimizer.hyper[k] = number(v, "/optimizer/hyper/" + k);
    const json &ops = array(field(meta, "ops", ""), "/ops");
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string op = "/ops/" + std::to_string(i);
      OpSignature s;
      s.name = str(field(ops[i], "name", op), op + "/name");
      const json &n = array(field(ops[i], "operands", op), op + "/operands");
      if (n.size() != 2) fail(op + "/operands", "expected [min, max]");
      s.minInputs = uint32_t(u64(n[0], op + "/operands/0", 64));
      s.maxInputs = uint32_t(u64(n[1], op + "/operands/1", 64));
      const json &attrs = array(field(ops[i], "attrs", op), op + "/attrs");
      for (size_t a = 0; a < attrs.size(); ++a) {
        std::string ap = op + "/attrs/" + std::to_string(a);
        const json &pair = array(attrs[a], ap);
        if (pair.size() != 2) fail(ap, "expected [name, kind]");
        std::string kind = str(pair[1], ap + "/1");
        std::optional<AttrKind> k;
        for (AttrKind c : {AttrKind::Bool, AttrKind::Int, AttrKind::Float, AttrKind::String,
                           AttrKind::Ints})
          if (kind == attrKindName(c)) k = c;
        if (!k) fail(ap + "/1", "unknown attribute kind '" + kind +
                                    "' (expected bool, int, float, string or ints)");
        s.attrs.emplace_back(str(pair[0], ap + "/0"), *k);
      }
      p.ops.push_back(std::move(s));
    }
    if (auto it = meta.find("pipeline"); it != meta.end()) {
      const json &pj = object(*it, "/pipeline");
      p.pipeline.microbatches =
          int64_t(u64(field(pj, "microbatches", "/pipeline"), "/pipeline/microbatches", 1 << 20));
      p.pipeline.schedule = str(field(pj, "schedule", "/pipeline"), "/pipeline/schedule");
      if (pj.contains("in_flight"))
        p.pipeline.inFlight =
            int64_t(u64(pj.at("in_flight"), "/pipeline/in_flight", uint64_t(1) << 20));
      p.pipeline.stages = ids(field(pj, "stages", "/pipeline"), "/pipeline/stages");
    }
    return p;
  }

private:
  static std::string describe(const json &j) {
    if (j.is_number_integer()) return "a negative integer";
    if (j.is_number_float()) return "a floating-point number";
    return j.type_name();
  }
  const std::string &file_;
};

} // namespace

Plan deserializePlan(const uint8_t *data, size_t size, const std::string &file) {
  auto headerError = [&](const std::string &msg) {
    return UserError(file, kSectionHeader, msg);
  };
  // 1. Header.
  if (size >= sizeof kPlanMagic && std::memcmp(data, kPlanMagic, sizeof kPlanMagic) != 0)
    throw headerError("not an mpc plan file (bad magic; expected \"MPCPLAN\\0\")");
  if (size < kHeaderSize)
    throw headerError("file is truncated: " + std::to_string(size) +
                      " bytes, shorter than the " + std::to_string(kHeaderSize) + "-byte header");
  uint32_t version = uint32_t(loadLE(data + kHeaderVersionOffset, 4));
  if (version > kPlanFormatVersion)
    throw headerError("plan format version " + std::to_string(version) +
                      " is newer than this mpc supports (" + std::to_string(kPlanFormatVersion) + ")");
  if (version == 0) throw headerError("invalid plan format version 0");
  if (version < kPlanFormatVersion)
    throw headerError("plan format version " + std::to_string(version) +
                      " is older than this mpc reads (" + std::to_string(kPlanFormatVersion) +
                      "): compile the model again with this mpc");
  uint32_t flags = uint32_t(loadLE(data + kHeaderFlagsOffset, 4));
  if (flags != 0) throw headerError("unknown flags " + hex64(flags) + " (expected 0)");
  uint64_t metaLen = loadLE(data + kHeaderMetaLenOffset, 8);
  uint64_t dataLen = loadLE(data + kHeaderDataLenOffset, 8);
  if (metaLen == 0 || metaLen > kMaxMetaBytes)
    throw headerError("meta length " + std::to_string(metaLen) + " is out of range (1 to " +
                      std::to_string(kMaxMetaBytes) + ")");
  uint64_t dataOff = dataOffset(metaLen);
  if (dataLen > uint64_t(size) || dataOff + dataLen != uint64_t(size))
    throw headerError("file is " + std::to_string(size) + " bytes but its header describes " +
                      (dataLen > uint64_t(size) ? std::string("more than that")
                                                : std::to_string(dataOff + dataLen)) +
                      " (meta " + std::to_string(metaLen) + ", data " + std::to_string(dataLen) +
                      "): the file is truncated or has trailing bytes");
  uint64_t stored = loadLE(data + kHeaderChecksumOffset, 8);
  uint64_t actual = planChecksum(data + kHeaderSize, size - kHeaderSize);
  if (stored != actual)
    throw headerError("checksum mismatch: the header says " + hex64(stored) +
                      ", the content hashes to " + hex64(actual) + " (the file is corrupt)");
  for (uint64_t i = metaOffset() + metaLen; i < dataOff; ++i)
    if (data[i] != 0) throw UserError(file, kSectionData, "nonzero padding before the data section");

  // 2. Meta.
  const uint8_t *meta = data + metaOffset();
  if (std::string err = checkCbor(meta, size_t(metaLen)); !err.empty())
    throw UserError(file, kSectionMeta, err);
  json j;
  try {
    j = json::from_cbor(meta, meta + metaLen, /*strict=*/true, /*allow_exceptions=*/true);
  } catch (const json::exception &e) {
    throw UserError(file, kSectionMeta, std::string("cannot decode the structured part: ") + e.what());
  }
  MetaReader reader(file);
  Plan plan = reader.plan(j);

  // 3. Data: initial values of params then states.
  const json &values = reader.array(reader.field(j, "initial_values", ""), "/initial_values");
  size_t expected = plan.params.size() + plan.states.size();
  if (values.size() != expected)
    reader.fail("/initial_values", std::to_string(values.size()) + " initial values for " +
                                       std::to_string(plan.params.size()) + " params and " +
                                       std::to_string(plan.states.size()) + " states");
  const uint8_t *dataBase = data + dataOff;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string ptr = "/initial_values/" + std::to_string(i);
    const TensorRef &r = i < plan.params.size() ? plan.params[i] : plan.states[i - plan.params.size()];
    uint64_t off = reader.u64(reader.field(values[i], "offset", ptr), ptr + "/offset");
    uint64_t bytes = reader.u64(reader.field(values[i], "bytes", ptr), ptr + "/bytes");
    if (off % kPlanAlignment != 0)
      reader.fail(ptr + "/offset", "offset " + std::to_string(off) + " is not 64-byte aligned");
    if (off > dataLen || bytes > dataLen - off)
      reader.fail(ptr, "bytes [" + std::to_string(off) + ", +" + std::to_string(bytes) +
                           ") run past the data section (" + std::to_string(dataLen) + " bytes)");
    uint64_t want = uint64_t(r.numElements()) * uint64_t(ops::dtypeSize(r.dtype));
    if (bytes != want)
      reader.fail(ptr + "/bytes", std::to_string(bytes) + " bytes for '" + r.name + "' of " +
                                      std::to_string(r.numElements()) + " elements (expected " +
                                      std::to_string(want) + ")");
    plan.initialValues.emplace_back(dataBase + off, dataBase + off + bytes);
  }

  // 4. Cross-references.
  std::vector<std::string> problems = verifyPlan(plan);
  if (!problems.empty()) {
    std::string msg = problems.front();
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more)";
    throw UserError(file, kSectionVerify, msg);
  }
  return plan;
}

Plan readPlanFile(const std::string &path, uint64_t *checksum) {
  std::vector<uint8_t> bytes = readFileBytes(path);
  Plan plan = deserializePlan(bytes.data(), bytes.size(), path);
  // The header checksum, already checked against the content above.
  if (checksum) *checksum = loadLE(bytes.data() + kHeaderChecksumOffset, 8);
  return plan;
}

} // namespace mpc::plan
