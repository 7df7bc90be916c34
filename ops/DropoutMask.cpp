//===- ops/DropoutMask.cpp - the attributes and rules of a dropout mask --===//
//
// What ops/DropoutMask.h describes, for the schemas of the ops that draw a
// mask (ops/Random.cpp's dropout, ops/Attention.cpp's attention).
//
//===----------------------------------------------------------------------===//
#include "ops/DropoutMask.h"

#include "ops/SchemaHelpers.h"

namespace mpc::ops {

using namespace helpers;

MaskPart maskPartOf(const AttrMap &a) {
  return {uint64_t(getInt(a, "offset")), uint64_t(getInt(a, "parts")), uint64_t(getInt(a, "part")),
          uint64_t(getInt(a, "inner"))};
}

bool OpSchema::drawsMask(const AttrMap &attrs) const {
  return mask.probability && getFloat(attrs, mask.probability) > 0.0;
}

namespace helpers {

std::vector<AttrSpec> dropoutMaskAttrs() {
  return {attr("key", AttrType::String, std::string(),
               "the mask's stream; empty: the node's name (the gradient keeps the forward's)"),
          attr("offset", AttrType::Int, int64_t(0),
               "index of the masked tensor's first element in the whole batch (set by "
               "micro-batching)"),
          attr("parts", AttrType::Int, int64_t(1),
               "the masked tensor is one of this many equal parts of the whole along an axis "
               "(set by tensor parallelism): the whole is blocks of `parts` runs of `inner` "
               "elements"),
          attr("part", AttrType::Int, int64_t(0),
               "which run of each block it holds: its element j is element offset + "
               "((j / inner) * parts + part) * inner + j % inner of the whole"),
          attr("inner", AttrType::Int, int64_t(1), "the elements of one run")};
}

void checkDropoutMask(const AttrMap &a, const char *probability, int64_t elements,
                      const std::string &op) {
  const double p = getFloat(a, probability);
  if (!(p >= 0.0 && p < 1.0))
    throw RuleError(op + " " + probability + " must be in [0, 1), got " + std::to_string(p));
  const int64_t parts = getInt(a, "parts"), part = getInt(a, "part"), inner = getInt(a, "inner");
  if (parts < 1 || part < 0 || part >= parts || inner < 1 || (parts > 1 && elements % inner != 0))
    throw RuleError(op + " part " + std::to_string(part) + " of " + std::to_string(parts) +
                    " in runs of " + std::to_string(inner) + " does not fit its " +
                    std::to_string(elements) +
                    " masked elements (parts >= 1, 0 <= part < parts, inner >= 1 dividing the "
                    "elements)");
}

void splitDropoutMask(ShardResult &r, const AttrMap &attrs, const Shape &covered, int axis,
                      int64_t parts) {
  r.memberAttr = "part";
  if (getInt(attrs, "parts") != 1) return; // a member's own: already a part
  r.localAttrs = attrs;
  int64_t inner = covered[size_t(axis)] / parts;
  for (size_t d = size_t(axis) + 1; d < covered.size(); ++d) inner *= covered[d];
  r.localAttrs["parts"] = parts;
  r.localAttrs["inner"] = inner;
}

} // namespace helpers
} // namespace mpc::ops
