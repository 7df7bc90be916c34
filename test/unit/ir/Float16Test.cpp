//===- test/unit/ir/Float16Test.cpp - the two-byte float types' bits ------===//
//
// ops/Float16.h against values whose bits IEEE 754 fixes: ties to even,
// the largest finite f16 and the step to infinity, subnormals, NaN; and
// every one of the 65536 bf16 and f16 bit patterns round-trips through f32.
// (test/torch/autocast_crosscheck.py checks the same through mpc's cast op
// against PyTorch on random values.)
//
//===----------------------------------------------------------------------===//
#include "ops/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mpc::ops {
namespace {

TEST(Float16, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);      // a tie: to the even 1.0
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);  // a tie: to the even 1.015625
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81); // above the tie
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80); // rounds to inf
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

TEST(Float16, F16RoundsToNearestEvenAndOverflowsToInfinity) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00);      // a tie: to even
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);             // the largest finite
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00);             // the tie past it: inf
  EXPECT_EQ(floatToF16(-1e6f), 0xfc00);
  EXPECT_EQ(floatToF16(0x1p-14f), 0x0400);             // the smallest normal
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001);             // the smallest subnormal
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);             // a tie: to even (zero)
  EXPECT_EQ(floatToF16(1.5f * 0x1p-25f), 0x0001);
  EXPECT_EQ(floatToF16(3 * 0x1p-25f), 0x0002);         // a tie: to even
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(std::nanf("")))));
}

TEST(Float16, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float b = bf16ToFloat(uint16_t(h)), f = f16ToFloat(uint16_t(h));
    if (!std::isnan(b)) {
      EXPECT_EQ(floatToBf16(b), h) << "bf16 " << h;
      EXPECT_EQ(roundTo(DType::BF16, b), b) << "bf16 " << h;
    }
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToF16(f), h) << "f16 " << h;
    }
  }
}

} // namespace
} // namespace mpc::ops
