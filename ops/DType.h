//===- ops/DType.h - the element types of tensors -----------------------===//
//
// The one enumeration of element types, shared by the IR, the plan format
// and both backends; its values are plan.bin's dtype codes. C++17, as CUDA
// translation units include it through plan/Plan.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mpc::ops {

enum class DType : uint8_t { F32 = 0, I32 = 1 };

/// "f32" / "i32": the name in model JSON, plan.bin, messages and dumps.
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::I32: return "i32";
  }
  return "?";
}

/// Parses "f32" / "i32"; nullopt otherwise.
inline std::optional<DType> parseDType(std::string_view s) {
  if (s == "f32") return DType::F32;
  if (s == "i32") return DType::I32;
  return std::nullopt;
}

} // namespace mpc::ops
