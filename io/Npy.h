//===- io/Npy.h - NumPy .npy files ------------------------------===//
//
// `mpc run` reads its inputs and writes its outputs as .npy (format versions
// 1.0, 2.0 and 3.0 read, 1.0 written): little-endian float32 ('<f4') or
// int32 ('<i4'), C order. Anything else (another dtype, big-endian, Fortran
// order, a bad magic or header, a data size that does not match the shape)
// is a UserError naming the file and what is wrong; the reader never trusts
// a length from the file before checking it against the file size.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::io {

struct NpyArray {
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< row-major, little-endian (4 bytes an element; f16 2)

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

/// Decodes an .npy image; `file` names it in errors.
NpyArray parseNpy(const uint8_t *data, size_t size, const std::string &file);
NpyArray readNpy(const std::string &path);

/// Encodes an array as .npy version 1.0 (header padded to 64 bytes).
std::vector<uint8_t> encodeNpy(plan::DType dtype, const std::vector<int64_t> &shape,
                               const void *data);
/// Writes atomically (temporary file, then rename).
void writeNpy(const std::string &path, plan::DType dtype, const std::vector<int64_t> &shape,
              const void *data);

} // namespace mpc::io
