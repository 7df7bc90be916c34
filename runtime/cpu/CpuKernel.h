//===- runtime/cpu/CpuKernel.h - the CPU kernel interface ---------------===//
//
// A CPU kernel is two functions: `prepare` runs once when a plan is loaded
// (checks operand dtypes and shapes against what the op needs, reads the
// attributes, precomputes strides and sizes into the instance), `run` runs
// every step with nothing left to look up. Buffer addresses are fixed at
// load, so an instance holds raw pointers into its device's arena.
//
// Kernels are plain loops in a fixed order (matmul is cblas_sgemm with one
// BLAS thread), so results do not depend on timing. Family files
// (kernels/<Family>.cpp) register their kernels with one add function each.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/KernelRegistry.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::runtime::cpu {

/// A buffer as a kernel sees it.
struct TensorArg {
  void *data = nullptr;
  plan::DType dtype = plan::DType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 1;

  float *f() const { return static_cast<float *>(data); }
  int32_t *i() const { return static_cast<int32_t *>(data); }
  int64_t rank() const { return int64_t(shape.size()); }
};

struct KernelInstance;
/// Checks and precomputes; throws RuleError with a message naming the
/// mismatch ("operand 1 must be i32, got f32").
using PrepareFn = void (*)(KernelInstance &k);
/// Executes; may throw RuleError on bad data (a label out of range).
using RunFn = void (*)(const KernelInstance &k);

struct CpuKernel {
  PrepareFn prepare = nullptr; ///< may be null: nothing to check
  RunFn run = nullptr;
  int minInputs = 1;
  int maxInputs = 1;
};

/// One resolved kernel instruction.
struct KernelInstance {
  RunFn run = nullptr;
  std::vector<TensorArg> in;
  TensorArg out;
  const plan::AttrMap *attrs = nullptr;
  // Filled by prepare:
  std::vector<int64_t> ints; ///< sizes/strides, meaning per kernel
  std::vector<std::vector<int64_t>> strides; ///< per input, broadcast strides over out
  double scalar = 0;         ///< a float attribute (scale value, fill value)
  std::vector<double> reals; ///< several float attributes (optimizer hyper-parameters)
  int64_t outer = 1, axis = 1, inner = 1; ///< reductions/softmax: [outer, axis, inner]
  mutable std::vector<double> scratch; ///< per-instance work space (reductions)
};

using CpuKernelRegistry = KernelRegistry<CpuKernel>;

/// Every CPU kernel.
const CpuKernelRegistry &cpuKernels();

// Family registration functions, one per kernels/<Family>.cpp.
void addElementwiseKernels(CpuKernelRegistry &r);
void addMatMulKernels(CpuKernelRegistry &r);
void addReduceKernels(CpuKernelRegistry &r);
void addShapeKernels(CpuKernelRegistry &r);
void addSoftmaxKernels(CpuKernelRegistry &r);
void addLossKernels(CpuKernelRegistry &r);
void addDeviceKernels(CpuKernelRegistry &r);
void addOptimizerKernels(CpuKernelRegistry &r);

// Attribute and operand helpers shared by the family files (throw RuleError).
bool attrBool(const KernelInstance &k, const std::string &name, bool dflt);
int64_t attrInt(const KernelInstance &k, const std::string &name, int64_t dflt);
double attrFloat(const KernelInstance &k, const std::string &name, double dflt);
std::vector<int64_t> attrInts(const KernelInstance &k, const std::string &name,
                              const std::vector<int64_t> &dflt);
bool hasAttr(const KernelInstance &k, const std::string &name);
void requireDType(const TensorArg &t, plan::DType dt, const std::string &what);
void requireSameShape(const TensorArg &a, const TensorArg &b, const std::string &what);
std::string shapeStr(const std::vector<int64_t> &shape);

/// Row-major strides of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);
/// Strides of `in` viewed with NumPy broadcasting over `out` (0 on broadcast
/// axes); throws RuleError when `in` does not broadcast to `out`.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out);

} // namespace mpc::runtime::cpu
