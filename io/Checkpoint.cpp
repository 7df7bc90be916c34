//===- io/Checkpoint.cpp - training checkpoints -----------------===//
//
// Metadata keys ("__metadata__" of the safetensors header; strings only):
//   format                  "pt" (what torch's loaders expect)
//   mpc.version             the mpc that wrote the file
//   mpc.model               the plan's model name
//   mpc.plan_checksum       the plan file's checksum, "0x" + 16 hex digits
//   mpc.model_checksum      what the plan computes, whatever its layout
//                           (ir/ModelChecksum.h), the same form; absent in
//                           files of earlier versions (read as 0: unknown)
//   mpc.optimizer           describeOptimizer() of the plan
//   mpc.states              JSON array of the optimizer state tensor names
//   mpc.step, mpc.epoch, mpc.epoch_step, mpc.batches_per_epoch,
//   mpc.dataset_rows        decimal integers (dataset_rows -1: inputs fed whole)
//   mpc.shuffle             "true" or "false"
//   mpc.shuffle_seed        decimal unsigned integer
// A file without mpc.step is a parameters-only file: --init reads it,
// --resume refuses it.
//
//===----------------------------------------------------------------------===//
#include "io/Checkpoint.h"

#include "plan/PlanIO.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

namespace mpc::io {

namespace {

using plan::typeText;

/// Strict readers of metadata values: the whole string, nothing else.
class MetaReader {
public:
  MetaReader(const std::string &file, const std::map<std::string, std::string> &meta)
      : file_(file), meta_(meta) {}

  const std::string &str(const std::string &key) const {
    auto it = meta_.find(key);
    if (it == meta_.end())
      throw UserError(file_, "__metadata__", "missing '" + key + "' (the checkpoint is incomplete)");
    return it->second;
  }
  uint64_t u64(const std::string &key, uint64_t max = UINT64_MAX) const {
    const std::string &s = str(key);
    uint64_t v = 0;
    bool ok = !s.empty() && s.size() <= 20;
    for (char c : s) {
      if (!ok) break;
      if (c < '0' || c > '9') ok = false;
      else if (v > (UINT64_MAX - uint64_t(c - '0')) / 10) ok = false;
      else v = v * 10 + uint64_t(c - '0');
    }
    if (!ok || v > max) bad(key, s, "an integer in [0, " + std::to_string(max) + "]");
    return v;
  }
  int64_t i64(const std::string &key) const { return int64_t(u64(key, uint64_t(INT64_MAX))); }
  bool flag(const std::string &key) const {
    const std::string &s = str(key);
    if (s != "true" && s != "false") bad(key, s, "true or false");
    return s == "true";
  }
  uint64_t checksum(const std::string &key) const {
    const std::string &s = str(key);
    uint64_t v = 0;
    bool ok = s.size() == 18 && s[0] == '0' && s[1] == 'x';
    for (size_t i = 2; ok && i < s.size(); ++i) {
      char c = s[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) ok = false;
      else v = (v << 4) | uint64_t(d);
    }
    if (!ok) bad(key, s, "0x and 16 lower-case hex digits");
    return v;
  }
  std::vector<std::string> names(const std::string &key) const {
    const std::string &s = str(key);
    nlohmann::json j = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
    std::vector<std::string> out;
    if (!j.is_array()) bad(key, s, "a JSON array of names");
    for (const nlohmann::json &e : j) {
      if (!e.is_string()) bad(key, s, "a JSON array of names");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  [[noreturn]] void bad(const std::string &key, const std::string &value,
                        const std::string &want) const {
    std::string shown = value.size() > 40 ? value.substr(0, 40) + "..." : value;
    throw UserError(file_, "__metadata__", "'" + key + "' is '" + shown + "', expected " + want);
  }

private:
  const std::string &file_;
  const std::map<std::string, std::string> &meta_;
};

std::map<std::string, std::string> encodeInfo(const CheckpointInfo &info) {
  const TrainingPosition &p = info.position;
  return {
      {"format", "pt"},
      {"mpc.version", info.version},
      {"mpc.model", info.model},
      {"mpc.plan_checksum", hex64(info.planChecksum)},
      {"mpc.model_checksum", hex64(info.modelChecksum)},
      {"mpc.optimizer", info.optimizer},
      {"mpc.states", nlohmann::json(info.states).dump()},
      {"mpc.step", std::to_string(p.step)},
      {"mpc.epoch", std::to_string(p.epoch)},
      {"mpc.epoch_step", std::to_string(p.epochStep)},
      {"mpc.batches_per_epoch", std::to_string(p.batchesPerEpoch)},
      {"mpc.dataset_rows", std::to_string(p.datasetRows)},
      {"mpc.shuffle", p.shuffle ? "true" : "false"},
      {"mpc.shuffle_seed", std::to_string(p.shuffleSeed)},
  };
}

CheckpointInfo decodeInfo(const std::string &file, const std::map<std::string, std::string> &meta) {
  MetaReader r(file, meta);
  CheckpointInfo info;
  info.version = r.str("mpc.version");
  info.model = r.str("mpc.model");
  info.planChecksum = r.checksum("mpc.plan_checksum");
  info.modelChecksum = meta.count("mpc.model_checksum") ? r.checksum("mpc.model_checksum") : 0;
  info.optimizer = r.str("mpc.optimizer");
  info.states = r.names("mpc.states");
  TrainingPosition &p = info.position;
  p.step = r.i64("mpc.step");
  p.epoch = r.i64("mpc.epoch");
  p.epochStep = r.i64("mpc.epoch_step");
  p.batchesPerEpoch = r.i64("mpc.batches_per_epoch");
  // -1 marks inputs fed whole; written by mpc as the literal "-1".
  p.datasetRows = r.str("mpc.dataset_rows") == "-1" ? -1 : r.i64("mpc.dataset_rows");
  p.shuffle = r.flag("mpc.shuffle");
  p.shuffleSeed = r.u64("mpc.shuffle_seed");
  if (p.batchesPerEpoch < 1)
    r.bad("mpc.batches_per_epoch", std::to_string(p.batchesPerEpoch), "at least 1");
  // The position is stored three ways for readers; they must agree.
  if (p.epochStep >= p.batchesPerEpoch || p.epoch > p.step / p.batchesPerEpoch ||
      p.epoch * p.batchesPerEpoch + p.epochStep != p.step)
    throw UserError(file, "__metadata__",
                    "inconsistent position: step " + std::to_string(p.step) + " is not epoch " +
                        std::to_string(p.epoch) + " + " + std::to_string(p.epochStep) + " steps of " +
                        std::to_string(p.batchesPerEpoch));
  return info;
}

} // namespace

namespace {

/// The shortest decimal that reads back as the same double.
std::string shortest(double v) {
  char buf[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string attrText(const plan::AttrValue &v) {
  if (const bool *b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const int64_t *i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double *d = std::get_if<double>(&v)) return shortest(*d);
  if (const std::string *s = std::get_if<std::string>(&v)) return *s;
  return shapeText(std::get<std::vector<int64_t>>(v));
}

} // namespace

std::string describeOptimizer(const plan::Plan &plan) {
  // The update instructions' attributes are what the kernels use (the plan's
  // `optimizer` map is a display copy), so they define the optimizer. Distinct
  // settings are listed once each, in plan order.
  std::vector<std::string> settings;
  for (const plan::DeviceProgram &d : plan.devices)
    for (const plan::Instr &in : d.instrs) {
      // batch_norm_update folds statistics in, loss_scale_update moves fp16's
      // loss scale: no parameter updates.
      if (in.kind != plan::InstrKind::Kernel || in.op.size() < 7 ||
          in.op.compare(in.op.size() - 7, 7, "_update") != 0 || in.op == "batch_norm_update" ||
          in.op == "loss_scale_update")
        continue;
      std::string s = in.op.substr(0, in.op.size() - 7);
      // `guarded` says whether fp16 may skip the step, not how it updates:
      // a checkpoint resumes across precisions.
      for (const auto &[k, v] : in.attrs)
        if (k != "guarded") s += " " + k + "=" + attrText(v);
      if (std::find(settings.begin(), settings.end(), s) == settings.end()) settings.push_back(s);
    }
  if (settings.empty()) return "none";
  std::string out;
  for (const std::string &s : settings) out += (out.empty() ? "" : "; ") + s;
  return out;
}

void writeCheckpoint(const std::string &path, const std::vector<NamedTensor> &tensors,
                     const CheckpointInfo &info) {
  writeSafetensors(path, tensors, encodeInfo(info));
}

void writeParamsOnly(const std::string &path, const std::vector<NamedTensor> &params) {
  writeSafetensors(path, params, {{"format", "pt"}});
}

namespace {

/// A checkpoint from a safetensors file already read: its training metadata
/// decoded and checked against the tensors it names.
Checkpoint checkpointOf(SafetensorsFile f, const std::string &file) {
  Checkpoint c;
  c.file = file;
  c.tensors = std::move(f.tensors);
  c.resumable = f.metadata.count("mpc.step") != 0;
  if (c.resumable) {
    c.info = decodeInfo(file, f.metadata);
    std::set<std::string> names;
    for (const NamedTensor &t : c.tensors) names.insert(t.name);
    for (const std::string &s : c.info.states)
      if (!names.count(s))
        throw UserError(file, "__metadata__", "'mpc.states' names '" + s +
                                                  "', which the file does not hold");
  }
  return c;
}

} // namespace

Checkpoint parseCheckpoint(const uint8_t *data, size_t size, const std::string &file) {
  return checkpointOf(parseSafetensorsFile(data, size, file), file);
}

Checkpoint readCheckpoint(const std::string &path) {
  return checkpointOf(readSafetensorsFile(path), path);
}

} // namespace mpc::io
