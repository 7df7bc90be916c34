//===- test/unit/frontend/ParamsFileTest.cpp - MXNet .params files -------===//
//
// Files written byte by byte from the format (ndarray.cc's NDArray::Save and
// the list header), read back; every truncation and corruption is a
// UserError naming the file, never a crash or a read past the end.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/ParamsFile.h"
#include "support/Error.h"

#include <cstring>
#include <gtest/gtest.h>

namespace mx = mpc::frontend::mxnet;

namespace {

class Bytes {
public:
  template <typename T> Bytes &put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    data.insert(data.end(), b, b + sizeof(T));
    return *this;
  }
  Bytes &str(const std::string &s) {
    put<uint64_t>(s.size());
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  std::vector<uint8_t> data;
};

enum class Form { V1, V2, V3, Legacy };

/// One dense float32 array on cpu(0) in the given form.
void putArray(Bytes &b, Form form, const std::vector<int64_t> &shape,
              const std::vector<float> &values, int32_t typeFlag = 0) {
  if (form == Form::Legacy) {
    b.put<uint32_t>(uint32_t(shape.size()));
    for (int64_t d : shape) b.put<uint32_t>(uint32_t(d));
  } else {
    b.put<uint32_t>(form == Form::V1 ? 0xF993fac8 : form == Form::V2 ? 0xF993fac9 : 0xF993faca);
    if (form != Form::V1) b.put<int32_t>(0); // dense
    b.put<int32_t>(int32_t(shape.size()));
    for (int64_t d : shape) b.put<int64_t>(d);
  }
  b.put<int32_t>(1).put<int32_t>(0); // cpu(0)
  b.put<int32_t>(typeFlag);
  for (float v : values) {
    if (typeFlag == 1) b.put<double>(double(v));
    else b.put<float>(v);
  }
}

std::vector<uint8_t> twoArrays(Form form) {
  Bytes b;
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(2);
  putArray(b, form, {2, 3}, {1, 2, 3, 4, 5, 6});
  putArray(b, form, {3}, {0.5f, -1.5f, 2});
  b.put<uint64_t>(2).str("arg:fc1_weight").str("aux:bn_moving_mean");
  return b.data;
}

std::string errorOf(const std::vector<uint8_t> &bytes) {
  try {
    mx::parseParamsFile(bytes.data(), bytes.size(), "m.params");
  } catch (const mpc::UserError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(ParamsFile, ReadsEveryArrayForm) {
  for (Form f : {Form::V1, Form::V2, Form::V3, Form::Legacy}) {
    std::vector<uint8_t> bytes = twoArrays(f);
    std::vector<mx::NdArray> a = mx::parseParamsFile(bytes.data(), bytes.size(), "m.params");
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].name, "arg:fc1_weight");
    EXPECT_EQ(a[0].shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a[0].data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(a[0].offset, 24u);
    EXPECT_EQ(a[1].name, "aux:bn_moving_mean");
    EXPECT_EQ(a[1].data, (std::vector<float>{0.5f, -1.5f, 2}));
  }
}

TEST(ParamsFile, ConvertsFloat64AndFloat16) {
  Bytes b;
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(2);
  putArray(b, Form::V2, {2}, {0.25f, -3}, /*typeFlag=*/1);
  b.put<uint32_t>(0xF993fac9).put<int32_t>(0).put<int32_t>(1).put<int64_t>(3);
  b.put<int32_t>(1).put<int32_t>(0).put<int32_t>(2);
  b.put<uint16_t>(0x3c00).put<uint16_t>(0xc000).put<uint16_t>(0x3800); // 1, -2, 0.5
  b.put<uint64_t>(2).str("arg:a").str("arg:b");
  std::vector<mx::NdArray> a = mx::parseParamsFile(b.data.data(), b.data.size(), "m.params");
  EXPECT_EQ(a[0].data, (std::vector<float>{0.25f, -3}));
  EXPECT_EQ(a[1].data, (std::vector<float>{1, -2, 0.5f}));
}

TEST(ParamsFile, EveryTruncationIsAUserError) {
  std::vector<uint8_t> bytes = twoArrays(Form::V2);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(n));
    std::string e = errorOf(cut);
    EXPECT_NE(e.find("m.params: error: "), std::string::npos) << n << ": " << e;
  }
  EXPECT_NE(errorOf(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 40))
                .find("array 0 at byte 36: truncated file"),
            std::string::npos);
}

TEST(ParamsFile, DeclaredSizesAreCheckedBeforeAllocating) {
  // A count of arrays the bytes left cannot hold: the file was cut short.
  Bytes b;
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(2);
  EXPECT_EQ(errorOf(b.data),
            "m.params: error: byte 24: truncated file: 2 arrays need at least 8 bytes, 0 left");
  b = Bytes();
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(UINT64_MAX).put<uint32_t>(0);
  EXPECT_EQ(errorOf(b.data), "m.params: error: byte 24: truncated file: 18446744073709551615 "
                             "arrays need at least 18446744073709551615 bytes, 4 left");
  // A 101-byte file declaring 2^33 float32 elements (32 GiB) is refused
  // before the data is allocated.
  b = Bytes();
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(1);
  putArray(b, Form::V2, {int64_t(1) << 33}, {});
  b.data.resize(101);
  EXPECT_EQ(errorOf(b.data), "m.params: error: array 0 at byte 56: truncated file: float32 data "
                             "needs 34359738368 bytes, 45 left");
  // A rank whose dimensions are not in the file.
  b = Bytes();
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(1);
  b.put<uint32_t>(0xF993fac9).put<int32_t>(0).put<int32_t>(3).put<int64_t>(2);
  EXPECT_EQ(errorOf(b.data), "m.params: error: array 0 at byte 36: truncated file: a shape of "
                             "rank 3 needs 24 bytes, 8 left");
  // A zero dimension makes the array empty whatever the others declare.
  b = Bytes();
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(1);
  putArray(b, Form::V2, {int64_t(1) << 35, 0}, {});
  b.put<uint64_t>(1).str("arg:a");
  std::vector<mx::NdArray> a = mx::parseParamsFile(b.data.data(), b.data.size(), "m.params");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].data.empty());
}

TEST(ParamsFile, CorruptFilesAreUserErrors) {
  std::vector<uint8_t> bytes = twoArrays(Form::V2);
  std::vector<uint8_t> bad = bytes;
  bad[0] = 0x13;
  EXPECT_NE(errorOf(bad).find("not an MXNet NDArray file: magic 0x113"), std::string::npos);
  bad = bytes;
  bad[28] = 2; // storage type: CSR
  EXPECT_NE(errorOf(bad).find("array 0 at byte 28: storage type 2 is sparse"), std::string::npos);
  bad = bytes;
  bad[24] = 0x99; // neither a magic nor a small legacy rank
  EXPECT_NE(errorOf(bad).find("corrupt array"), std::string::npos);
  bad = bytes;
  bad.push_back(0);
  EXPECT_NE(errorOf(bad).find("1 unexpected bytes after the names"), std::string::npos);
  // dtype int32 (4) is not a float array.
  Bytes b;
  b.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(1);
  putArray(b, Form::V2, {1}, {0}, /*typeFlag=*/4);
  b.put<uint64_t>(1).str("arg:a");
  EXPECT_NE(errorOf(b.data).find("dtype 4 is not a float type"), std::string::npos);
}

TEST(ParamsFile, MatchesTheModelsArrays) {
  std::vector<uint8_t> bytes = twoArrays(Form::V2);
  std::vector<mx::NdArray> a = mx::parseParamsFile(bytes.data(), bytes.size(), "m.params");
  std::vector<mx::ExpectedArray> want = {{"fc1_weight", {2, 3}, false, false, "fc1"},
                                         {"bn_moving_mean", {3}, true, false, "bn"}};
  std::vector<mpc::frontend::FloatTensor> t = mx::matchParams(a, want, "m.params");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "bn_moving_mean");
  EXPECT_EQ(t[1].name, "fc1_weight");
  auto error = [&](std::vector<mx::ExpectedArray> w) -> std::string {
    try {
      mx::matchParams(a, w, "m.params");
    } catch (const mpc::UserError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(
      error({{"fc1_weight", {3, 2}, false, false, "fc1"}, want[1]})
          .find("array 'arg:fc1_weight' at byte 24: shape mismatch: (2, 3) in the file, (3, 2) "
                "in the model ('fc1')"),
      std::string::npos);
  EXPECT_NE(error({want[0]}).find("array 'aux:bn_moving_mean' at byte 88: not a parameter"),
            std::string::npos);
  EXPECT_NE(error({want[0], want[1], {"fc2_weight", {1}, false, false, "fc2"}})
                .find("missing parameter 'fc2_weight' (1,) of 'fc2'"),
            std::string::npos);
  EXPECT_NE(error({want[0], {"bn_moving_mean", {3}, false, false, "bn"}}).find("arg: expected"),
            std::string::npos);
  // "arg:w" and a bare "w" name one array of the model: given twice.
  Bytes twice;
  twice.put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(2);
  putArray(twice, Form::V2, {3}, {1, 2, 3});
  putArray(twice, Form::V2, {3}, {4, 5, 6});
  twice.put<uint64_t>(2).str("aux:bn_moving_mean").str("bn_moving_mean");
  std::vector<mx::NdArray> both =
      mx::parseParamsFile(twice.data.data(), twice.data.size(), "m.params");
  try {
    mx::matchParams(both, {want[1]}, "m.params");
    ADD_FAILURE() << "a model array given twice was accepted";
  } catch (const mpc::UserError &e) {
    EXPECT_STREQ(e.what(), "m.params: error: array 'bn_moving_mean' at byte 68: "
                           "'bn_moving_mean' is also given by array 'aux:bn_moving_mean'");
  }
  // A fixed gamma is in the file but not in the model: accepted, left out.
  t = mx::matchParams(a, {want[0], {"bn_moving_mean", {3}, true, true, "bn"}}, "m.params");
  ASSERT_EQ(t.size(), 1u);
}
