//===- plan/Attrs.h - typed reads of instruction attributes -------------===//
//
// Both backends read a kernel instruction's attributes through these, once,
// when a plan is loaded. The plan verifier has already checked every
// attribute against the plan's op table (kind and presence, OpSignatures.h),
// and codegen writes every attribute an op declares, so the reads take no
// default: an op's defaults live only in its record (ir/ops/), never again
// in a kernel. A missing attribute or one of the wrong kind (a hand-made
// plan that skipped the verifier) is a RuleError naming the attribute.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpc::plan {

/// Whether the instruction carries `name`: an attribute that only some of
/// the ops sharing a kernel declare (count_include_pad of the pools).
bool hasAttr(const AttrMap &attrs, std::string_view name);
bool attrBool(const AttrMap &attrs, std::string_view name);
int64_t attrInt(const AttrMap &attrs, std::string_view name);
/// A float attribute; an integer value is accepted (JSON writes 1.0 as 1).
double attrFloat(const AttrMap &attrs, std::string_view name);
std::string attrString(const AttrMap &attrs, std::string_view name);
std::vector<int64_t> attrInts(const AttrMap &attrs, std::string_view name);

} // namespace mpc::plan
