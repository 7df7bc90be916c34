//===- test/unit/io/IoTest.cpp - NPY and safetensors files --------------===//
//
// Round trips and every rejection the readers promise: bad magic, versions,
// dtypes, Fortran order, malformed headers, size mismatches, truncation;
// safetensors header length, JSON, dtype, offsets, gaps and overlaps.
//
//===----------------------------------------------------------------------===//
#include "io/Npy.h"
#include "io/Safetensors.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace mpc::io {
namespace {

std::vector<uint8_t> npyWithHeader(const std::string &dict, size_t dataBytes, int major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  std::string h = dict + "\n";
  if (major == 1) {
    out.push_back(uint8_t(h.size() & 0xff));
    out.push_back(uint8_t(h.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(h.size() >> (8 * i)));
  }
  out.insert(out.end(), h.begin(), h.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

std::string npyError(const std::vector<uint8_t> &bytes) {
  try {
    parseNpy(bytes.data(), bytes.size(), "a.npy");
  } catch (const UserError &e) {
    EXPECT_EQ(e.file(), "a.npy");
    return e.message();
  }
  return "no error";
}

TEST(Npy, RoundTripF32) {
  std::vector<float> v = {1.5f, -2.f, 3.25f, 0.f, 7.f, -1e-3f};
  std::vector<uint8_t> bytes = encodeNpy(plan::DType::F32, {3, 2}, v.data());
  EXPECT_EQ((bytes.size() - v.size() * 4) % 64, 0u) << "header padded to 64 bytes";
  NpyArray a = parseNpy(bytes.data(), bytes.size(), "a.npy");
  EXPECT_EQ(a.dtype, plan::DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(std::memcmp(a.data.data(), v.data(), 24), 0);
}

TEST(Npy, RoundTripI32RankOneAndScalar) {
  std::vector<int32_t> v = {4, -5, 6};
  std::vector<uint8_t> bytes = encodeNpy(plan::DType::I32, {3}, v.data());
  std::string header(bytes.begin() + 10, bytes.begin() + 64);
  EXPECT_NE(header.find("'shape': (3,)"), std::string::npos) << header;
  NpyArray a = parseNpy(bytes.data(), bytes.size(), "a.npy");
  EXPECT_EQ(a.dtype, plan::DType::I32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  bytes = encodeNpy(plan::DType::I32, {}, v.data());
  a = parseNpy(bytes.data(), bytes.size(), "a.npy");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data.size(), 4u);
}

TEST(Npy, AcceptsVersion2AndNumpySpacing) {
  auto bytes = npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }", 8, 2);
  EXPECT_EQ(parseNpy(bytes.data(), bytes.size(), "a.npy").shape, (std::vector<int64_t>{2, 1}));
  bytes = npyWithHeader("{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(4,)}", 16);
  EXPECT_EQ(parseNpy(bytes.data(), bytes.size(), "a.npy").dtype, plan::DType::I32);
}

TEST(Npy, Rejections) {
  std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  EXPECT_EQ(npyError({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}), "not an NPY file (bad magic)");
  EXPECT_EQ(npyError(npyWithHeader(ok, 8, 4)), "unsupported NPY format version 4.0");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16)),
            "unsupported dtype '<f8' (expected '<f4' float32, '<i4' int32 or '<f2' float16; NumPy "
            "has no bfloat16: give bf16 data as safetensors)");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)),
            "unsupported dtype '>f4' (expected '<f4' float32, '<i4' int32 or '<f2' float16; NumPy "
            "has no bfloat16: give bf16 data as safetensors)");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8)),
            "fortran_order arrays are not supported (use C order)");
  EXPECT_EQ(npyError(npyWithHeader(ok, 4)),
            "data size 4 bytes does not match shape (8 bytes expected)");
  EXPECT_EQ(npyError(npyWithHeader(ok, 12)),
            "data size 12 bytes does not match shape (8 bytes expected)");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '<f4', 'shape': (2,), }", 8)),
            "missing key 'fortran_order'");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 8)),
            "unsupported value at offset 50");
  EXPECT_EQ(npyError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8)),
            "expected '}' at offset 55");
  EXPECT_EQ(
      npyError(npyWithHeader(
          "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 8)),
      "shape has too many elements");
  // Header length pointing past the end of the file.
  std::vector<uint8_t> trunc = npyWithHeader(ok, 0);
  trunc.resize(20);
  EXPECT_EQ(npyError(trunc), "truncated NPY header: header length 58 exceeds the file");
}

TEST(Npy, TruncatedAtEveryByteNeverCrashes) {
  std::vector<float> v = {1, 2, 3, 4};
  std::vector<uint8_t> bytes = encodeNpy(plan::DType::F32, {2, 2}, v.data());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(parseNpy(bytes.data(), n, "a.npy"), UserError) << n;
}

TEST(Npy, FileRoundTripAndMissingFile) {
  std::string path = ::testing::TempDir() + "/npy_roundtrip.npy";
  std::vector<float> v = {1, 2, 3};
  writeNpy(path, plan::DType::F32, {3, 1}, v.data());
  EXPECT_EQ(readNpy(path).shape, (std::vector<int64_t>{3, 1}));
  EXPECT_THROW(readNpy(::testing::TempDir() + "/does-not-exist.npy"), UserError);
}

std::vector<uint8_t> rawSafetensors(const std::string &json, size_t dataBytes) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(uint64_t(json.size()) >> (8 * i));
  out.insert(out.end(), json.begin(), json.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

std::string stError(const std::vector<uint8_t> &bytes) {
  try {
    parseSafetensors(bytes.data(), bytes.size(), "p.safetensors");
  } catch (const UserError &e) {
    EXPECT_EQ(e.file(), "p.safetensors");
    return (e.where().empty() ? "" : e.where() + ": ") + e.message();
  }
  return "no error";
}

TEST(Safetensors, RoundTrip) {
  NamedTensor w{"w", plan::DType::F32, {2, 2}, {}};
  std::vector<float> wv = {1, 2, 3, 4};
  w.data.assign(reinterpret_cast<uint8_t *>(wv.data()), reinterpret_cast<uint8_t *>(wv.data()) + 16);
  NamedTensor b{"b", plan::DType::F32, {1}, {0, 0, 0x80, 0x3f}};
  NamedTensor step{"s", plan::DType::I32, {}, {7, 0, 0, 0}};
  std::vector<uint8_t> bytes = encodeSafetensors({w, b, step}, {{"format", "pt"}});
  uint64_t hlen = 0;
  for (int i = 8; i-- > 0;) hlen = (hlen << 8) | bytes[size_t(i)];
  EXPECT_EQ(hlen % 8, 0u);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + long(hlen));
  EXPECT_NE(header.find("\"b\":{\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1]}"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos) << header;
  std::vector<NamedTensor> back = parseSafetensors(bytes.data(), bytes.size(), "p.safetensors");
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].name, "b");
  EXPECT_EQ(back[1].name, "s");
  EXPECT_EQ(back[1].dtype, plan::DType::I32);
  EXPECT_TRUE(back[1].shape.empty());
  EXPECT_EQ(back[2].name, "w");
  EXPECT_EQ(back[2].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(back[2].data, w.data);
  EXPECT_EQ(back[0].data, b.data);
}

TEST(Safetensors, Rejections) {
  EXPECT_EQ(stError({1, 2, 3}), "not a safetensors file (shorter than 8 bytes)");
  EXPECT_EQ(stError(rawSafetensors("{}", 0)), "no error");
  std::vector<uint8_t> big = rawSafetensors("{}", 0);
  big[5] = 1;
  EXPECT_EQ(stError(big),
            "header: header length 1099511627778 exceeds the file or the 100 MB limit");
  EXPECT_EQ(stError(rawSafetensors("{\"a\":", 0)), "header: header is not valid JSON");
  EXPECT_EQ(stError(rawSafetensors("[1]", 0)), "header: header is not a JSON object");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8)),
            "tensor 'a': unsupported dtype 'F64' (expected F32, I32, BF16 or F16)");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,2]}})", 2)),
            "tensor 'a': data size 2 bytes does not match shape (4 bytes expected)");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)),
            "tensor 'a': shape entries must be non-negative integers");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4)),
            "tensor 'a': data size 4 bytes does not match shape (8 bytes expected)");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)),
            "tensor 'a': data_offsets [0, 8] outside the data of 4 bytes");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[1]}})", 4)),
            "tensor 'a': 'data_offsets' must be two non-negative integers");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)),
            "data: gap in the tensor data at byte 0");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                   4)),
            "data: tensor data regions overlap");
  EXPECT_EQ(stError(rawSafetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8)),
            "data: trailing bytes after the tensor data");
  EXPECT_EQ(stError(rawSafetensors(R"({"__metadata__":{"k":1}})", 0)),
            "__metadata__: metadata value 'k' is not a string");
}

TEST(Safetensors, DuplicateKeysAreRejected) {
  // The format forbids them; a JSON parser alone keeps the last one.
  EXPECT_EQ(stError(rawSafetensors(R"({"W":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("W":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   8)),
            "header: duplicate key 'W' (the format requires unique names)");
  EXPECT_EQ(stError(rawSafetensors(R"({"__metadata__":{"k":"a","k":"b"}})", 0)),
            "header: duplicate key 'k' (the format requires unique names)");
  EXPECT_EQ(stError(rawSafetensors(R"({"__metadata__":{},"__metadata__":{}})", 0)),
            "header: duplicate key '__metadata__' (the format requires unique names)");
  // Equal keys in different objects are fine.
  EXPECT_EQ(stError(rawSafetensors(R"({"__metadata__":{"dtype":"x"},)"
                                   R"("dtype":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                   4)),
            "no error");
}

TEST(Safetensors, MetadataComesBack) {
  NamedTensor w{"w", plan::DType::F32, {1}, std::vector<uint8_t>(4, 0)};
  std::vector<uint8_t> bytes = encodeSafetensors({w}, {{"format", "pt"}, {"mpc.step", "7"}});
  SafetensorsFile f = parseSafetensorsFile(bytes.data(), bytes.size(), "m.safetensors");
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"mpc.step", "7"}}));
  ASSERT_EQ(f.tensors.size(), 1u);
}

TEST(Safetensors, MessagesEscapeControlBytes) {
  // JSON's \u escapes are the only way to put such bytes in a safetensors name.
  std::string header = "{\"a\\u0001\\u001b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
  try {
    std::vector<uint8_t> bytes = rawSafetensors(header, 8);
    parseSafetensors(bytes.data(), bytes.size(), "e.safetensors");
    FAIL() << "accepted";
  } catch (const UserError &e) {
    EXPECT_STREQ(e.what(), "e.safetensors: error: tensor 'a\\x01\\x1b': unsupported dtype 'F64' "
                           "(expected F32, I32, BF16 or F16)");
  }
}

TEST(Safetensors, TruncatedAtEveryByteNeverCrashes) {
  NamedTensor w{"w", plan::DType::F32, {2}, std::vector<uint8_t>(8, 1)};
  std::vector<uint8_t> bytes = encodeSafetensors({w});
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(parseSafetensors(bytes.data(), n, "p.safetensors"), UserError) << n;
}

} // namespace
} // namespace mpc::io
