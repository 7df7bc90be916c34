//===- runtime/train/Datasets.cpp - the trainer's datasets and weight files -===//
#include "runtime/train/Datasets.h"

#include "ops/Float16.h"

#include "io/Checkpoint.h"
#include "io/Npy.h"
#include "io/Safetensors.h"
#include "plan/PlanIO.h"
#include "support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

namespace mpc::runtime::train {

namespace {

/// "[N,2]": the file shape that feeds a plan input of shape `batch`.
std::string datasetShapeHint(const std::vector<int64_t> &batch) {
  std::string s = "[N";
  for (size_t i = 1; i < batch.size(); ++i) s += "," + std::to_string(batch[i]);
  return s + "]";
}

} // namespace

std::string namesOf(const std::vector<plan::TensorRef> &list) {
  std::string s;
  for (const plan::TensorRef &t : list) s += (s.empty() ? "'" : ", '") + t.name + "'";
  return s.empty() ? "none" : s;
}

std::pair<std::string, std::string> splitSpec(const std::string &spec, const std::string &flag) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw UserError("", flag, "expected NAME=FILE, got '" + spec + "'");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

/// A dataset file: NPY, or safetensors (NumPy has no bfloat16) holding one
/// tensor, or one named as the input.
io::NpyArray readDataFile(const std::string &file, const std::string &input) {
  const std::string ext = ".safetensors";
  if (file.size() < ext.size() || file.compare(file.size() - ext.size(), ext.size(), ext) != 0)
    return io::readNpy(file);
  std::vector<io::NamedTensor> tensors = io::readSafetensors(file);
  const io::NamedTensor *pick = tensors.size() == 1 ? &tensors[0] : nullptr;
  for (const io::NamedTensor &t : tensors)
    if (t.name == input) pick = &t;
  if (!pick)
    throw UserError(file, "input '" + input + "'",
                    "holds " + std::to_string(tensors.size()) +
                        " tensors and none named '" + input + "': give one tensor, or name it so");
  io::NpyArray a;
  a.dtype = pick->dtype;
  a.shape = pick->shape;
  a.data = pick->data;
  return a;
}

int64_t firstNonFinite(const uint8_t *data, size_t count, plan::DType dtype) {
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(ops::loadFloat(dtype, data, int64_t(i)))) return int64_t(i);
  return -1;
}

std::string valueText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::vector<Dataset> loadInputs(const plan::Plan &p, const std::vector<std::string> &specs,
                                const std::map<std::string, io::NpyArray> &arrays,
                                const std::function<bool(const plan::TensorRef &)> &wanted,
                                bool allowNonfinite, int64_t &rows, std::string &rowsFile) {
  std::map<std::string, std::string> files;
  for (const std::string &spec : specs) {
    auto [name, file] = splitSpec(spec, "--input");
    if (!files.emplace(name, file).second)
      throw UserError("", "--input", "input '" + name + "' given twice");
  }
  for (const auto &[name, file] : files) {
    bool known = false;
    for (const plan::TensorRef &t : p.inputs) known |= t.name == name;
    if (!known)
      throw UserError("", "--input", "the plan has no input '" + name +
                                         "' (inputs: " + namesOf(p.inputs) + ")");
  }
  // Checked once the types agree, so a file of another shape is told so first.
  auto requireFinite = [allowNonfinite](const Dataset &d) {
    const io::NpyArray &a = d.array;
    if (allowNonfinite || !ops::isFloat(a.dtype)) return;
    const size_t e = size_t(ops::dtypeSize(a.dtype));
    int64_t bad = firstNonFinite(a.data.data(), a.data.size() / e, a.dtype);
    if (bad < 0) return;
    float v = ops::loadFloat(a.dtype, a.data.data(), bad);
    std::string row = d.rowBytes ? " (row " + std::to_string(bad / int64_t(d.rowBytes / e)) + ")"
                                 : "";
    throw UserError(d.file, "input '" + d.ref->name + "'",
                    valueText(v) + " at flat index " + std::to_string(bad) + row +
                        ": the data must be finite (--allow-nonfinite takes it as it is)");
  };
  std::vector<Dataset> out;
  rows = -1;
  rowsFile.clear();
  for (const plan::TensorRef &t : p.inputs) {
    auto it = files.find(t.name);
    auto mem = arrays.find(t.name);
    if (it == files.end() && mem == arrays.end())
      throw UserError("", "--input", "missing input '" + t.name + "' (give --input " +
                                         t.name + "=FILE.npy)");
    if (!wanted(t)) continue;
    Dataset d;
    d.ref = &t;
    if (it != files.end()) {
      d.file = it->second;
      d.array = readDataFile(d.file, t.name);
    } else {
      d.file = "<array '" + t.name + "'>";
      d.array = mem->second;
    }
    const io::NpyArray &a = d.array;
    if (a.dtype != t.dtype)
      throw UserError(d.file, "input '" + t.name + "'",
                      std::string("dtype ") + plan::dtypeName(a.dtype) +
                          " does not match the plan's " + plan::typeText(t.dtype, t.shape));
    if (t.shape.empty()) {
      if (!a.shape.empty())
        throw UserError(d.file, "input '" + t.name + "'",
                        "shape " + plan::typeText(a.dtype, a.shape) + " does not match the plan's " +
                            plan::typeText(t.dtype, t.shape));
      requireFinite(d);
      d.staging = a.data;
      out.push_back(std::move(d));
      continue;
    }
    bool ok = a.shape.size() == t.shape.size();
    for (size_t i = 1; ok && i < t.shape.size(); ++i) ok = a.shape[i] == t.shape[i];
    if (!ok)
      throw UserError(d.file, "input '" + t.name + "'",
                      "shape " + plan::typeText(a.dtype, a.shape) +
                          " does not match the plan's batch " + plan::typeText(t.dtype, t.shape) +
                          " (expected " + datasetShapeHint(t.shape) + " with N a dataset size)");
    d.batch = t.shape[0];
    d.rowBytes = size_t(t.numElements() / std::max<int64_t>(1, t.shape[0])) *
                 size_t(ops::dtypeSize(t.dtype));
    if (rows >= 0 && a.shape[0] != rows)
      throw UserError(d.file, "input '" + t.name + "'",
                      "dataset of " + std::to_string(a.shape[0]) + " rows, but " + rowsFile +
                          " has " + std::to_string(rows));
    requireFinite(d);
    rows = a.shape[0];
    rowsFile = d.file;
    out.push_back(std::move(d));
  }
  return out;
}

void shuffleRows(std::vector<int64_t> &perm, std::mt19937_64 &rng) {
  for (size_t i = perm.size(); i > 1; --i) {
    size_t j = size_t(rng() % i);
    std::swap(perm[i - 1], perm[j]);
  }
}

/// The states of `p` that are batch_norm's running statistics rather than
/// optimizer state: operands 0 and 1 of batch_norm_update (training), 3 and
/// 4 of batch_norm (inference, use_global_stats).
std::set<std::string> runningStatistics(const plan::Plan &p) {
  std::set<std::string> states, stats;
  for (const plan::TensorRef &r : p.states) states.insert(r.name);
  for (const plan::DeviceProgram &d : p.devices)
    for (const plan::Instr &in : d.instrs) {
      if (in.kind != plan::InstrKind::Kernel) continue;
      size_t first = in.op == "batch_norm_update" ? 0 : in.op == "batch_norm" ? 3 : SIZE_MAX;
      for (size_t i = first; i < in.inputs.size() && i < first + 2; ++i) {
        const std::string &name = d.buffers[in.inputs[i]].name;
        if (states.count(name)) stats.insert(name);
      }
    }
  return stats;
}

std::vector<std::string> loadInit(Executor &ex, const std::string &file) {
  io::Checkpoint ckpt = io::readCheckpoint(file);
  std::vector<std::string> warnings;
  std::map<std::string, const io::NamedTensor *> byName;
  for (const io::NamedTensor &t : ckpt.tensors) byName[t.name] = &t;
  const plan::Plan &p = ex.plan();
  std::set<std::string> fileStates(ckpt.info.states.begin(), ckpt.info.states.end());
  std::vector<std::string> skipped;
  for (const auto &[name, t] : byName) {
    bool known = false;
    for (const auto *list : {&p.params, &p.states})
      for (const plan::TensorRef &r : *list) known |= r.name == name;
    if (known) continue;
    // A checkpoint of the same model under another optimizer: its state
    // means nothing to this plan, the weights still do.
    if (fileStates.count(name)) {
      skipped.push_back("'" + name + "'");
      continue;
    }
    throw UserError(file, "tensor '" + name + "'",
                    "not a parameter of the plan (parameters: " + namesOf(p.params) + ")");
  }
  std::vector<std::string> missing, missingStats;
  const std::set<std::string> stats = runningStatistics(p);
  auto load = [&](const plan::TensorRef &r, bool required) {
    auto it = byName.find(r.name);
    if (it == byName.end()) {
      if (required)
        throw UserError(file, "", "missing parameter '" + r.name + "' " +
                                      plan::typeText(r.dtype, r.shape));
      if (!stats.count(r.name)) {
        missing.push_back("'" + r.name + "'");
        return;
      }
      // An inference plan normalises with the running statistics: starting
      // them from mean 0, variance 1 would silently give other outputs.
      if (!p.hasLoss)
        throw UserError(file, "", "missing running statistic '" + r.name + "' " +
                                      plan::typeText(r.dtype, r.shape) +
                                      " that this inference plan normalises with (a "
                                      "checkpoint of training this model has it)");
      missingStats.push_back("'" + r.name + "'");
      return;
    }
    const io::NamedTensor &t = *it->second;
    if (t.dtype != r.dtype || t.shape != r.shape)
      throw UserError(file, "tensor '" + r.name + "'",
                      plan::typeText(t.dtype, t.shape) + " does not match the plan's " +
                          plan::typeText(r.dtype, r.shape));
    if (ex.hosts(r)) ex.write(r, t.data.data(), t.data.size());
  };
  for (const plan::TensorRef &r : p.params) load(r, true);
  // Optimizer state and, in training, running statistics: optional.
  for (const plan::TensorRef &r : p.states) load(r, false);
  auto list = [](const std::vector<std::string> &names) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < 6; ++i) s += (i ? ", " : "") + names[i];
    if (names.size() > 6) s += ", ... (" + std::to_string(names.size()) + " tensors)";
    return s;
  };
  if (!missingStats.empty())
    warnings.push_back(file + ": warning: no running statistics for " + list(missingStats) +
                       "; they start from the plan's initial values (mean 0, variance 1)");
  if (!missing.empty())
    warnings.push_back(file + ": warning: no optimizer state for " + list(missing) +
                       "; it starts from the plan's initial values (--resume continues a run "
                       "from a full checkpoint)");
  // An inference plan (no loss, no optimizer) takes a training checkpoint's
  // weights as they are: its optimizer state and position are not news.
  if (!skipped.empty() && p.hasLoss)
    warnings.push_back(file + ": warning: skipping optimizer state " + list(skipped) +
                       " that this plan does not have");
  if (ckpt.resumable && p.hasLoss)
    warnings.push_back(file + ": note: checkpoint at step " +
                       std::to_string(ckpt.info.position.step) +
                       "; --init starts a new run at step 1 (--resume would continue it)");
  return warnings;
}

void printParams(const std::vector<io::NamedTensor> &params, std::ostream &os) {
  for (const io::NamedTensor &r : params) {
    const std::vector<uint8_t> &bytes = r.data;
    os << r.name << " " << plan::typeText(r.dtype, r.shape) << " = [";
    int64_t n = int64_t(bytes.size() / 4), shown = std::min<int64_t>(n, 16);
    for (int64_t i = 0; i < shown; ++i) {
      std::string text;
      if (r.dtype == plan::DType::F32) {
        float v;
        std::memcpy(&v, bytes.data() + i * 4, 4);
        text = valueText(double(v));
      } else {
        int32_t v;
        std::memcpy(&v, bytes.data() + i * 4, 4);
        text = std::to_string(v);
      }
      os << (i ? ", " : "") << text;
    }
    if (n > shown) os << ", ... (" << n << " values)";
    os << "]\n";
  }
}

} // namespace mpc::runtime::train
