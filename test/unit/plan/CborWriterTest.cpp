//===- test/unit/codegen/CborWriterTest.cpp - CborWriter vs nlohmann ------===//
//
// plan.bin's structured part is streamed by plan/CborWriter.h and
// must be the bytes nlohmann::json::to_cbor gives for the same values (the
// encoding plan.bin has always had). Each kind of item is checked at every
// boundary of its shortest form; whole plans are checked in PlanFileTest.
//
//===----------------------------------------------------------------------===//
#include "plan/CborWriter.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace mpc {
namespace {

using nlohmann::json;

template <typename Write> std::vector<uint8_t> written(Write write) {
  std::vector<uint8_t> out;
  plan::CborWriter w(out);
  write(w);
  return out;
}

TEST(CborWriter, UnsignedIntegersAtEveryWidthBoundary) {
  for (uint64_t v : {0ull, 1ull, 23ull, 24ull, 255ull, 256ull, 65535ull, 65536ull, 0xffffffffull,
                     0x100000000ull, ~0ull})
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeUnsigned(v); }), json::to_cbor(json(v)))
        << v;
}

TEST(CborWriter, SignedIntegersAtEveryWidthBoundary) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  for (int64_t v : {int64_t(0), int64_t(23), int64_t(24), int64_t(-1), int64_t(-24), int64_t(-25),
                    int64_t(-256), int64_t(-257), int64_t(-65536), int64_t(-65537),
                    int64_t(-4294967296), int64_t(-4294967297), lo, hi})
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeInt(v); }), json::to_cbor(json(v))) << v;
}

TEST(CborWriter, RealsInTheShortestExactForm) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 0.5, -2.0, 0.1, 1e-3, 0.9, 0.999, 1e-8, 1e-300, 1e300,
                   double(FLT_MAX), -double(FLT_MAX), double(FLT_MIN), double(FLT_TRUE_MIN), 1e39,
                   inf, -inf, std::nan("")})
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeDouble(v); }), json::to_cbor(json(v))) << v;
}

TEST(CborWriter, StringsArraysMapsAndSimpleValues) {
  for (size_t n : {0, 23, 24, 255, 256, 65535, 65536}) {
    std::string s(n, 'x');
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeString(s); }), json::to_cbor(json(s))) << n;
    std::vector<int64_t> ints(n, -3);
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeInts(ints); }), json::to_cbor(json(ints)))
        << n;
    std::vector<uint32_t> ids(n, 300);
    EXPECT_EQ(written([&](plan::CborWriter &w) { w.writeInts(ids); }), json::to_cbor(json(ids)))
        << n;
  }
  json obj = {{"a", true},
              {"b", false},
              {"c", nullptr},
              {"d", json::object()},
              {"e", json::array()}};
  EXPECT_EQ(written([](plan::CborWriter &w) {
              w.beginMap(5);
              w.key("a").writeBool(true);
              w.key("b").writeBool(false);
              w.key("c").writeNull();
              w.key("d").beginMap(0);
              w.key("e").beginArray(0);
            }),
            json::to_cbor(obj));
}

} // namespace
} // namespace mpc
