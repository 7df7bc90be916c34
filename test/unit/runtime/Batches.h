//===- test/unit/runtime/Batches.h - deterministic batches for runtime tests -===//
//
// The whole-runtime tests feed the same batches to a plan on the CPU runtime
// and to the reference interpreter: float32-exact values in [-2, 2) (labels
// in [0, 3) for i32 inputs), a pure function of the input's name and step.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/RefTensor.h"
#include "runtime/Executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

namespace mpc::runtime::testbatch {

inline ir::RefTensor batchFor(const plan::TensorRef &t, int step) {
  ir::RefTensor r(t.shape);
  std::mt19937_64 rng(uint64_t(step) * 7919 + std::hash<std::string>{}(t.name) % 1000);
  for (double &v : r.data) {
    if (t.dtype == plan::DType::I32) v = double(rng() % 3);
    else v = double(float(double(rng() >> 11) * 0x1.0p-53 * 4.0 - 2.0));
  }
  return r;
}

/// Writes every batch into the executor's input of the same name; with
/// `device` given, only the placements on that device (Executor::writeTo, as
/// a runSteps hook does).
inline void feed(Executor &ex, const std::map<std::string, ir::RefTensor> &inputs,
                 int64_t device = -1) {
  for (const auto &[name, r] : inputs) {
    const plan::TensorRef *t = ex.findInput(name);
    ASSERT_NE(t, nullptr) << name;
    std::vector<uint8_t> bytes(r.data.size() * 4);
    for (size_t i = 0; i < r.data.size(); ++i) {
      if (t->dtype == plan::DType::F32) {
        float v = float(r.data[i]);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      } else {
        int32_t v = int32_t(r.data[i]);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    }
    if (device < 0) ex.write(*t, bytes.data(), bytes.size());
    else ex.writeTo(uint32_t(device), *t, bytes.data(), bytes.size());
  }
}

/// The step-th batch of every input of `p`.
inline std::map<std::string, ir::RefTensor> inputsFor(const plan::Plan &p, int step) {
  std::map<std::string, ir::RefTensor> in;
  for (const plan::TensorRef &t : p.inputs) in[t.name] = batchFor(t, step);
  return in;
}

} // namespace mpc::runtime::testbatch
