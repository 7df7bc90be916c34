//===- test/unit/passes/TrainRegressionTest.cpp - the seed model trains -===//
//
// The question behind mpc: three layers on three devices, and the gradients
// never reached the first two. Here the seed model goes through the whole
// training pipeline and is trained with the reference interpreter on
// generated data (X ~ N(0, 1), y = 2 x0 - 3.4 x1 + 4.2 + noise): the loss
// falls by orders of magnitude and every one of the six parameters moves.
//
//===----------------------------------------------------------------------===//
#include "test/unit/passes/PassTestUtil.h"

#include "ir/Interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace mpc::passes {
namespace {

/// A small deterministic generator (splitmix64 + Box-Muller), so the data
/// does not depend on the standard library's distributions.
class Gaussian {
public:
  explicit Gaussian(uint64_t seed) : state_(seed) {}
  double next() {
    double u1 = (double(bits() >> 11) + 0.5) / 9007199254740992.0;
    double u2 = double(bits() >> 11) / 9007199254740992.0;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

private:
  uint64_t bits() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

TEST(TrainRegression, SeedModelTrainsOnThreeDevices) {
  auto g = test::parse(test::seedModelJson());
  test::runPasses(*g, test::kTrainingPipeline);
  ASSERT_EQ(g->gradients.size(), 6u);
  std::set<std::string> devices;
  for (const auto &n : g->nodes()) devices.insert(n->device);
  EXPECT_EQ(devices.size(), 3u);

  // 10000 samples, batches of 100.
  constexpr int kSamples = 10000, kBatch = 100;
  Gaussian rng(42);
  std::vector<double> xs(kSamples * 2), ys(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    xs[size_t(2 * i)] = rng.next();
    xs[size_t(2 * i + 1)] = rng.next();
    ys[size_t(i)] = 2.0 * xs[size_t(2 * i)] - 3.4 * xs[size_t(2 * i + 1)] + 4.2 +
                    0.001 * rng.next();
  }
  auto batch = [&](int b) {
    std::map<std::string, ir::RefTensor> in;
    ir::RefTensor x({kBatch, 2}), y({kBatch, 1});
    for (int i = 0; i < kBatch; ++i) {
      int s = b * kBatch + i;
      x.data[size_t(2 * i)] = xs[size_t(2 * s)];
      x.data[size_t(2 * i + 1)] = xs[size_t(2 * s + 1)];
      y.data[size_t(i)] = ys[size_t(s)];
    }
    in["x"] = std::move(x);
    in["y"] = std::move(y);
    return in;
  };

  ir::Interpreter interp(*g);
  std::map<std::string, ir::RefTensor> initial = interp.persistent();
  double firstLoss = 0, lastEpochLoss = 0;
  constexpr int kEpochs = 40, kBatches = kSamples / kBatch;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    double sum = 0;
    for (int b = 0; b < kBatches; ++b) {
      double loss = interp.step(batch(b)).at("loss").data[0];
      if (epoch == 0 && b == 0) firstLoss = loss;
      sum += loss;
    }
    lastEpochLoss = sum / kBatches;
  }
  EXPECT_GT(firstLoss, 1.0);
  EXPECT_LT(lastEpochLoss, firstLoss * 1e-3)
      << "loss went from " << firstLoss << " to " << lastEpochLoss;
  for (const char *p : {"w0", "b0", "w1", "b1", "w2", "b2"}) {
    const ir::RefTensor &now = interp.persistent().at(p), &then = initial.at(p);
    double moved = 0;
    for (size_t i = 0; i < now.data.size(); ++i) moved += std::abs(now.data[i] - then.data[i]);
    EXPECT_GT(moved, 1e-3) << "param " << p << " did not change";
  }
}

} // namespace
} // namespace mpc::passes
