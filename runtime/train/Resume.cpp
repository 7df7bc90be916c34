//===- runtime/train/Resume.cpp - load a checkpoint into the devices ----===//
#include "runtime/train/Resume.h"

#include "plan/PlanIO.h"
#include "support/Error.h"

#include <algorithm>
#include <map>
#include <set>

namespace mpc::runtime {

using io::Checkpoint;
using io::describeOptimizer;
using io::hex64;
using io::NamedTensor;
using plan::typeText;

namespace {

/// Differences between the tensors `want` (the plan's) and `have` (the
/// file's), as readable phrases: missing, extra, different type.
std::vector<std::string> compareTensors(const std::vector<plan::TensorRef> &want,
                                        const std::map<std::string, const NamedTensor *> &have) {
  std::vector<std::string> diffs;
  std::set<std::string> wanted;
  for (const plan::TensorRef &r : want) {
    wanted.insert(r.name);
    auto it = have.find(r.name);
    if (it == have.end()) diffs.push_back("missing '" + r.name + "' " + typeText(r.dtype, r.shape));
    else if (it->second->dtype != r.dtype || it->second->shape != r.shape)
      diffs.push_back("'" + r.name + "' is " + typeText(it->second->dtype, it->second->shape) +
                      " in the file, " + typeText(r.dtype, r.shape) + " in the plan");
  }
  for (const auto &[name, t] : have)
    if (!wanted.count(name))
      diffs.push_back("'" + name + "' " + typeText(t->dtype, t->shape) + " is not in the plan");
  return diffs;
}

std::string joinDiffs(const std::vector<std::string> &diffs) {
  std::string s;
  size_t shown = std::min<size_t>(diffs.size(), 4);
  for (size_t i = 0; i < shown; ++i) s += (i ? "; " : "") + diffs[i];
  if (diffs.size() > shown) s += "; and " + std::to_string(diffs.size() - shown) + " more";
  return s;
}

} // namespace

ResumeCheck restoreCheckpoint(Executor &ex, const Checkpoint &ckpt, uint64_t planChecksum,
                              bool force) {
  const plan::Plan &p = ex.plan();
  const std::string &file = ckpt.file;
  if (!ckpt.resumable)
    throw UserError(file, "", "not a resumable checkpoint: it has no training position (it was "
                              "written with --save-params-only or by another tool); use --init "
                              "to start a new run from its weights");
  std::set<std::string> stateNames(ckpt.info.states.begin(), ckpt.info.states.end());
  std::map<std::string, const NamedTensor *> params, states;
  for (const NamedTensor &t : ckpt.tensors)
    (stateNames.count(t.name) ? states : params)[t.name] = &t;

  std::vector<std::string> paramDiffs = compareTensors(p.params, params);
  if (!paramDiffs.empty())
    throw UserError(file, "",
                    "checkpoint of another model: its parameters differ from the plan's: " +
                                  joinDiffs(paramDiffs));
  std::vector<std::string> stateDiffs = compareTensors(p.states, states);
  std::string planOpt = describeOptimizer(p);
  bool optimizerDiffers = planOpt != ckpt.info.optimizer || !stateDiffs.empty();
  ResumeCheck check;
  if (planChecksum != ckpt.info.planChecksum || optimizerDiffers) {
    std::string other = "checkpoint of another plan (checksum " + hex64(ckpt.info.planChecksum) +
                        ", this plan " + hex64(planChecksum) + ")";
    if (!optimizerDiffers)
      throw UserError(file, "", other + ": the parameters and the optimizer match, so the model, "
                                        "placement or initial values changed; --force covers only "
                                        "a changed optimizer");
    std::string what = "the optimizer differs (file: " + ckpt.info.optimizer +
                       "; plan: " + planOpt + ")" +
                       (stateDiffs.empty() ? "" : ", state tensors: " + joinDiffs(stateDiffs));
    if (!force)
      throw UserError(file, "", other + ": " + what +
                                    "; --force resumes with the plan's optimizer, keeping the "
                                    "parameters and the training position");
    check.warnings.push_back(file + ": warning: resuming under --force: " + what);
  }
  for (const plan::TensorRef &r : p.params) {
    const NamedTensor &t = *params.at(r.name);
    if (ex.hosts(r)) ex.write(r, t.data.data(), t.data.size());
  }
  std::vector<std::string> reset;
  for (const plan::TensorRef &r : p.states) {
    auto it = states.find(r.name);
    if (it == states.end() || it->second->dtype != r.dtype || it->second->shape != r.shape) {
      reset.push_back("'" + r.name + "'");
      continue;
    }
    if (ex.hosts(r)) ex.write(r, it->second->data.data(), it->second->data.size());
  }
  if (!reset.empty()) {
    std::string list;
    for (const std::string &n : reset) list += (list.empty() ? "" : ", ") + n;
    check.warnings.push_back(file + ": warning: optimizer state " + list +
                             " not in the checkpoint; starting from its initial value");
  }
  return check;
}

} // namespace mpc::runtime
