//===- runtime/cpu/CpuKernel.cpp - CPU kernel table and shared helpers --===//
//
// Builds the CPU kernel registry from the family files, once, on first use
// (explicit calls, no static constructors), and holds the attribute and
// shape helpers the family files share.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernel.h"

#include "support/Error.h"

namespace mpc::runtime::cpu {

const CpuKernelRegistry &cpuKernels() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r("cpu");
    addElementwiseKernels(r);
    addMatMulKernels(r);
    addReduceKernels(r);
    addShapeKernels(r);
    addSoftmaxKernels(r);
    addLossKernels(r);
    addDeviceKernels(r);
    addOptimizerKernels(r);
    return r;
  }();
  return registry;
}

namespace {
const plan::AttrValue *findAttr(const KernelInstance &k, const std::string &name) {
  if (!k.attrs) return nullptr;
  auto it = k.attrs->find(name);
  return it == k.attrs->end() ? nullptr : &it->second;
}
[[noreturn]] void badAttr(const std::string &name, const char *want) {
  throw RuleError("attribute '" + name + "' must be " + want);
}
} // namespace

bool hasAttr(const KernelInstance &k, const std::string &name) {
  return findAttr(k, name) != nullptr;
}

bool attrBool(const KernelInstance &k, const std::string &name, bool dflt) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return dflt;
  if (const bool *b = std::get_if<bool>(v)) return *b;
  badAttr(name, "a bool");
}

int64_t attrInt(const KernelInstance &k, const std::string &name, int64_t dflt) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return dflt;
  if (const int64_t *i = std::get_if<int64_t>(v)) return *i;
  badAttr(name, "an integer");
}

double attrFloat(const KernelInstance &k, const std::string &name, double dflt) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return dflt;
  if (const double *d = std::get_if<double>(v)) return *d;
  if (const int64_t *i = std::get_if<int64_t>(v)) return double(*i);
  badAttr(name, "a number");
}

std::vector<int64_t> attrInts(const KernelInstance &k, const std::string &name,
                              const std::vector<int64_t> &dflt) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return dflt;
  if (const auto *l = std::get_if<std::vector<int64_t>>(v)) return *l;
  badAttr(name, "a list of integers");
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

static std::string typeStr(const TensorArg &t) {
  return std::string(plan::dtypeName(t.dtype)) + shapeStr(t.shape);
}

void requireDType(const TensorArg &t, plan::DType dt, const std::string &what) {
  if (t.dtype != dt)
    throw RuleError(what + " must be " + plan::dtypeName(dt) + ", got " + typeStr(t));
}

void requireSameShape(const TensorArg &a, const TensorArg &b, const std::string &what) {
  if (a.shape != b.shape)
    throw RuleError(what + ": shape mismatch: " + typeStr(a) + " x " + typeStr(b));
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &in,
                                      const std::vector<int64_t> &out) {
  if (in.size() > out.size())
    throw RuleError("cannot broadcast " + shapeStr(in) + " to " + shapeStr(out));
  std::vector<int64_t> cs = contiguousStrides(in);
  std::vector<int64_t> s(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i]) s[lead + i] = in[i] == 1 ? 0 : cs[i];
    else if (in[i] == 1) s[lead + i] = 0;
    else throw RuleError("cannot broadcast " + shapeStr(in) + " to " + shapeStr(out));
  }
  return s;
}

} // namespace mpc::runtime::cpu
