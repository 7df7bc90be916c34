//===- runtime/train/Resume.cpp - load a checkpoint into the devices ----===//
#include "runtime/train/Resume.h"

#include "plan/PlanIO.h"
#include "runtime/train/Datasets.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace mpc::runtime {

using io::Checkpoint;
using io::describeOptimizer;
using io::NamedTensor;
using plan::typeText;

namespace {

/// A tensor of the file that differs from the plan's: missing from one of
/// them, or of another dtype or shape.
struct TensorDiff {
  std::string name;
  const NamedTensor *file = nullptr;  ///< null: missing from the file
  const plan::TensorRef *planRef = nullptr; ///< null: not in the plan

  /// "missing 'w' f32[2,1]", "'w' is f32[4] in the file, f32[2,2] in the plan".
  std::string phrase() const {
    if (!file) return "missing '" + name + "' " + typeText(planRef->dtype, planRef->shape);
    std::string held = typeText(file->dtype, file->shape);
    if (!planRef) return "'" + name + "' " + held + " is not in the plan";
    return "'" + name + "' is " + held + " in the file, " +
           typeText(planRef->dtype, planRef->shape) + " in the plan";
  }
};

/// Differences between the tensors `want` (the plan's) and `have` (the
/// file's): missing, extra, different type.
std::vector<TensorDiff> compareTensors(const std::vector<plan::TensorRef> &want,
                                       const std::map<std::string, const NamedTensor *> &have) {
  std::vector<TensorDiff> diffs;
  std::set<std::string> wanted;
  for (const plan::TensorRef &r : want) {
    wanted.insert(r.name);
    auto it = have.find(r.name);
    if (it == have.end()) diffs.push_back({r.name, nullptr, &r});
    else if (it->second->dtype != r.dtype || it->second->shape != r.shape)
      diffs.push_back({r.name, it->second, &r});
  }
  for (const auto &[name, t] : have)
    if (!wanted.count(name)) diffs.push_back({name, t, nullptr});
  return diffs;
}

std::string joinDiffs(const std::vector<TensorDiff> &diffs) {
  std::string s;
  size_t shown = std::min<size_t>(diffs.size(), 4);
  for (size_t i = 0; i < shown; ++i) s += (i ? "; " : "") + diffs[i].phrase();
  if (diffs.size() > shown) s += "; and " + std::to_string(diffs.size() - shown) + " more";
  return s;
}

/// The error for a tensor of a checkpoint this very plan wrote (the file
/// records its checksum) that differs from the plan's: the plan always
/// writes its own tensors, so the file was damaged, and no flag helps.
[[noreturn]] void damagedTensor(const std::string &file, const TensorDiff &d,
                                uint64_t checksum) {
  std::string plan = "this plan, whose checksum (" + hex64(checksum) + ") the file records, ";
  std::string what;
  if (!d.file) {
    what = "the file lacks it, but " + plan + "has it as " +
           typeText(d.planRef->dtype, d.planRef->shape);
  } else if (!d.planRef) {
    what = "the file holds it as " + typeText(d.file->dtype, d.file->shape) + ", but " + plan +
           "has no such tensor";
  } else {
    bool dtype = d.file->dtype != d.planRef->dtype, shape = d.file->shape != d.planRef->shape;
    const char *which = dtype && shape ? "another dtype and shape"
                        : dtype        ? "another dtype"
                                       : "another shape";
    what = "the file holds it as " + typeText(d.file->dtype, d.file->shape) + ", but " + plan +
           "has it as " + typeText(d.planRef->dtype, d.planRef->shape) + " (" + which + ")";
  }
  throw UserError(file, "tensor '" + d.name + "'", "the checkpoint is damaged: " + what);
}

} // namespace

ResumeCheck checkCheckpoint(const plan::Plan &p, const Checkpoint &ckpt, uint64_t planChecksum,
                            bool force) {
  const std::string &file = ckpt.file;
  if (!ckpt.resumable)
    throw UserError(file, "", "not a resumable checkpoint: it has no training position (it was "
                              "written with --save-params-only or by another tool); use --init "
                              "to start a new run from its weights");
  std::set<std::string> stateNames(ckpt.info.states.begin(), ckpt.info.states.end());
  std::map<std::string, const NamedTensor *> params, states;
  for (const NamedTensor &t : ckpt.tensors)
    (stateNames.count(t.name) ? states : params)[t.name] = &t;

  std::vector<TensorDiff> paramDiffs = compareTensors(p.params, params);
  std::vector<TensorDiff> stateDiffs = compareTensors(p.states, states);
  // The checksum names the plan that wrote the file. This plan wrote every
  // tensor it has, as it has it, so a difference is damage, not another plan.
  const bool samePlan = planChecksum == ckpt.info.planChecksum;
  if (samePlan) {
    for (const std::vector<TensorDiff> *diffs : {&paramDiffs, &stateDiffs})
      if (!diffs->empty()) damagedTensor(file, diffs->front(), planChecksum);
  }
  if (!paramDiffs.empty())
    throw UserError(file, "",
                    "checkpoint of another model: its parameters differ from the plan's: " +
                        joinDiffs(paramDiffs));
  ResumeCheck check;
  if (!samePlan) {
    std::string planOpt = describeOptimizer(p);
    bool optimizerDiffers = planOpt != ckpt.info.optimizer || !stateDiffs.empty();
    std::string other = "checkpoint of another plan (checksum " + hex64(ckpt.info.planChecksum) +
                        ", this plan " + hex64(planChecksum) + ")";
    // One model in another layout (placement, pipeline, data parallelism,
    // ZeRO): the same training, continued where the file stopped.
    const bool sameModel = p.modelChecksum != 0 && p.modelChecksum == ckpt.info.modelChecksum;
    if (!optimizerDiffers && !sameModel)
      throw UserError(file, "", other + ": the parameters and the optimizer match, but the model "
                                        "or its seed changed (model checksum " +
                                        hex64(ckpt.info.modelChecksum) + ", this plan " +
                                        hex64(p.modelChecksum) +
                                        "); --force covers only a changed optimizer");
    if (optimizerDiffers) {
      std::string what;
      if (planOpt != ckpt.info.optimizer)
        what = "the optimizer differs (file: " + ckpt.info.optimizer + "; plan: " + planOpt + ")" +
               (stateDiffs.empty() ? "" : ", state tensors: " + joinDiffs(stateDiffs));
      else
        what = "the optimizer's state tensors differ: " + joinDiffs(stateDiffs);
      if (!force)
        throw UserError(file, "", other + ": " + what +
                                      "; --force resumes with the plan's optimizer, keeping the "
                                      "parameters and the training position");
      check.warnings.push_back(file + ": warning: resuming under --force: " + what);
    }
  }
  // Bytes: mpc writes no checkpoint holding a NaN or an infinity (the run
  // stops instead), so one here is damage too, found before anything loads.
  for (const NamedTensor &t : ckpt.tensors) {
    if (t.dtype != plan::DType::F32) continue;
    int64_t bad = train::firstNonFinite(t.data.data(), t.data.size() / 4);
    if (bad < 0) continue;
    float v;
    std::memcpy(&v, t.data.data() + size_t(bad) * 4, 4);
    throw UserError(file, "tensor '" + t.name + "'",
                    "the checkpoint is damaged: it holds " + train::valueText(double(v)) +
                        " at flat index " + std::to_string(bad) +
                        " (mpc writes no checkpoint with a value that is not finite)");
  }
  std::vector<std::string> reset;
  for (const plan::TensorRef &r : p.states) {
    auto it = states.find(r.name);
    if (it == states.end() || it->second->dtype != r.dtype || it->second->shape != r.shape)
      reset.push_back("'" + r.name + "'");
  }
  if (!reset.empty()) {
    std::string list;
    for (const std::string &n : reset) list += (list.empty() ? "" : ", ") + n;
    check.warnings.push_back(file + ": warning: optimizer state " + list +
                             " not in the checkpoint; starting from its initial value");
  }
  return check;
}

ResumeCheck restoreCheckpoint(Executor &ex, const Checkpoint &ckpt, uint64_t planChecksum,
                              bool force) {
  const plan::Plan &p = ex.plan();
  ResumeCheck check = checkCheckpoint(p, ckpt, planChecksum, force);
  // Checked above: every parameter is in the file as the plan has it; a
  // state tensor that is not keeps its initial value (a warning says so).
  std::map<std::string, const NamedTensor *> byName;
  for (const NamedTensor &t : ckpt.tensors) byName[t.name] = &t;
  for (const std::vector<plan::TensorRef> *list : {&p.params, &p.states})
    for (const plan::TensorRef &r : *list) {
      auto it = byName.find(r.name);
      if (it == byName.end() || it->second->dtype != r.dtype || it->second->shape != r.shape)
        continue;
      if (ex.hosts(r)) ex.write(r, it->second->data.data(), it->second->data.size());
    }
  return check;
}

} // namespace mpc::runtime
