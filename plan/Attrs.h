//===- plan/Attrs.h - typed reads of instruction attributes -----===//
//
// Both backends read a kernel instruction's attributes through these, once,
// when a plan is loaded. The plan verifier has already checked every
// attribute against the plan's op table (kind and presence, OpSignatures.h)
// and codegen writes every attribute an op declares, so the defaults matter
// only for hand-made plans in tests; a value of the wrong kind still throws
// RuleError naming the attribute, because a plan is a file a user can edit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpc::plan {

bool hasAttr(const AttrMap &attrs, std::string_view name);
bool attrBool(const AttrMap &attrs, std::string_view name, bool dflt);
int64_t attrInt(const AttrMap &attrs, std::string_view name, int64_t dflt);
/// A float attribute; an integer value is accepted (JSON writes 1.0 as 1).
double attrFloat(const AttrMap &attrs, std::string_view name, double dflt);
std::string attrString(const AttrMap &attrs, std::string_view name, std::string_view dflt);
std::vector<int64_t> attrInts(const AttrMap &attrs, std::string_view name,
                              const std::vector<int64_t> &dflt = {});

} // namespace mpc::plan
