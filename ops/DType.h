//===- ops/DType.h - the element types of tensors -----------------------===//
//
// The one enumeration of element types, shared by the IR, the plan format
// and both backends; its values are plan.bin's dtype codes. C++17, as CUDA
// translation units include it through plan/Plan.h.
//
// bf16 and f16 are the low-precision float types of --precision
// (docs/precision.md): stored in two bytes, computed in f32 by every
// kernel, rounded to nearest-even where a result is stored
// (ops/Float16.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpc::ops {

enum class DType : uint8_t { F32 = 0, I32 = 1, BF16 = 2, F16 = 3 };

/// "f32" / "i32" / "bf16" / "f16": the name in model JSON, plan.bin,
/// messages and dumps.
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::I32: return "i32";
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  }
  return "?";
}

/// Bytes per element.
constexpr int dtypeSize(DType t) { return t == DType::BF16 || t == DType::F16 ? 2 : 4; }

/// f32, bf16 or f16.
constexpr bool isFloat(DType t) { return t != DType::I32; }

/// bf16 or f16: the types autocast runs matmul and conv in.
constexpr bool isLowPrecision(DType t) { return t == DType::BF16 || t == DType::F16; }

/// Every element type, in documentation order.
inline constexpr DType kDTypes[] = {DType::F32, DType::I32, DType::BF16, DType::F16};

/// Parses a dtypeName; nullopt otherwise.
inline std::optional<DType> parseDType(std::string_view s) {
  for (DType t : kDTypes)
    if (s == dtypeName(t)) return t;
  return std::nullopt;
}

/// "f32, i32, bf16 or f16": the names parseDType takes, for messages;
/// `quote` puts each in double quotes.
std::string dtypeNameList(bool quote = false);

/// The training precisions (--precision, a model's "precision";
/// docs/precision.md), in documentation order: fp32 (the default), tf32
/// (f32 values, GPU matmuls on TF32 tensor cores), bf16 and fp16 (autocast:
/// matmul and conv in the low type, f32 master weights).
inline constexpr const char *kPrecisions[] = {"fp32", "tf32", "bf16", "fp16"};

/// "fp32, tf32, bf16 or fp16", for messages and help.
std::string precisionList();

/// Whether `name` is one of kPrecisions.
inline bool isPrecision(std::string_view name) {
  for (const char *p : kPrecisions)
    if (name == p) return true;
  return false;
}

/// The low type a precision computes matmul and conv in: bf16, f16;
/// nullopt for fp32 and tf32.
inline std::optional<DType> lowTypeOf(std::string_view precision) {
  if (precision == "bf16") return DType::BF16;
  if (precision == "fp16") return DType::F16;
  return std::nullopt;
}

} // namespace mpc::ops
