//===- io/Safetensors.h - safetensors checkpoints ---------------===//
//
// `mpc run --init` reads and `--save` writes parameters as safetensors, the
// format Python's safetensors and torch read: an 8-byte little-endian header
// length, a JSON header mapping each tensor name to {dtype, shape,
// data_offsets} (plus an optional "__metadata__" map of strings), then the
// raw little-endian bytes. mpc reads and writes F32 and I32 tensors. The
// reader checks the header length, every offset and size against the file,
// and that the data regions tile the byte buffer exactly (as the reference
// implementation requires); errors are UserErrors naming the file and the
// tensor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpc::io {

struct NamedTensor {
  std::string name;
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< 4 bytes per element, little-endian
};

/// A decoded file: its tensors, sorted by name, and its "__metadata__".
struct SafetensorsFile {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Decodes a safetensors image. Duplicate keys are a UserError.
SafetensorsFile parseSafetensorsFile(const uint8_t *data, size_t size, const std::string &file);
SafetensorsFile readSafetensorsFile(const std::string &path);
/// The tensors only, sorted by name.
std::vector<NamedTensor> parseSafetensors(const uint8_t *data, size_t size,
                                          const std::string &file);
std::vector<NamedTensor> readSafetensors(const std::string &path);

/// Encodes tensors (names must be unique and not "__metadata__"), with
/// optional string metadata. Data is laid out in name order; the header is
/// padded with spaces to a multiple of 8 bytes.
std::vector<uint8_t> encodeSafetensors(const std::vector<NamedTensor> &tensors,
                                       const std::map<std::string, std::string> &metadata = {});
/// Writes atomically (temporary file, then rename).
void writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace mpc::io
