//===- test/unit/runtime/TensorBytes.h - a reference tensor as buffer bytes -===//
//
// The bytes a backend's buffer of `dtype` holds for a float64 reference
// tensor, and back: f32 and i32 in four bytes, bf16 and f16 in two, rounded
// as every backend rounds (ops/Float16.h). The CPU and CUDA kernel tests
// share them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/RefTensor.h"
#include "ops/Float16.h"
#include "plan/Plan.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace mpc::test {

inline std::vector<uint8_t> bytesOf(const ir::RefTensor &t, plan::DType dtype) {
  std::vector<uint8_t> out(t.data.size() * size_t(ops::dtypeSize(dtype)));
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (dtype == plan::DType::I32) {
      int32_t v = int32_t(t.data[i]);
      std::memcpy(&out[i * 4], &v, 4);
    } else {
      ops::storeFloat(dtype, out.data(), int64_t(i), float(t.data[i]));
    }
  }
  return out;
}

inline std::vector<double> valuesOf(const std::vector<uint8_t> &bytes, plan::DType dtype) {
  std::vector<double> out(bytes.size() / size_t(ops::dtypeSize(dtype)));
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == plan::DType::I32) {
      int32_t v;
      std::memcpy(&v, &bytes[i * 4], 4);
      out[i] = v;
    } else {
      out[i] = ops::loadFloat(dtype, bytes.data(), int64_t(i));
    }
  }
  return out;
}

} // namespace mpc::test
