//===- runtime/cpu/LowPrecision.cpp - bf16 and f16 operands on the CPU ----===//
#include "runtime/cpu/LowPrecision.h"

#include "ops/Float16.h"

namespace mpc::runtime::cpu {

LowPrecisionStaging stageLowPrecision(KernelInstance &k) {
  LowPrecisionStaging s;
  auto stage = [&](TensorArg &t, int arg, std::vector<LowPrecisionStaging::Copy> &list) {
    if (!ops::isLowPrecision(t.dtype)) return;
    list.push_back({t.data, t.dtype, t.numel, s.floats, arg});
    t.data = nullptr;
    t.dtype = plan::DType::F32;
    // 16 floats (64 bytes) apart: each copy starts aligned as a buffer does.
    s.floats += (t.numel + 15) / 16 * 16;
  };
  for (size_t i = 0; i < k.in.size(); ++i) stage(k.in[i], int(i), s.widen);
  stage(k.out, -1, s.narrow);
  return s;
}

void pointStaging(KernelInstance &k, const LowPrecisionStaging &s, float *space) {
  for (const auto *list : {&s.widen, &s.narrow})
    for (const auto &c : *list) (c.arg < 0 ? k.out : k.in[size_t(c.arg)]).data = space + c.offset;
}

void widenOperands(const LowPrecisionStaging &s, float *space) {
  for (const auto &c : s.widen)
    for (int64_t i = 0; i < c.numel; ++i) space[c.offset + i] = ops::loadFloat(c.dtype, c.buffer, i);
}

void narrowResult(const LowPrecisionStaging &s, const float *space) {
  for (const auto &c : s.narrow)
    for (int64_t i = 0; i < c.numel; ++i) ops::storeFloat(c.dtype, c.buffer, i, space[c.offset + i]);
}

} // namespace mpc::runtime::cpu
