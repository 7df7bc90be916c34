//===- frontend/mxnet/ParamsFile.h - MXNet .params (NDArray list) --------===//
//
// The file mx.nd.save / Module.save_checkpoint writes (src/ndarray/ndarray.cc),
// all little-endian:
//   uint64 0x112 (list magic), uint64 reserved,
//   uint64 count, then count NDArrays,
//   uint64 name count (0 or count), then per name uint64 length + bytes
//   ("arg:fc1_weight", "aux:bn1_moving_mean"; Gluon writes bare names).
// An NDArray is one of
//   V2/V3: uint32 magic 0xF993fac9 / 0xF993faca, int32 storage type (0 =
//          dense; sparse is refused), shape, context, dtype, data;
//   V1:    uint32 magic 0xF993fac8, shape, context, dtype, data;
//   legacy (no magic): the first uint32 is ndim, then ndim uint32 dims,
//          context, dtype, data.
// shape (V1-V3): int32 ndim, then ndim int64 dims (ndim 0, or -1 in V3,
// is an empty array); context: int32 device type, int32 device id; dtype:
// int32 mshadow type flag (0 float32, 1 float64, 2 float16, 3 uint8,
// 4 int32, 5 int8, 6 int64); data: the elements, row-major.
// float64 and float16 arrays are converted to float32; other types are
// refused. Every size the file declares is checked against the bytes left
// before anything of that size is allocated. Errors name the file, the array
// and the byte offset.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/common/ImportOptions.h"

#include "frontend/mxnet/Import.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mpc::frontend::mxnet {

struct NdArray {
  std::string name; ///< as written, with its "arg:"/"aux:" prefix
  std::vector<int64_t> shape;
  int typeFlag = 0;        ///< as written
  std::vector<float> data; ///< converted to float32
  uint64_t offset = 0;     ///< byte offset of the array in the file
};

std::vector<NdArray> parseParamsFile(const uint8_t *data, size_t size, const std::string &file);
std::vector<NdArray> readParamsFile(const std::string &path);

/// Matches a file's arrays to what the import expects: every expected
/// array present once with its shape (not as both "arg:w" and "w"), no
/// unknown names, "aux:" exactly for the running statistics. Arrays the
/// model does not use (a fixed gamma) are left out. The result is sorted by
/// name.
std::vector<FloatTensor> matchParams(const std::vector<NdArray> &arrays,
                                     const std::vector<ExpectedArray> &expected,
                                     const std::string &file);

} // namespace mpc::frontend::mxnet
