//===- plan/PlanFormat.h - plan.bin layout constants ------------===//
//
// The fixed parts of plan.bin (docs/plan-format.md): the header layout, the
// magic, the format version, the alignment of sections and tensors, the
// checksum, and the limits the reader enforces before it allocates anything.
// Writer, reader and tests share these so the format is defined in one place.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace mpc::plan {

/// "MPCPLAN\0": the first 8 bytes of every plan file.
inline constexpr uint8_t kPlanMagic[8] = {'M', 'P', 'C', 'P', 'L', 'A', 'N', 0};

/// The format version this mpc writes and the newest it reads. Bumped on any
/// change a version-1 reader would misread (docs/plan-format.md, versioning).
/// Version 2 added the op table (`ops`) and pipeline schedules (instruction
/// `action`, top-level `pipeline`); version 3, collective instructions;
/// version 4, sharded optimizer state (tensor `shards`); version 5,
/// tensors split along an axis (tensor `shard_axis`: tensor parallelism);
/// version 6, bf16 and f16 buffers and the top-level `precision`.
/// Plans are compiled artifacts: a reader reads its own version only.
inline constexpr uint32_t kPlanFormatVersion = 6;

/// Header fields, all little-endian, at these byte offsets.
inline constexpr size_t kHeaderMagicOffset = 0;     ///< 8 bytes
inline constexpr size_t kHeaderVersionOffset = 8;   ///< u32
inline constexpr size_t kHeaderFlagsOffset = 12;    ///< u32, must be 0
inline constexpr size_t kHeaderMetaLenOffset = 16;  ///< u64
inline constexpr size_t kHeaderDataLenOffset = 24;  ///< u64
inline constexpr size_t kHeaderChecksumOffset = 32; ///< u64
inline constexpr size_t kHeaderSize = 40;

/// Sections (the meta section right after the header, then zero padding, then
/// the data section) and the tensors inside the data section start at
/// multiples of this; arena and persistent offsets are multiples of it too.
inline constexpr uint64_t kPlanAlignment = 64;

/// Section names used in diagnostics ("plan.bin: error: header: ...").
inline constexpr const char *kSectionHeader = "header";
inline constexpr const char *kSectionMeta = "meta";
inline constexpr const char *kSectionData = "data";
inline constexpr const char *kSectionVerify = "verify";

/// Limits checked before anything is allocated from a file's numbers. A
/// shape's rank and element count are bounded by the op contract's limits
/// (ops::kMaxRank, ops::kMaxElements in ops/Type.h), as in every reader.
inline constexpr uint64_t kMaxMetaBytes = uint64_t(1) << 30;
inline constexpr size_t kMaxCborDepth = 32;

inline constexpr uint64_t alignUp(uint64_t v, uint64_t a = kPlanAlignment) {
  return (v + a - 1) / a * a;
}

/// Offset of the meta section, and of the data section for a given meta length.
inline constexpr uint64_t metaOffset() { return kHeaderSize; }
inline constexpr uint64_t dataOffset(uint64_t metaLen) {
  return alignUp(kHeaderSize + metaLen);
}

/// FNV-1a 64 over `size` bytes: the checksum of everything after the header.
uint64_t planChecksum(const uint8_t *data, size_t size);

/// Little-endian helpers (the format is little-endian on every host).
inline uint64_t loadLE(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}
inline void storeLE(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = uint8_t(v >> (8 * i));
}

} // namespace mpc::plan
