//===- plan/PlanIO.h - plan.bin encoding, checks and dump -------===//
//
// plan.bin (docs/plan-format.md): a fixed header (magic, format version,
// lengths, checksum), a structured part encoded with a well-kept binary
// encoding, and aligned raw tensor bytes. The reader checks every length and
// offset before use and rejects truncated, corrupted, foreign and
// future-version files with a UserError naming the file and the section.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"
#include "support/StringUtil.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace mpc::plan {

std::vector<uint8_t> serializePlan(const Plan &plan);
/// `file` is used in diagnostics only. Runs verifyPlan on the result and
/// throws UserError on any problem.
Plan deserializePlan(const uint8_t *data, size_t size, const std::string &file);

/// Atomic write (temporary file + rename).
void writePlanFile(const std::string &path, const Plan &plan);
/// `checksum`, when given, receives the file's header checksum (FNV-1a 64 of
/// everything after the header): checkpoints record it to recognise their plan.
Plan readPlanFile(const std::string &path, uint64_t *checksum = nullptr);

/// Consistency checks on a decoded plan: buffer bounds inside their regions,
/// instruction operands name existing buffers, send/recv pairs match (same
/// channel, matching peers, equal sizes), tensor refs valid. Empty when valid.
std::vector<std::string> verifyPlan(const Plan &plan);

/// `mpc dump`: each device's program, readably.
void printPlan(const Plan &plan, std::ostream &os);

/// `mpc dump --format=json`: the structured part (docs/plan-format.md) as one
/// pretty-printed JSON document: the same fields as the meta section.
std::string planMetaJson(const Plan &plan);

/// "[100,2]": a shape as plans and messages print it (support/StringUtil.h).
using mpc::shapeText;
/// "f32[100,2]": a tensor's type as plans, messages and listings print it.
std::string typeText(DType dtype, const std::vector<int64_t> &shape);

} // namespace mpc::plan
