//===- examples/regression3/Report.cpp - the learned function -----------===//
//
// regression3-report TRAINED.safetensors
//
// The seed model is three affine layers with no nonlinearity, so the trained
// network is one affine function of (x0, x1). This composes the six trained
// parameters into that function,
//   y = x · (w0 w1 w2) + ((b0 w1 + b1) w2 + b2),
// and prints its coefficients next to the ones the data was generated with
// (y = 2·x0 − 3.4·x1 + 4.2 + noise).
//
//===----------------------------------------------------------------------===//
#include "io/Safetensors.h"
#include "support/Error.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <vector>

namespace {

using Matrix = std::vector<std::vector<double>>;

Matrix toMatrix(const mpc::io::NamedTensor &t, size_t rows, size_t cols,
                const std::string &file) {
  if (t.dtype != mpc::plan::DType::F32 || t.data.size() != rows * cols * 4)
    throw mpc::UserError(file, t.name, "expected f32 with " + std::to_string(rows * cols) +
                                           " elements");
  Matrix m(rows, std::vector<double>(cols));
  for (size_t i = 0; i < rows * cols; ++i) {
    float f;
    std::memcpy(&f, t.data.data() + 4 * i, 4);
    m[i / cols][i % cols] = f;
  }
  return m;
}

Matrix matmul(const Matrix &a, const Matrix &b) {
  Matrix c(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

Matrix add(Matrix a, const Matrix &b) {
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) a[i][j] += b[i][j];
  return a;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: regression3-report TRAINED.safetensors\n";
    return 1;
  }
  try {
    std::string file = argv[1];
    std::map<std::string, mpc::io::NamedTensor> byName;
    for (auto &t : mpc::io::readSafetensors(file)) byName[t.name] = t;
    auto get = [&](const std::string &name, size_t rows, size_t cols) {
      auto it = byName.find(name);
      if (it == byName.end()) throw mpc::UserError(file, "", "no tensor '" + name + "'");
      return toMatrix(it->second, rows, cols, file);
    };
    Matrix w0 = get("w0", 2, 2), w1 = get("w1", 2, 2), w2 = get("w2", 2, 1);
    Matrix b0 = get("b0", 1, 2), b1 = get("b1", 1, 2), b2 = get("b2", 1, 1);
    Matrix w = matmul(matmul(w0, w1), w2);
    Matrix b = add(matmul(add(matmul(b0, w1), b1), w2), b2);
    std::printf("learned function: y = %.4f*x0 + %.4f*x1 + %.4f\n", w[0][0], w[1][0], b[0][0]);
    std::printf("generating function: y = 2.0000*x0 + -3.4000*x1 + 4.2000 (+ noise)\n");
  } catch (const mpc::UserError &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
