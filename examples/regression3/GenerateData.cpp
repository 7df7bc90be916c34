//===- examples/regression3/GenerateData.cpp - the seed example's data --===//
//
//   regression3-data [OUTDIR] [--rows N] [--seed S] [--noise E]
//
// Writes OUTDIR/x.npy (float32 [N, 2], X ~ N(0, 1)) and OUTDIR/y.npy
// (float32 [N, 1], y = 2 x0 - 3.4 x1 + 4.2 + E * N(0, 1)); defaults N = 10000,
// S = 0, E = 0.001. Normal draws use Box-Muller over a 64-bit Mersenne
// Twister, both fully specified, so the files are the same on every platform
// (std::normal_distribution is not).
//
//===----------------------------------------------------------------------===//
#include "io/Npy.h"
#include "support/Error.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

class Normal {
public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  double next() {
    if (has_) {
      has_ = false;
      return spare_;
    }
    // Uniforms in (0, 1] and [0, 1) from the top 53 bits.
    double u1 = (double(rng_() >> 11) + 1.0) * 0x1.0p-53;
    double u2 = double(rng_() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1)), t = 2.0 * M_PI * u2;
    spare_ = r * std::sin(t);
    has_ = true;
    return r * std::cos(t);
  }

private:
  std::mt19937_64 rng_;
  bool has_ = false;
  double spare_ = 0;
};

[[noreturn]] void usage(const std::string &msg) {
  std::cerr << "regression3-data: error: " << msg
            << "\nusage: regression3-data [OUTDIR] [--rows N] [--seed S] [--noise E]\n";
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  std::string dir = ".";
  long long rows = 10000;
  unsigned long long seed = 0;
  double noise = 0.001;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    try {
      if (a == "--rows") rows = std::stoll(value());
      else if (a == "--seed") seed = std::stoull(value());
      else if (a == "--noise") noise = std::stod(value());
      else if (a == "-h" || a == "--help") usage("help");
      else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
      else dir = a;
    } catch (const std::logic_error &) {
      usage("bad value for " + a);
    }
  }
  if (rows < 1 || rows > (1LL << 30)) usage("--rows must be in [1, 2^30]");

  Normal normal(seed);
  std::vector<float> x(static_cast<size_t>(rows) * 2);
  std::vector<float> y(static_cast<size_t>(rows));
  for (long long i = 0; i < rows; ++i) {
    double x0 = normal.next(), x1 = normal.next();
    x[size_t(2 * i)] = float(x0);
    x[size_t(2 * i + 1)] = float(x1);
  }
  for (long long i = 0; i < rows; ++i) {
    double x0 = x[size_t(2 * i)], x1 = x[size_t(2 * i + 1)];
    y[size_t(i)] = float(2.0 * x0 - 3.4 * x1 + 4.2 + noise * normal.next());
  }
  try {
    using mpc::plan::DType;
    mpc::io::writeNpy(dir + "/x.npy", DType::F32, {rows, 2}, x.data());
    mpc::io::writeNpy(dir + "/y.npy", DType::F32, {rows, 1}, y.data());
  } catch (const mpc::UserError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
