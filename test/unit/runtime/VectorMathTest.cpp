//===- test/unit/runtime/VectorMathTest.cpp - accuracy of the activations ===//
//
// The bounds VectorMath.h states, in ulps against the correctly rounded
// result (libm in double, rounded to float), over every 331st float in each
// function's interesting range, through the vectorised loops the kernels
// call (which may use FMA where scalar code does not); and the special
// values, exactly. The loops also run in place (output = input), as the
// in-place planner may ask.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/kernels/VectorMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace mpc::runtime::cpu::vmath {
namespace {

/// Floats mapped to integers whose difference counts the floats between.
int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
}

int64_t ulps(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (a == b) return 0; // +0 == -0
  return std::llabs(ordered(a) - ordered(b));
}

using Loop = void (*)(const float *, float *, int64_t);

/// Max ulps of `loop` against `exact` over every 331st float in [lo, hi].
int64_t maxUlps(Loop loop, const std::function<double(double)> &exact, float lo, float hi,
                float *worst) {
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 331) {
    float f;
    uint32_t bits = uint32_t(u);
    std::memcpy(&f, &bits, 4);
    if (f >= lo && f <= hi) xs.push_back(f);
  }
  std::vector<float> got(xs.size());
  loop(xs.data(), got.data(), int64_t(xs.size()));
  int64_t most = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    int64_t d = ulps(got[i], float(exact(double(xs[i]))));
    if (d > most) {
      most = d;
      *worst = xs[i];
    }
  }
  return most;
}

TEST(VectorMath, ExpIsWithinOneUlp) {
  float worst = 0;
  EXPECT_LE(maxUlps(expLoop, [](double x) { return std::exp(x); }, -103.9f, 88.7f, &worst), 1)
      << "at " << worst;
}

TEST(VectorMath, LogIsWithinOneUlp) {
  float worst = 0;
  EXPECT_LE(maxUlps(logLoop, [](double x) { return std::log(x); }, 0.0f,
                    std::numeric_limits<float>::max(), &worst),
            1)
      << "at " << worst;
}

TEST(VectorMath, TanhIsWithinTwoUlps) {
  float worst = 0;
  EXPECT_LE(maxUlps(tanhLoop, [](double x) { return std::tanh(x); }, -20.0f, 20.0f, &worst), 2)
      << "at " << worst;
}

TEST(VectorMath, SigmoidIsWithinTwoUlps) {
  float worst = 0;
  EXPECT_LE(maxUlps(sigmoidLoop, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -87.0f,
                    40.0f, &worst),
            2)
      << "at " << worst;
}

/// gelu (erf form) and its derivative against libm's erfc in double (erfc,
/// not 1 + erf, keeps the left tail's relative accuracy); the bounds are
/// those VectorMath.h states.
TEST(VectorMath, GeluIsWithinEightUlps) {
  float worst = 0;
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  EXPECT_LE(maxUlps(geluLoop, gelu, -13.0f, 20.0f, &worst), 8) << "worst at x = " << worst;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> special = {0.0f, -0.0f, inf, -inf, std::nanf("")}, out(5);
  geluLoop(special.data(), out.data(), 5);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::signbit(out[1]));
  EXPECT_EQ(out[2], inf);
  EXPECT_TRUE(std::isnan(out[3])); // -inf * 0, as the double formula gives
  EXPECT_TRUE(std::isnan(out[4]));
  // Its backward, with dy = 1, held to the kernels' tolerance (1e-6 of
  // relative or absolute error: the derivative crosses zero near -0.75).
  std::vector<float> xs, ones, got;
  for (float x = -12.0f; x <= 12.0f; x += 0.001f) xs.push_back(x);
  ones.assign(xs.size(), 1.0f);
  got.resize(xs.size());
  geluGradLoop(xs.data(), ones.data(), got.data(), int64_t(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i];
    double want = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) +
                  x * 0.39894228040143267794 * std::exp(-0.5 * x * x);
    double err = std::abs(got[i] - want);
    ASSERT_LE(std::min(err, err / std::abs(want)), 1e-6) << "x = " << x;
  }
}

TEST(VectorMath, SpecialValuesAreExact) {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  auto one = [](Loop loop, float x) {
    float y;
    loop(&x, &y, 1);
    return y;
  };
  EXPECT_EQ(one(expLoop, 0.0f), 1.0f);
  EXPECT_EQ(one(expLoop, inf), inf);
  EXPECT_EQ(one(expLoop, 89.0f), inf);
  EXPECT_EQ(one(expLoop, -inf), 0.0f);
  EXPECT_EQ(one(expLoop, -200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(one(expLoop, nan)));
  EXPECT_EQ(one(logLoop, 1.0f), 0.0f);
  EXPECT_EQ(one(logLoop, 0.0f), -inf);
  EXPECT_EQ(one(logLoop, inf), inf);
  EXPECT_TRUE(std::isnan(one(logLoop, -1.0f)));
  EXPECT_TRUE(std::isnan(one(logLoop, nan)));
  EXPECT_EQ(one(logLoop, std::numeric_limits<float>::denorm_min()),
            float(std::log(double(std::numeric_limits<float>::denorm_min()))));
  EXPECT_EQ(one(tanhLoop, 0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(one(tanhLoop, -0.0f)));
  EXPECT_EQ(one(tanhLoop, inf), 1.0f);
  EXPECT_EQ(one(tanhLoop, -inf), -1.0f);
  EXPECT_EQ(one(tanhLoop, 50.0f), 1.0f);
  EXPECT_TRUE(std::isnan(one(tanhLoop, nan)));
  EXPECT_EQ(one(sigmoidLoop, 0.0f), 0.5f);
  EXPECT_EQ(one(sigmoidLoop, inf), 1.0f);
  EXPECT_EQ(one(sigmoidLoop, -inf), 0.0f);
  EXPECT_TRUE(std::isnan(one(sigmoidLoop, nan)));
}

TEST(VectorMath, LoopsRunInPlace) {
  std::vector<float> x(1001), y(1001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i) - 500) / 50.0f;
  for (Loop loop : {expLoop, logLoop, tanhLoop, sigmoidLoop}) {
    loop(x.data(), y.data(), int64_t(x.size()));
    std::vector<float> z = x;
    loop(z.data(), z.data(), int64_t(z.size()));
    EXPECT_EQ(std::memcmp(y.data(), z.data(), y.size() * 4), 0);
  }
}

} // namespace
} // namespace mpc::runtime::cpu::vmath
