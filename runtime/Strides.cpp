//===- runtime/Strides.cpp - row-major and broadcast strides ------------===//
#include "runtime/Strides.h"

#include "plan/PlanIO.h"
#include "support/Error.h"

namespace mpc::runtime {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  auto fail = [&]() -> std::vector<int64_t> {
    throw RuleError("cannot broadcast " + plan::shapeText(in) + " to " + plan::shapeText(out));
  };
  if (in.size() > out.size()) return fail();
  std::vector<int64_t> cs = contiguousStrides(in);
  std::vector<int64_t> s(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i]) s[lead + i] = in[i] == 1 ? 0 : cs[i];
    else if (in[i] == 1) s[lead + i] = 0;
    else return fail();
  }
  return s;
}

std::vector<int64_t> unravelIndex(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;)
    if (shape[i] > 0) {
      idx[i] = flat % shape[i];
      flat /= shape[i];
    }
  return idx;
}

} // namespace mpc::runtime
