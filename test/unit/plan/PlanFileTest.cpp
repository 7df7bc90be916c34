//===- test/unit/plan/PlanFileTest.cpp - plan.bin round trip and abuse ---===//
//
// serializePlan/deserializePlan round trip; every damaged file is rejected
// with a UserError (never a crash, never another exception): truncation at
// every section boundary and at random points, flipped bytes in every section
// (caught by the checksum), flipped bytes with the checksum recomputed (so the
// decoder and the field checks see them), hostile CBOR, wrong magic, future
// versions, and meta edited to break each cross-reference the verifier checks.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lower.h"
#include "compiler/Compile.h"
#include "ir/OpInfo.h"
#include "plan/OpSignatures.h"
#include "plan/PlanFormat.h"
#include "plan/PlanIO.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "test/unit/codegen/TestGraphs.h"
#include "test/unit/runtime/SingleKernelPlan.h"

#include <gtest/gtest.h>

#include <set>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

namespace mpc {
namespace {

using nlohmann::json;

std::vector<uint8_t> seedPlanBytes() {
  auto g = test::seedTrainingGraph();
  return plan::serializePlan(compiler::lower(*g, {}));
}

std::string printed(const plan::Plan &p) {
  std::ostringstream os;
  plan::printPlan(p, os);
  return os.str();
}

/// Parses `bytes`; returns the UserError text, "" when accepted. Any other
/// exception fails the test.
std::string parseError(const std::vector<uint8_t> &bytes) {
  try {
    plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
    return "";
  } catch (const UserError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
    return "unexpected";
  }
}

uint64_t metaLen(const std::vector<uint8_t> &f) { return plan::loadLE(&f[plan::kHeaderMetaLenOffset], 8); }

void reseal(std::vector<uint8_t> &f) {
  uint64_t sum = plan::planChecksum(f.data() + plan::kHeaderSize, f.size() - plan::kHeaderSize);
  plan::storeLE(&f[plan::kHeaderChecksumOffset], sum, 8);
}

json decodeMeta(const std::vector<uint8_t> &f) {
  auto *m = f.data() + plan::metaOffset();
  return json::from_cbor(m, m + metaLen(f));
}

/// Rebuilds a file around an edited meta, keeping the data section.
std::vector<uint8_t> withMeta(const std::vector<uint8_t> &f, const json &meta) {
  uint64_t oldData = plan::dataOffset(metaLen(f));
  std::vector<uint8_t> cbor = json::to_cbor(meta);
  std::vector<uint8_t> out(plan::dataOffset(cbor.size()), 0);
  std::copy(f.begin(), f.begin() + plan::kHeaderSize, out.begin());
  std::copy(cbor.begin(), cbor.end(), out.begin() + plan::metaOffset());
  out.insert(out.end(), f.begin() + oldData, f.end());
  plan::storeLE(&out[plan::kHeaderMetaLenOffset], cbor.size(), 8);
  reseal(out);
  return out;
}

TEST(PlanFile, RoundTripIsExact) {
  auto g = test::seedTrainingGraph();
  compiler::CompileOptions options;
  options.lower.seed = 5;
  plan::Plan p = compiler::lower(*g, options);
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  plan::Plan q = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  EXPECT_EQ(plan::serializePlan(q), bytes);
  EXPECT_EQ(printed(q), printed(p));
  EXPECT_EQ(q.initialValues, p.initialValues);
  EXPECT_EQ(q.seed, 5u);
  ASSERT_EQ(q.devices.size(), p.devices.size());
  for (size_t d = 0; d < p.devices.size(); ++d) {
    ASSERT_EQ(q.devices[d].instrs.size(), p.devices[d].instrs.size());
    for (size_t i = 0; i < p.devices[d].instrs.size(); ++i) {
      EXPECT_EQ(q.devices[d].instrs[i].attrs, p.devices[d].instrs[i].attrs);
      EXPECT_EQ(q.devices[d].instrs[i].inputs, p.devices[d].instrs[i].inputs);
    }
    EXPECT_EQ(q.devices[d].arenaBytes, p.devices[d].arenaBytes);
  }
  EXPECT_EQ(q.optimizer.hyper, p.optimizer.hyper);
}

TEST(PlanFile, AttributeKindsSurviveTheRoundTrip) {
  // One kernel per kind, with the values that stress the encoding: a tiny
  // real, a real with an integral value, a negative integer, a string, an
  // empty list and a list with a negative entry.
  using ir::DType;
  struct Case {
    std::string op;
    plan::AttrMap attrs;
    std::vector<test::OperandType> operands;
    test::OperandType result;
  };
  const std::vector<Case> cases = {
      {"fill", {{"value", 1e-300}, {"shape", std::vector<int64_t>{2}}}, {}, {DType::F32, {2}}},
      {"scale", {{"value", 2.0}}, {{DType::F32, {2}}}, {DType::F32, {2}}},
      {"softmax_cross_entropy",
       {{"ignore_index", int64_t(-3)}, {"reduction", std::string("sum")}},
       {{DType::F32, {2, 3}}, {DType::I32, {2}}},
       {DType::F32, {}}},
      {"matmul",
       {{"transpose_a", true}, {"transpose_b", false}},
       {{DType::F32, {2, 2}}, {DType::F32, {2, 2}}},
       {DType::F32, {2, 2}}},
      {"transpose",
       {{"perm", std::vector<int64_t>{}}},
       {{DType::F32, {2, 3}}},
       {DType::F32, {3, 2}}},
      {"reshape",
       {{"shape", std::vector<int64_t>{-1, 2}}},
       {{DType::F32, {4}}},
       {DType::F32, {2, 2}}},
  };
  for (const Case &c : cases) {
    plan::Plan p = test::singleKernelPlan(c.op, c.attrs, c.operands, c.result);
    codegen::fillOpTable(p);
    std::vector<uint8_t> bytes = plan::serializePlan(p);
    plan::Plan q = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
    EXPECT_EQ(q.devices[0].instrs[0].attrs, c.attrs) << c.op;
  }
}

TEST(PlanFile, WritesAreByteForByteDeterministic) {
  EXPECT_EQ(seedPlanBytes(), seedPlanBytes());
}

TEST(PlanFile, LayoutIsAsDocumented) {
  std::vector<uint8_t> f = seedPlanBytes();
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(f.data()), 7), "MPCPLAN");
  EXPECT_EQ(f[7], 0);
  EXPECT_EQ(plan::loadLE(&f[8], 4), 6u);
  uint64_t data = plan::dataOffset(metaLen(f));
  EXPECT_EQ(data % 64, 0u);
  EXPECT_EQ(data + plan::loadLE(&f[24], 8), f.size());
}

TEST(PlanFile, TruncationAtEverySectionBoundaryIsRejected) {
  std::vector<uint8_t> f = seedPlanBytes();
  json meta = decodeMeta(f);
  uint64_t data = plan::dataOffset(metaLen(f));
  std::vector<size_t> cuts = {0, 1, 7, 8, 12, 16, 24, 32, 39, 40, 41};
  cuts.push_back(size_t(plan::metaOffset() + metaLen(f) - 1));
  cuts.push_back(size_t(plan::metaOffset() + metaLen(f)));
  cuts.push_back(size_t(data));
  for (const json &v : meta["initial_values"]) {
    cuts.push_back(size_t(data + v["offset"].get<uint64_t>()));
    cuts.push_back(size_t(data + v["offset"].get<uint64_t>() + v["bytes"].get<uint64_t>() - 1));
  }
  cuts.push_back(f.size() - 1);
  for (size_t cut : cuts) {
    ASSERT_LT(cut, f.size());
    std::vector<uint8_t> t(f.begin(), f.begin() + cut);
    EXPECT_NE(parseError(t), "") << "cut at " << cut;
  }
  std::vector<uint8_t> t(f.begin(), f.begin() + 20);
  EXPECT_EQ(parseError(t), "plan.bin: error: header: file is truncated: 20 bytes, shorter than "
                           "the 40-byte header");
  t.assign(f.begin(), f.end() - 1);
  EXPECT_NE(parseError(t).find("plan.bin: error: header: file is " + std::to_string(f.size() - 1) +
                               " bytes but its header describes " + std::to_string(f.size())),
            std::string::npos)
      << parseError(t);
}

TEST(PlanFile, TruncationAtRandomPointsIsRejected) {
  std::vector<uint8_t> f = seedPlanBytes();
  std::mt19937 rng(1);
  for (int i = 0; i < 300; ++i) {
    size_t cut = rng() % f.size();
    std::vector<uint8_t> t(f.begin(), f.begin() + cut);
    EXPECT_NE(parseError(t), "") << "cut at " << cut;
  }
  std::vector<uint8_t> longer = f;
  longer.push_back(0);
  EXPECT_NE(parseError(longer), "");
}

TEST(PlanFile, EveryFlippedByteIsRejected) {
  std::vector<uint8_t> f = seedPlanBytes();
  for (size_t i = 0; i < f.size(); ++i) {
    std::vector<uint8_t> t = f;
    t[i] ^= uint8_t(1u << (i % 8));
    EXPECT_NE(parseError(t), "") << "flip at " << i;
  }
  std::vector<uint8_t> t = f;
  t[plan::metaOffset() + 5] ^= 0x10;
  EXPECT_NE(parseError(t).find("plan.bin: error: header: checksum mismatch"), std::string::npos);
}

TEST(PlanFile, ResealedFlipsNeverCrash) {
  // With the checksum recomputed, damage reaches the decoder and the field
  // checks: each file is rejected with a UserError or, when the flip hit a
  // harmless spot (a letter in a name), read as a plan that verifies.
  std::vector<uint8_t> f = seedPlanBytes();
  std::mt19937 rng(2);
  int rejected = 0;
  for (size_t i = plan::kHeaderSize; i < f.size(); i += 1 + rng() % 3) {
    std::vector<uint8_t> t = f;
    t[i] ^= uint8_t(1 + rng() % 255);
    reseal(t);
    std::string err = parseError(t);
    if (!err.empty()) {
      ++rejected;
      EXPECT_EQ(err.rfind("plan.bin: error: ", 0), 0u) << err;
    } else {
      plan::Plan q = plan::deserializePlan(t.data(), t.size(), "plan.bin");
      EXPECT_TRUE(plan::verifyPlan(q).empty());
    }
  }
  EXPECT_GT(rejected, 100);
}

TEST(PlanFile, ForeignFileIsRejected) {
  std::string text = "{\"mpc\": 1, \"name\": \"not a plan\"}\n";
  std::vector<uint8_t> t(text.begin(), text.end());
  EXPECT_EQ(parseError(t), "plan.bin: error: header: not an mpc plan file (bad magic; expected "
                           "\"MPCPLAN\\0\")");
  EXPECT_NE(parseError({}), "");
  EXPECT_NE(parseError({'M', 'P', 'C'}), "");
}

TEST(PlanFile, FutureVersionIsRejected) {
  std::vector<uint8_t> f = seedPlanBytes();
  plan::storeLE(&f[plan::kHeaderVersionOffset], 7, 4);
  EXPECT_EQ(parseError(f),
            "plan.bin: error: header: plan format version 7 is newer than this mpc supports (6)");
  plan::storeLE(&f[plan::kHeaderVersionOffset], 0, 4);
  EXPECT_NE(parseError(f), "");
}

TEST(PlanFile, OlderVersionIsRejected) {
  // Version 1 predates the op table the verifier checks kernels against.
  std::vector<uint8_t> f = seedPlanBytes();
  plan::storeLE(&f[plan::kHeaderVersionOffset], 1, 4);
  EXPECT_EQ(parseError(f), "plan.bin: error: header: plan format version 1 is older than this "
                           "mpc reads (6): compile the model again with this mpc");
}

TEST(PlanFile, HugeLengthsAreRejectedBeforeAllocating) {
  std::vector<uint8_t> f = seedPlanBytes();
  std::vector<uint8_t> t = f;
  plan::storeLE(&t[plan::kHeaderMetaLenOffset], ~uint64_t(0), 8);
  EXPECT_NE(parseError(t).find("meta length"), std::string::npos);
  t = f;
  plan::storeLE(&t[plan::kHeaderDataLenOffset], ~uint64_t(0) - 10, 8);
  EXPECT_NE(parseError(t).find("header describes more than that"), std::string::npos) << parseError(t);
}

TEST(PlanFile, HostileCborIsRejected) {
  std::vector<uint8_t> f = seedPlanBytes();
  auto withRawMeta = [&](std::vector<uint8_t> cbor) {
    std::vector<uint8_t> out(plan::dataOffset(cbor.size()), 0);
    std::copy(f.begin(), f.begin() + plan::kHeaderSize, out.begin());
    std::copy(cbor.begin(), cbor.end(), out.begin() + plan::metaOffset());
    plan::storeLE(&out[plan::kHeaderMetaLenOffset], cbor.size(), 8);
    plan::storeLE(&out[plan::kHeaderDataLenOffset], 0, 8);
    reseal(out);
    return out;
  };
  std::vector<uint8_t> deep(200000, 0x81); // [[[[...]]]]
  deep.push_back(0x00);
  EXPECT_NE(parseError(withRawMeta(deep)).find("meta: structured part nested too deeply"),
            std::string::npos);
  // An array claiming 2^64-1 elements, a string claiming 2^32 bytes.
  EXPECT_NE(parseError(withRawMeta({0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})), "");
  EXPECT_NE(parseError(withRawMeta({0x7a, 0xff, 0xff, 0xff, 0xff, 'a'})), "");
  EXPECT_NE(parseError(withRawMeta({0x9f, 0x01, 0xff})).find("indefinite"), std::string::npos);
  EXPECT_NE(parseError(withRawMeta({0xc1, 0x00})).find("tag"), std::string::npos);
  EXPECT_NE(parseError(withRawMeta({0x01, 0x02})).find("trailing"), std::string::npos);
  EXPECT_NE(parseError(withRawMeta({0x01})).find("meta: /: expected an object, got number"),
            std::string::npos)
      << parseError(withRawMeta({0x01}));
  EXPECT_NE(parseError(withRawMeta({0xa1, 0x01, 0x02})), ""); // a map with an integer key
}

TEST(PlanFile, FieldTypesAreCheckedWithTheirPointer) {
  std::vector<uint8_t> f = seedPlanBytes();
  json meta = decodeMeta(f);
  json m = meta;
  m["devices"][0]["instrs"][0]["inputs"][1] = "w0";
  EXPECT_EQ(parseError(withMeta(f, m)), "plan.bin: error: meta: /devices/0/instrs/0/inputs/1: "
                                        "expected an unsigned integer, got string");
  m = meta;
  m["devices"][1]["buffers"][0]["offset"] = -64;
  EXPECT_EQ(parseError(withMeta(f, m)), "plan.bin: error: meta: /devices/1/buffers/0/offset: "
                                        "expected an unsigned integer, got a negative integer");
  m = meta;
  m["devices"][0].erase("instrs");
  EXPECT_EQ(parseError(withMeta(f, m)), "plan.bin: error: meta: /devices/0: missing field 'instrs'");
  m = meta;
  m["devices"][0]["buffers"][0]["shape"] = json::array({1u << 30, 1u << 30});
  EXPECT_EQ(parseError(withMeta(f, m)),
            "plan.bin: error: meta: /devices/0/buffers/0/shape: shape has too many elements");
  m = meta;
  m["devices"][0]["instrs"][0]["kind"] = "jump";
  EXPECT_NE(parseError(withMeta(f, m)).find("unknown instruction kind 'jump'"), std::string::npos);
  m = meta;
  m["initial_values"][0]["offset"] = 1u << 20;
  EXPECT_NE(parseError(withMeta(f, m)).find("meta: /initial_values/0: bytes [1048576"),
            std::string::npos)
      << parseError(withMeta(f, m));
  m = meta;
  m["initial_values"][1]["bytes"] = 4;
  EXPECT_NE(parseError(withMeta(f, m)).find("meta: /initial_values/1/bytes"), std::string::npos);
}

TEST(PlanFile, BrokenCrossReferencesAreRejectedByTheVerifier) {
  std::vector<uint8_t> f = seedPlanBytes();
  json meta = decodeMeta(f);
  json m = meta;
  m["devices"][0]["instrs"][0]["inputs"][0] = 999;
  EXPECT_NE(parseError(withMeta(f, m))
                .find("plan.bin: error: verify: /devices/0/instrs/0/inputs/0: buffer 999 does not "
                      "exist (cpu:0 has"),
            std::string::npos)
      << parseError(withMeta(f, m));
  m = meta;
  m["devices"][0]["arena_bytes"] = 64;
  EXPECT_NE(parseError(withMeta(f, m)).find("lie outside the arena"), std::string::npos);
  m = meta;
  for (json &in : m["devices"][0]["instrs"])
    if (in["kind"] == "send") in["channel"] = 77;
  EXPECT_NE(parseError(withMeta(f, m)).find("no matching"), std::string::npos);
  m = meta;
  m["params"][0]["device"] = 9;
  EXPECT_NE(parseError(withMeta(f, m)).find("verify: /params/0/device: device 9 does not exist"),
            std::string::npos);
}

/// The seed example's model (examples/regression3: Adam, three devices).
std::string exampleModel() {
  return readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json");
}

/// The seed example as plan.bin.
std::vector<uint8_t> examplePlanBytes() {
  return plan::serializePlan(compiler::compileModel(exampleModel()));
}

/// The meta in `f` is the bytes nlohmann::json::to_cbor gives for the same
/// document (decoded and encoded again): the streaming writer sorts every
/// map's keys and uses the shortest forms, as the tree-based writer did.
void expectNlohmannEncoding(const std::vector<uint8_t> &f, const std::string &what) {
  std::vector<uint8_t> meta(f.begin() + plan::metaOffset(),
                            f.begin() + plan::metaOffset() + metaLen(f));
  EXPECT_EQ(json::to_cbor(json::from_cbor(meta)), meta) << what;
}

TEST(PlanFile, MetaIsNlohmannsEncodingOfTheSameDocument) {
  expectNlohmannEncoding(seedPlanBytes(), "seed graph");
  expectNlohmannEncoding(examplePlanBytes(), "regression3");
  passes::PassOptions pipelined;
  pipelined.microbatches = 4;
  pipelined.schedule = "1f1b";
  std::string model =
      readFileText(std::string(MPC_SOURCE_DIR) + "/examples/regression3/model.json");
  expectNlohmannEncoding(plan::serializePlan(compiler::compileModel(model, pipelined)),
                         "regression3, 1f1b");

  // Every field and value kind, at the edges of their encodings; the plan
  // need not be valid, only written.
  plan::Plan p;
  p.model = std::string(300, 'm');
  p.seed = ~0ull;
  plan::DeviceProgram d;
  d.device = "cpu:0";
  d.arenaBytes = 1ull << 40;
  d.buffers.push_back({0, "a", plan::DType::I32, {}, plan::Region::Arena, 64, 4});
  plan::Instr k;
  k.op = "test";
  k.node = "n";
  k.attrs = {{"b", false}, {"i", std::numeric_limits<int64_t>::min()}, {"j", int64_t(-25)},
             {"f", std::nan("")}, {"g", -std::numeric_limits<double>::infinity()},
             {"h", 0.1}, {"s", std::string(70000, 's')}, {"l", std::vector<int64_t>(300, -1)}};
  k.inputs = std::vector<uint32_t>(30, 70000);
  k.action = {plan::Action::Forward, 3, 1};
  plan::Instr send;
  send.kind = plan::InstrKind::Send;
  send.inputs = {0};
  send.peer = 1;
  send.channel = 1u << 31;
  send.action = {plan::Action::Update, -1, -1};
  plan::Instr recv;
  recv.kind = plan::InstrKind::Recv;
  recv.output = 0;
  d.instrs = {k, send, recv};
  p.devices = {d, d};
  p.inputs.push_back({"x", plan::DType::F32, {100, 2}, 1, 0, {}, {}});
  p.optimizer = {"sgd", {{"lr", 0.01}, {"momentum", 0.0}, {"nesterov", 1.0}}};
  p.pipeline = {3, "zb-h2", {0, 1, 0}, 4};
  p.ops = {{"test", 0, ~0u, {{"b", plan::AttrKind::Bool}, {"l", plan::AttrKind::Ints}}}};
  p.initialValues = {std::vector<uint8_t>(5, 1), {}, std::vector<uint8_t>(130, 2)};
  expectNlohmannEncoding(plan::serializePlan(p), "every field");
  p.devices[0].instrs[0].action = {};
  p.hasLoss = true;
  p.pipeline = {};
  expectNlohmannEncoding(plan::serializePlan(p), "no pipeline, a loss");
}

/// Where the first kernel `op` of the plan lies: (device, instruction).
std::pair<size_t, size_t> findKernel(const json &meta, const std::string &op) {
  for (size_t d = 0; d < meta["devices"].size(); ++d)
    for (size_t i = 0; i < meta["devices"][d]["instrs"].size(); ++i)
      if (meta["devices"][d]["instrs"][i].value("op", "") == op) return {d, i};
  ADD_FAILURE() << "no " << op << " in the seed plan";
  return {0, 0};
}

/// The id of the buffer named `name` on device `d`.
size_t findBuffer(const json &meta, size_t d, const std::string &name) {
  const json &bufs = meta["devices"][d]["buffers"];
  for (size_t b = 0; b < bufs.size(); ++b)
    if (bufs[b]["name"] == name) return b;
  ADD_FAILURE() << "no buffer " << name;
  return 0;
}

// Structured edits of a valid plan, checksum recomputed, one per rule of the
// verifier's op and buffer checks (docs/plan-format.md, "What the reader
// checks"), including the crafted plans of the checkpoint issue.
TEST(PlanVerifier, RejectsOverlappingPersistentBuffers) {
  std::vector<uint8_t> f = examplePlanBytes();
  json m = decodeMeta(f);
  size_t d = size_t(m["params"][1]["device"]); // b0
  size_t step = findBuffer(m, d, "b0.adam.step"), v = findBuffer(m, d, "b0.adam.v");
  m["devices"][d]["buffers"][step]["offset"] = m["devices"][d]["buffers"][v]["offset"];
  std::string err = parseError(withMeta(f, m));
  EXPECT_NE(err.find("plan.bin: error: verify: /devices/0/buffers/"), std::string::npos) << err;
  EXPECT_NE(err.find("('b0.adam.v') and "), std::string::npos) << err;
  EXPECT_NE(err.find("('b0.adam.step') overlap"), std::string::npos) << err;
}

/// `f` with its meta replaced by `m` (checksum recomputed) is rejected with a
/// message containing `want`.
void expectEditError(const std::vector<uint8_t> &f, const json &m, const std::string &want) {
  std::string err = parseError(withMeta(f, m));
  EXPECT_NE(err.find(want), std::string::npos) << err;
}

TEST(PlanVerifier, RejectsMissingAndMistypedAttributes) {
  std::vector<uint8_t> f = examplePlanBytes();
  json meta = decodeMeta(f);
  auto expectError = [&](const json &m, const std::string &want) { expectEditError(f, m, want); };
  json m = meta;
  auto [fd, fi] = findKernel(m, "fill");
  m["devices"][fd]["instrs"][fi]["attrs"].erase("shape");
  expectError(m, "/instrs/" + std::to_string(fi) + "/attrs: 'fill' without its attribute 'shape' (a list of integers)");
  m = meta;
  auto [md, mi] = findKernel(m, "matmul");
  m["devices"][md]["instrs"][mi]["attrs"].erase("transpose_a");
  expectError(m, "/instrs/" + std::to_string(mi) + "/attrs: 'matmul' without its attribute 'transpose_a' (a bool)");
  m = meta;
  m["devices"][md]["instrs"][mi]["attrs"]["transpose_a"] = 1;
  expectError(m, "/attrs/transpose_a: attribute 'transpose_a' of 'matmul' must be a bool");
  m = meta;
  m["devices"][md]["instrs"][mi]["attrs"]["alpha"] = 2.0;
  expectError(m, "/attrs/alpha: 'matmul' has no attribute 'alpha'");
  m = meta;
  json &inputs = m["devices"][md]["instrs"][mi]["inputs"];
  json w = inputs[1]; // the first matmul is x [100,2] x w0 [2,2]: w0 is no accumulator
  inputs.push_back(w);
  expectError(m, "/inputs: matmul accumulator 'c' f32[2,2] does not match the product f32[100,2]");
  inputs.push_back(w);
  expectError(m, "/inputs: 'matmul' takes 2 to 3 operands, got 4");
}

TEST(PlanVerifier, RejectsShapesThatBreakTheOpRule) {
  std::vector<uint8_t> f = examplePlanBytes();
  json meta = decodeMeta(f);
  auto expectError = [&](const json &m, const std::string &want) { expectEditError(f, m, want); };
  json m = meta;
  auto [rd, ri] = findKernel(m, "reshape");
  m["devices"][rd]["instrs"][ri]["attrs"]["shape"] = json::array({int64_t(1) << 20, int64_t(1) << 20});
  expectError(m, "/inputs: cannot reshape f32[1,2] to [1048576,1048576]: element counts differ");
  m = meta;
  auto [fd, fi] = findKernel(m, "fill");
  m["devices"][fd]["instrs"][fi]["attrs"]["shape"] = json::array({7});
  expectError(m, "/output: 'fill' gives f32[7], but its result buffer 'loss.grad' is f32[]");
  m = meta;
  auto [md, mi] = findKernel(m, "matmul");
  bool ta = m["devices"][md]["instrs"][mi]["attrs"]["transpose_a"];
  m["devices"][md]["instrs"][mi]["attrs"]["transpose_a"] = !ta;
  expectError(m, "/inputs: shape mismatch: f32[100,2] x f32[2,2]");
}

TEST(PlanVerifier, RejectsWindowSizesThatDisagreeWithTheResult) {
  // The backward ops of conv2d and avg_pool2d state their result's spatial
  // size in an attribute; the buffers must agree with it: the shape rule
  // over the buffers gives another result, or finds dy unlike the forward
  // result of that size.
  const char *model = R"({
    "mpc": 1, "name": "cnn",
    "inputs": {"x": {"shape": [2, 2, 6, 6]}, "y": {"shape": [2, 3, 1, 1]}},
    "params": {"w0": {"shape": [2, 2, 1, 1], "init": {"xavier": {"magnitude": 2.0}}},
               "w": {"shape": [3, 2, 3, 3], "init": {"xavier": {"magnitude": 2.0}}}},
    "nodes": [
      {"name": "c0", "op": "conv2d", "inputs": ["x", "w0"]},
      {"name": "p", "op": "avg_pool2d", "inputs": ["c0"], "attrs": {"kernel": [2, 2]}},
      {"name": "c", "op": "conv2d", "inputs": ["p", "w"]},
      {"name": "loss", "op": "mse_loss", "inputs": ["c", "y"]}
    ],
    "loss": "loss", "optimizer": {"sgd": {"lr": 0.1}}
  })";
  auto g = compiler::compileGraph(model, passes::PassOptions{});
  std::vector<uint8_t> f = plan::serializePlan(compiler::lower(*g, {}));
  json meta = decodeMeta(f);
  json m = meta;
  auto [id, ii] = findKernel(m, "conv2d_grad_input");
  m["devices"][id]["instrs"][ii]["attrs"]["input_size"] = json::array({4, 3});
  expectEditError(f, m, "/inputs: conv2d_grad_input operand 'dy' f32[2,3,1,1] does not match "
                        "the conv2d result f32[2,3,2,1] of x f32[2,2,4,3] and w f32[3,2,3,3]");
  m = meta;
  auto [ad, ai] = findKernel(m, "avg_pool2d_grad");
  m["devices"][ad]["instrs"][ai]["attrs"]["input_size"] = json::array({7, 6});
  expectEditError(f, m, "/output: 'avg_pool2d_grad' gives f32[2,2,7,6], but its result "
                        "buffer 'c0.grad' is f32[2,2,6,6]");
  m = meta;
  auto [wd, wi] = findKernel(m, "conv2d_grad_weight");
  m["devices"][wd]["instrs"][wi]["attrs"]["kernel_size"] = json::array({2, 3});
  expectEditError(f, m, "/inputs: conv2d_grad_weight operand 'dy' f32[2,3,1,1] does not match "
                        "the conv2d result f32[2,3,2,1] of x f32[2,2,3,3] and w f32[3,2,2,3]");
}

TEST(PlanFile, MessagesEscapeNonUtf8Bytes) {
  std::vector<uint8_t> f = examplePlanBytes();
  json m = decodeMeta(f);
  m["devices"][0]["instrs"][0]["kind"] = std::string("kerne\xa1");
  EXPECT_EQ(parseError(withMeta(f, m)),
            "plan.bin: error: meta: /devices/0/instrs/0/kind: unknown instruction kind "
            "'kerne\\xa1' (expected kernel, send, recv or collective)");
}

TEST(PlanVerifier, RejectsABadOpTableAndScheduleLabels) {
  std::vector<uint8_t> f = examplePlanBytes();
  json meta = decodeMeta(f);
  json m = meta;
  std::swap(m["ops"][0], m["ops"][1]);
  expectEditError(f, m, "/ops/1/name: op '" + std::string(meta["ops"][0]["name"]) +
                            "' is out of order or listed twice");
  m = meta;
  m["ops"][0]["operands"] = json::array({3, 2});
  expectEditError(f, m, "/ops/0: op '" + std::string(meta["ops"][0]["name"]) +
                            "' takes 3 to 2 operands in the plan's op table, but takes ");
  m = meta;
  m["ops"][0]["name"] = "aaa_no_such_op";
  expectEditError(f, m, "/ops/0: op 'aaa_no_such_op' is not an op of this build of mpc");
  // Schedule labels belong to pipelined plans, with indices in range.
  m = meta;
  m["devices"][0]["instrs"][0]["action"] = json::array({1, 0, 0});
  expectEditError(f, m, "/devices/0/instrs/0/action: a schedule action in a plan that is not "
                        "pipelined");
  m["pipeline"] = {{"microbatches", 2}, {"schedule", "1f1b"}, {"stages", json::array({0, 9})}};
  expectEditError(f, m, "/pipeline/stages/1: device index 9 out of range");
  m["pipeline"]["stages"] = json::array({0});
  m["devices"][0]["instrs"][0]["action"] = json::array({2, 0, 5});
  expectEditError(f, m, "/devices/0/instrs/0/action: stage 0 or micro-batch 5 out of range");
  m["devices"][0]["instrs"][0]["action"] = json::array({0, 0, 0});
  expectEditError(f, m, "/action/0: action kind 0 is written as no action");
}

TEST(PlanVerifier, PlanCarriesTheOpTableOfItsKernels) {
  // The plan describes itself: its op table holds the signature of each op
  // its kernels name, as the op's schema states it.
  auto kindOf = [](ir::AttrType t) {
    switch (t) {
    case ir::AttrType::Bool: return plan::AttrKind::Bool;
    case ir::AttrType::Int: return plan::AttrKind::Int;
    case ir::AttrType::Float: return plan::AttrKind::Float;
    case ir::AttrType::String: return plan::AttrKind::String;
    case ir::AttrType::Ints: return plan::AttrKind::Ints;
    }
    return plan::AttrKind::Bool;
  };
  std::vector<uint8_t> f = examplePlanBytes();
  plan::Plan p = plan::deserializePlan(f.data(), f.size(), "plan.bin");
  std::set<std::string> used;
  for (const plan::DeviceProgram &d : p.devices)
    for (const plan::Instr &in : d.instrs)
      if (in.kind == plan::InstrKind::Kernel) used.insert(in.op);
  ASSERT_EQ(p.ops.size(), used.size());
  for (const plan::OpSignature &sig : p.ops) {
    EXPECT_TRUE(used.count(sig.name)) << sig.name;
    const ir::OpInfo *op = ir::lookupOp(sig.name);
    ASSERT_NE(op, nullptr) << sig.name;
    EXPECT_EQ(sig.minInputs, uint32_t(op->minArity)) << sig.name;
    EXPECT_EQ(sig.maxInputs, uint32_t(op->maxArity())) << sig.name;
    ASSERT_EQ(sig.attrs.size(), op->attrs.size()) << sig.name;
    for (size_t i = 0; i < op->attrs.size(); ++i) {
      EXPECT_EQ(sig.attrs[i].first, op->attrs[i].name) << sig.name;
      EXPECT_EQ(sig.attrs[i].second, kindOf(op->attrs[i].type)) << sig.name;
    }
  }
}

TEST(PlanVerifier, RejectsKernelsTheOpTableDoesNotDescribe) {
  std::vector<uint8_t> f = examplePlanBytes();
  json m = decodeMeta(f);
  json &ops = m["ops"];
  size_t at = 0;
  while (ops[at]["name"] != "matmul") ++at;
  ops.erase(at);
  std::string err = parseError(withMeta(f, m));
  EXPECT_NE(err.find("/op: op 'matmul' has no entry in the plan's op table (/ops)"),
            std::string::npos)
      << err;
  m = decodeMeta(f);
  m["ops"][0]["attrs"].push_back(json::array({"x", "complex"}));
  err = parseError(withMeta(f, m));
  EXPECT_NE(err.find("/ops/0/attrs/"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown attribute kind 'complex'"), std::string::npos) << err;
}

/// The verifier's problems with `p`, a plan built by hand: its op table is
/// filled in from the op records first, as the lowering does.
std::vector<std::string> problemsOf(plan::Plan p) {
  codegen::fillOpTable(p);
  return plan::verifyPlan(p);
}

plan::Plan twoDevicePlan() {
  plan::Plan p;
  p.model = "t";
  for (int d = 0; d < 2; ++d) {
    plan::DeviceProgram prog;
    prog.device = "cpu:" + std::to_string(d);
    prog.buffers.push_back({0, "a", plan::DType::F32, {4}, plan::Region::Arena, 0, 16});
    prog.buffers.push_back({1, "b", plan::DType::F32, {4}, plan::Region::Arena, 64, 16});
    prog.arenaBytes = 128;
    p.devices.push_back(prog);
  }
  return p;
}

plan::Instr kernel(std::vector<uint32_t> in, uint32_t out) {
  plan::Instr i;
  // A kernel of the right arity with its attributes (the verifier checks them).
  i.op = in.empty() ? "fill" : "relu";
  if (in.empty()) i.attrs = {{"value", 0.0}, {"shape", std::vector<int64_t>{4}}};
  i.inputs = std::move(in);
  i.output = out;
  return i;
}
plan::Instr send(uint32_t b, uint32_t peer, uint32_t ch) {
  plan::Instr i;
  i.kind = plan::InstrKind::Send;
  i.inputs = {b};
  i.peer = peer;
  i.channel = ch;
  return i;
}
plan::Instr recv(uint32_t b, uint32_t peer, uint32_t ch) {
  plan::Instr i;
  i.kind = plan::InstrKind::Recv;
  i.output = b;
  i.peer = peer;
  i.channel = ch;
  return i;
}

TEST(PlanVerifier, DetectsDeadlock) {
  plan::Plan p = twoDevicePlan();
  p.devices[0].instrs = {recv(0, 1, 0), send(0, 1, 1)};
  p.devices[1].instrs = {recv(0, 0, 1), send(0, 0, 0)};
  auto problems = problemsOf(p);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("deadlocks"), std::string::npos) << problems[0];
  p.devices[0].instrs = {kernel({}, 0), send(0, 1, 1), recv(1, 1, 0)};
  p.devices[1].instrs = {recv(0, 0, 1), send(0, 0, 0)};
  EXPECT_TRUE(problemsOf(p).empty());
}

TEST(PlanVerifier, DetectsLiveArenaOverlapAndUseBeforeDefinition) {
  plan::Plan p = twoDevicePlan();
  p.devices[0].buffers[1].offset = 0;
  // 'a' is still read after 'b' is written over it.
  p.devices[0].instrs = {kernel({}, 0), kernel({0}, 1), kernel({0}, 1)};
  auto problems = problemsOf(p);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "/devices/0/instrs/2/inputs/0: cpu:0 instruction 2 reads buffer 'a' "
                         "after instruction 1 overwrote its bytes (buffer 'b')");
  EXPECT_EQ(problems[1], "/devices/0/buffers/1: arena buffers 0 ('a') and 1 ('b') share bytes "
                         "while both are live");
  // Once 'a' is dead, 'b' may take its bytes.
  p.devices[0].instrs = {kernel({}, 0), kernel({}, 1)};
  EXPECT_TRUE(problemsOf(p).empty());
  // In place: 'b' = relu('a') takes over exactly the bytes of 'a', which dies there.
  p.devices[0].instrs = {kernel({}, 0), kernel({0}, 1)};
  EXPECT_TRUE(problemsOf(p).empty());
  // Not when the kernel's result is another buffer than the one that shares them.
  p.devices[0].instrs = {kernel({}, 0), kernel({}, 1), kernel({0}, 0)};
  problems = problemsOf(p);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("reads buffer 'a' after instruction 1 overwrote its bytes (buffer "
                             "'b')"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("share bytes while both are live"), std::string::npos);
  p.devices[0].buffers[1].offset = 64;
  p.devices[0].instrs = {kernel({1}, 0)};
  problems = problemsOf(p);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "/devices/0/instrs/0/inputs/0: cpu:0 instruction 0 reads buffer 'b' "
                         "before any instruction writes it");
}

/// A read of bytes another buffer has partly overwritten: 'b' covers the
/// upper half of 'a' only, and the read names the writer (the live ranges
/// of 'a' and 'b' share bytes too, which is the arena rule's complaint).
TEST(PlanVerifier, DetectsAReadOfPartlyOverwrittenBytes) {
  plan::Plan p = twoDevicePlan();
  plan::DeviceProgram &d = p.devices[0];
  d.buffers[0].shape = {32};
  d.buffers[0].bytes = 128;
  d.buffers[1].offset = 64;
  plan::Instr fill32 = kernel({}, 0);
  fill32.attrs["shape"] = std::vector<int64_t>{32};
  // 'a' is written, then 'b' over its upper half, then 'a' is read.
  d.instrs = {fill32, kernel({}, 1), kernel({0}, 0)};
  d.instrs[1].node = "b";
  d.instrs[2].node = "a.relu";
  auto problems = problemsOf(p);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "/devices/0/instrs/2/inputs/0: cpu:0 instruction 2 ('a.relu') reads "
                         "buffer 'a' after instruction 1 overwrote its bytes (buffer 'b')");
  EXPECT_NE(problems[1].find("share bytes while both are live"), std::string::npos)
      << problems[1];
  // Read before 'b' is written, 'a' still holds its value.
  d.instrs = {fill32, kernel({0}, 0), kernel({}, 1)};
  EXPECT_TRUE(problemsOf(p).empty());
}

/// A real plan, resealed with a valid checksum: the instructions of one
/// device in reverse order read values no instruction has written yet,
/// which the verifier refuses at load, naming the device, instruction and
/// node; so does each device of a pipelined plan, whose gradients
/// accumulate over micro-batches into buffers written more than once.
TEST(PlanVerifier, RejectsADeviceRunInReverse) {
  std::string model = exampleModel();
  plan::Plan p = compiler::compileModel(model);
  ASSERT_EQ(p.devices.size(), 3u);
  ASSERT_EQ(p.devices[1].device, "cpu:1");
  std::reverse(p.devices[1].instrs.begin(), p.devices[1].instrs.end());
  std::vector<uint8_t> f = plan::serializePlan(p);
  std::string err = parseError(f);
  EXPECT_NE(err.find("plan.bin: error: verify: /devices/1/instrs/0/inputs/1: cpu:1 instruction 0 "
                     "('b1.update') reads buffer 'b1.grad' before any instruction writes it"),
            std::string::npos)
      << err;

  passes::PassOptions pipelined;
  pipelined.microbatches = 4;
  pipelined.schedule = "1f1b";
  const plan::Plan valid = compiler::compileModel(model, pipelined);
  EXPECT_TRUE(plan::verifyPlan(valid).empty());
  for (size_t d = 0; d < valid.devices.size(); ++d) {
    plan::Plan q = valid;
    std::reverse(q.devices[d].instrs.begin(), q.devices[d].instrs.end());
    std::vector<std::string> problems = plan::verifyPlan(q);
    ASSERT_FALSE(problems.empty()) << "device " << d;
    std::string at = "/devices/" + std::to_string(d) + "/instrs/0/inputs/";
    EXPECT_EQ(problems[0].rfind(at, 0), 0u) << problems[0];
    EXPECT_NE(problems[0].find(valid.devices[d].device + " instruction 0 ("), std::string::npos)
        << problems[0];
    EXPECT_NE(problems[0].find("before any instruction writes it"), std::string::npos)
        << problems[0];
  }
}

/// A real plan whose send reads an operand after the in-place add took over
/// its bytes (cpu:0 sends 'h0' instead of 'z0'): same type, valid ids,
/// matching channel, so only read after write can tell.
TEST(PlanVerifier, RejectsAReadOfAnInPlaceOverwrittenOperand) {
  plan::Plan p = compiler::compileModel(exampleModel());
  plan::DeviceProgram &d = p.devices[0];
  // The plan as this test knows it: z0 = add(h0, b0) runs in place over h0.
  ASSERT_EQ(d.instrs.size(), 9u);
  const plan::Instr &add = d.instrs[1];
  ASSERT_EQ(add.op, "add");
  uint32_t h0 = add.inputs[0], z0 = add.output;
  ASSERT_EQ(d.buffers[h0].name, "h0");
  ASSERT_EQ(d.buffers[z0].name, "z0");
  ASSERT_EQ(d.buffers[h0].offset, d.buffers[z0].offset) << "the add no longer runs in place";
  plan::Instr &send = d.instrs[2];
  ASSERT_EQ(send.kind, plan::InstrKind::Send);
  send.inputs[0] = h0;
  std::vector<std::string> problems = plan::verifyPlan(p);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0], "/devices/0/instrs/2/inputs/0: cpu:0 instruction 2 ('" + send.node +
                             "') reads buffer 'h0' after instruction 1 overwrote its bytes "
                             "(buffer 'z0')");
}

TEST(PlanVerifier, DetectsMismatchedTransfers) {
  plan::Plan p = twoDevicePlan();
  p.devices[1].buffers[0].shape = {2, 2};
  p.devices[0].instrs = {kernel({}, 0), send(0, 1, 0)};
  p.devices[1].instrs = {recv(0, 0, 0)};
  auto problems = problemsOf(p);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("sends f32[4] but receives f32[2,2]"), std::string::npos);
  p.devices[1].buffers[0].shape = {4};
  p.devices[0].instrs = {kernel({}, 0), send(0, 0, 0)};
  EXPECT_FALSE(problemsOf(p).empty());
}

TEST(PlanPrinter, ShowsInstructionsReadably) {
  auto g = test::seedTrainingGraph();
  std::string s = printed(compiler::lower(*g, {}));
  EXPECT_EQ(s.rfind("plan regression3 (seed 0, model checksum 0x", 0), 0u) << s;
  EXPECT_NE(s.find(")\ndevices: cpu:0 cpu:1 cpu:2\noptimizer: adam {"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("param %w0 : f32[2,2] @cpu:0"), std::string::npos) << s;
  EXPECT_NE(s.find("\ndevice cpu:1 (arena "), std::string::npos) << s;
  EXPECT_NE(s.find(": recv %z0.to.cpu1 <- cpu:0 #ch0\n"), std::string::npos) << s;
  EXPECT_NE(s.find(": send %z0 -> cpu:1 #ch0\n"), std::string::npos) << s;
  EXPECT_NE(s.find("%h1 = matmul(%z0.to.cpu1 @b"), std::string::npos) << s;
  EXPECT_NE(s.find("{transpose_a=false, transpose_b=false} : f32[100,2] @b"), std::string::npos) << s;
}

} // namespace
} // namespace mpc

namespace mpc {
namespace {

/// regression3 in two replicas under ZeRO-1: Adam's m and v in two shards.
plan::Plan zeroPlan() {
  passes::PassOptions o;
  o.dataParallel = 2;
  o.zero = 1;
  return compiler::compileModel(exampleModel(), o);
}

/// The index of the first sharded state of `p`.
size_t firstSharded(const plan::Plan &p) {
  for (size_t i = 0; i < p.states.size(); ++i)
    if (!p.states[i].shards.empty()) return i;
  ADD_FAILURE() << "no sharded state";
  return 0;
}

TEST(PlanFile, ShardsAndModelChecksumRoundTrip) {
  plan::Plan p = zeroPlan();
  EXPECT_NE(p.modelChecksum, 0u);
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  plan::Plan q = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  EXPECT_EQ(q.modelChecksum, p.modelChecksum);
  ASSERT_EQ(q.states.size(), p.states.size());
  size_t sharded = 0;
  for (size_t i = 0; i < p.states.size(); ++i) {
    EXPECT_EQ(q.states[i].shards, p.states[i].shards) << p.states[i].name;
    EXPECT_EQ(q.states[i].mirrors, p.states[i].mirrors) << p.states[i].name;
    sharded += !p.states[i].shards.empty();
  }
  EXPECT_EQ(sharded, 12u); // m and v of six parameters
  EXPECT_EQ(plan::serializePlan(q), bytes);
  // The layout does not enter the model checksum; the model and seed do.
  EXPECT_EQ(compiler::compileModel(exampleModel()).modelChecksum, p.modelChecksum);
  EXPECT_NE(compiler::compileModel(exampleModel(), {}, 1).modelChecksum, p.modelChecksum);
}

/// A tensor-parallel MLP on a group of 2, in two data-parallel replicas:
/// w split along axis 1, v along 0, both with their replicas' parts.
plan::Plan splitPlan() {
  const char *model = R"({"mpc": 1, "name": "tp",
   "inputs": {"x": {"shape": [4, 8]}, "y": {"shape": [4, 8]}},
   "params": {"w": {"shape": [8, 6], "init": {"xavier": {"magnitude": 2.0}}, "shard": 1},
              "v": {"shape": [6, 8], "init": {"xavier": {"magnitude": 2.0}}, "shard": 0}},
   "nodes": [{"name": "h", "op": "matmul", "inputs": ["x", "w"], "device": "tp"},
             {"name": "o", "op": "matmul", "inputs": ["h", "v"]},
             {"name": "loss", "op": "mse_loss", "inputs": ["o", "y"]}],
   "loss": "loss", "groups": {"tp": ["cpu:0", "cpu:1"]}, "optimizer": {"adam": {"lr": 0.01}}})";
  passes::PassOptions o;
  o.dataParallel = 2;
  return compiler::compileModel(model, o);
}

TEST(PlanFile, SplitTensorsRoundTrip) {
  plan::Plan p = splitPlan();
  std::vector<uint8_t> bytes = plan::serializePlan(p);
  plan::Plan q = plan::deserializePlan(bytes.data(), bytes.size(), "plan.bin");
  ASSERT_EQ(q.params.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(q.params[i].shardAxis, p.params[i].shardAxis);
    EXPECT_EQ(q.params[i].shards, p.params[i].shards);
    EXPECT_EQ(q.params[i].mirrors, p.params[i].mirrors);
    EXPECT_EQ(q.params[i].shards.size(), 2u);
    EXPECT_EQ(q.params[i].mirrors.size(), 2u); // replica 1's two parts
  }
  EXPECT_EQ(q.params[0].shardAxis, 1);
  EXPECT_EQ(q.params[1].shardAxis, 0);
  EXPECT_EQ(plan::serializePlan(q), bytes);
}

TEST(PlanFile, SplitAxisBeyondTheShapeIsRejected) {
  std::vector<uint8_t> f = plan::serializePlan(splitPlan());
  json m = decodeMeta(f);
  m["params"][0]["shard_axis"] = 2;
  EXPECT_NE(parseError(withMeta(f, m)).find("/params/0/shard_axis: shard_axis 2 of 'w' is not an axis "
                                           "of its shape"),
            std::string::npos)
      << parseError(withMeta(f, m));
}

TEST(PlanVerifier, ChecksSplitTensors) {
  const plan::Plan valid = splitPlan();
  ASSERT_TRUE(problemsOf(valid).empty());
  auto expectProblem = [](const plan::Plan &p, const std::string &want) {
    std::string all;
    for (const std::string &m : problemsOf(p)) all += m + "\n";
    EXPECT_NE(all.find(want), std::string::npos) << "want '" << want << "' in:\n" << all;
  };
  plan::Plan p = valid;
  p.params[0].shardAxis = 0; // 8 rows split in 2 would be [4, 6], not the buffers' [8, 3]
  expectProblem(p, "'w' is f32[");
  p = valid;
  p.params[0].shards.push_back(p.params[0].mirrors[0]);
  p.params[0].shards.push_back(p.params[0].mirrors[1]);
  p.params[0].mirrors.clear();
  expectProblem(p, "'w' [8,6] does not split along axis 1 into 4 equal parts");
  p = valid;
  p.params[0].mirrors.pop_back();
  expectProblem(p, "'w' is both mirrored and sharded, with 1 mirrors of its 2 parts");
  p = valid;
  p.params[0].mirrors[1] = p.params[0].mirrors[0];
  expectProblem(p, "'w' has two parts of one replica on");
}

TEST(PlanVerifier, ChecksShards) {
  const plan::Plan valid = zeroPlan();
  ASSERT_TRUE(problemsOf(valid).empty());
  size_t s = firstSharded(valid);
  auto expectProblem = [](const plan::Plan &p, const std::string &want) {
    std::vector<std::string> problems = problemsOf(p);
    bool found = false;
    for (const std::string &m : problems) found = found || m.find(want) != std::string::npos;
    std::string all;
    for (const std::string &m : problems) all += m + "\n";
    EXPECT_TRUE(found) << "want '" << want << "' in:\n" << all;
  };
  std::string name = valid.states[s].name;

  plan::Plan p = valid;
  p.params[0].shards = {{p.params[0].device, p.params[0].buffer}};
  expectProblem(p, "'" + p.params[0].name + "' is sharded, and only optimizer state may be");

  p = valid;
  p.states[s].mirrors = {p.states[s].shards[1]};
  expectProblem(p, "'" + name + "' is both mirrored and sharded");

  p = valid;
  std::swap(p.states[s].shards[0], p.states[s].shards[1]);
  expectProblem(p, "'" + name + "' names another placement than its first shard");

  p = valid;
  p.states[s].shards[1] = p.states[s].shards[0];
  expectProblem(p, "'" + name + "' has two shards on " +
                       p.devices[p.states[s].device].device);

  // A part's buffer must hold ceil(n / R) elements, not the whole tensor.
  p = valid;
  p.states[s].shards.pop_back();
  expectProblem(p, "'" + name + "' is f32[");

  p = valid;
  p.states[s].shards.assign(65, p.states[s].shards[0]);
  expectProblem(p, "'" + name + "' has 65 shards; at most 64");
}

} // namespace
} // namespace mpc
