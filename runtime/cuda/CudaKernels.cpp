//===- runtime/cuda/CudaKernels.cpp - the CUDA kernel table -------------===//
//
// One record per op of ir/OpList.def, in the order of the op families. Each
// `prepare` reads the op's attributes and its buffers' shapes once and
// returns a closure that only enqueues work: a kernel launcher of
// runtime/cuda/kernels/, a cuBLAS call or an async device-to-device copy.
//
// matmul is cublasSgemm on row-major data through the usual swap: a
// row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so
// cuBLAS gets B first with the leading dimension of each operand being its
// row-major column count.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/Descriptors.h"
#include "runtime/cuda/kernels/Kernels.h"

#include <climits>
#include <string>

namespace mpc::runtime::cuda {

namespace {

// ---- attribute and operand helpers -------------------------------------

const plan::AttrValue *findAttr(const KernelOperands &k, const char *name) {
  auto it = k.instr->attrs.find(name);
  return it == k.instr->attrs.end() ? nullptr : &it->second;
}

double attrFloat(const KernelOperands &k, const char *name, double def) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return def;
  if (auto *d = std::get_if<double>(v)) return *d;
  if (auto *i = std::get_if<int64_t>(v)) return double(*i);
  throw RuleError(std::string("attribute '") + name + "' must be a number");
}

int64_t attrInt(const KernelOperands &k, const char *name, int64_t def) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return def;
  if (auto *i = std::get_if<int64_t>(v)) return *i;
  throw RuleError(std::string("attribute '") + name + "' must be an integer");
}

bool attrBool(const KernelOperands &k, const char *name, bool def) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return def;
  if (auto *b = std::get_if<bool>(v)) return *b;
  throw RuleError(std::string("attribute '") + name + "' must be a bool");
}

std::vector<int64_t> attrInts(const KernelOperands &k, const char *name) {
  const plan::AttrValue *v = findAttr(k, name);
  if (!v) return {};
  if (auto *l = std::get_if<std::vector<int64_t>>(v)) return *l;
  throw RuleError(std::string("attribute '") + name + "' must be a list of integers");
}

void requireArity(const KernelOperands &k, size_t lo, size_t hi) {
  size_t n = k.inputs.size();
  if (n < lo || n > hi)
    throw RuleError("expected " + std::to_string(lo) +
                    (lo == hi ? "" : " to " + std::to_string(hi)) + " operands, got " +
                    std::to_string(n));
}

void requireF32(const plan::Buffer *b) {
  if (b->dtype != plan::DType::F32)
    throw RuleError("buffer '" + b->name + "' must be f32");
}

void requireSameCount(const plan::Buffer *a, const plan::Buffer *b) {
  if (a->numElements() != b->numElements())
    throw RuleError("buffers '" + a->name + "' and '" + b->name + "' differ in size");
}

int64_t normAxis(int64_t axis, size_t rank) {
  int64_t r = int64_t(rank);
  if (axis < -r || axis >= r) throw RuleError("axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + r : axis;
}

float *f(void *p) { return static_cast<float *>(p); }
const float *cf(void *p) { return static_cast<const float *>(p); }

/// A device-to-device copy of the input into the output (a no-op when the
/// plan gave both the same memory).
Launch copyLaunch(const KernelOperands &k) {
  requireArity(k, 1, 1);
  if (k.inputs[0]->bytes != k.output->bytes) throw RuleError("input and output differ in size");
  void *dst = k.outPtr;
  const void *src = k.inPtr[0];
  size_t bytes = k.output->bytes;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    if (dst != src && bytes)
      cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  };
}

// ---- Linalg -------------------------------------------------------------

/// With an accumulator (third operand) the result is op(a) op(b) + c: beta = 1
/// on c's values, in place when the plan gives the result c's buffer.
Launch prepareMatMul(const KernelOperands &k) {
  requireArity(k, 2, 3);
  const plan::Buffer *a = k.inputs[0], *b = k.inputs[1], *c = k.output;
  for (auto *x : {a, b, c}) requireF32(x);
  if (a->shape.size() != 2 || b->shape.size() != 2 || c->shape.size() != 2)
    throw RuleError("matmul needs rank-2 buffers");
  bool ta = attrBool(k, "transpose_a", false), tb = attrBool(k, "transpose_b", false);
  int64_t m = ta ? a->shape[1] : a->shape[0], ka = ta ? a->shape[0] : a->shape[1];
  int64_t kb = tb ? b->shape[1] : b->shape[0], n = tb ? b->shape[0] : b->shape[1];
  if (ka != kb || c->shape[0] != m || c->shape[1] != n)
    throw RuleError("matmul buffer shapes do not agree");
  for (int64_t v : {m, n, ka, a->shape[1], b->shape[1]})
    if (v > INT_MAX) throw RuleError("matmul dimension exceeds cuBLAS's int range");
  const bool accumulate = k.inputs.size() == 3;
  const float *C0 = nullptr;
  if (accumulate) {
    requireF32(k.inputs[2]);
    if (k.inputs[2]->shape != c->shape) throw RuleError("matmul accumulator shape does not agree");
    C0 = cf(k.inPtr[2]);
  }
  int im = int(m), in = int(n), ik = int(ka);
  int lda = int(a->shape[1] > 0 ? a->shape[1] : 1), ldb = int(b->shape[1] > 0 ? b->shape[1] : 1);
  int ldc = in > 0 ? in : 1;
  cublasOperation_t opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const float *A = cf(k.inPtr[0]), *B = cf(k.inPtr[1]);
  float *C = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    if (im == 0 || in == 0) return;
    if (accumulate && C0 != C)
      cudaCheck(cudaMemcpyAsync(C, C0, size_t(im) * size_t(in) * 4, cudaMemcpyDeviceToDevice,
                                ctx.stream),
                "cudaMemcpyAsync");
    if (ik == 0) {
      if (!accumulate) launchFill(C, int64_t(im) * in, 0.f, ctx.stream);
      return;
    }
    const float one = 1.f, zero = 0.f;
    cublasCheck(cublasSgemm(ctx.cublas, opB, opA, in, im, ik, &one, B, ldb, A, lda,
                            accumulate ? &one : &zero, C, ldc),
                "cublasSgemm");
  };
}

// ---- Elementwise ----------------------------------------------------------

template <UnaryOp Op> Launch prepareUnary(const KernelOperands &k) {
  requireArity(k, 1, 1);
  requireF32(k.inputs[0]);
  requireF32(k.output);
  requireSameCount(k.inputs[0], k.output);
  float alpha = Op == UnaryOp::Scale ? float(attrFloat(k, "value", 1.0)) : 0.f;
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] { launchUnary(Op, x, y, n, alpha, s); };
}

template <BinaryOp Op> Launch prepareBinary(const KernelOperands &k) {
  requireArity(k, 2, 2);
  for (auto *x : {k.inputs[0], k.inputs[1], k.output}) requireF32(x);
  StridedDesc d = broadcastDesc(k.output->shape, k.inputs[0]->shape, k.inputs[1]->shape);
  const float *a = cf(k.inPtr[0]), *b = cf(k.inPtr[1]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBinary(Op, a, b, y, d, s); };
}

// ---- Reduce ----------------------------------------------------------------

ReduceDesc reduceOf(const KernelOperands &k) {
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> axes = attrInts(k, "axes");
  std::vector<bool> reduced(x->shape.size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(normAxis(a, x->shape.size()))] = true;
  return reduceDesc(x->shape, reduced);
}

int64_t reduceScratch(const KernelOperands &k) {
  ReduceDesc d = reduceOf(k);
  if (d.out.count == 1) return allReduceScratchFloats(d.red.count);
  return reduceScratchFloats(d);
}

template <bool Mean> Launch prepareReduce(const KernelOperands &k) {
  requireArity(k, 1, 1);
  requireF32(k.inputs[0]);
  ReduceDesc d = reduceOf(k);
  if (d.out.count != k.output->numElements()) throw RuleError("result size does not match axes");
  float scale = Mean ? float(1.0 / double(d.red.count)) : 1.f;
  if (Mean && d.red.count == 0) scale = NAN;
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  if (d.out.count == 1 && d.red.count > 0)
    return [=] { launchReduceAll(x, nullptr, y, d.red.count, scale, ctx.scratch, ctx.stream); };
  return [=] { launchReduceSum(x, y, d, scale, ctx.scratch, ctx.stream); };
}

Launch prepareBroadcastTo(const KernelOperands &k) {
  requireArity(k, 1, 1);
  StridedDesc d = broadcastDesc(k.output->shape, k.inputs[0]->shape);
  const uint32_t *x = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *y = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(x, y, d, s); };
}

// ---- Shape -------------------------------------------------------------------

Launch prepareTranspose(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  std::vector<int64_t> perm = attrInts(k, "perm");
  if (perm.empty())
    for (size_t i = x->shape.size(); i-- > 0;) perm.push_back(int64_t(i));
  if (perm.size() != x->shape.size()) throw RuleError("perm does not match the rank");
  for (int64_t &p : perm) p = normAxis(p, x->shape.size());
  StridedDesc d = transposeDesc(x->shape, perm);
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]);
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchGather(in, out, d, s); };
}

Launch prepareFill(const KernelOperands &k) {
  requireArity(k, 0, 0);
  requireF32(k.output);
  float value = float(attrFloat(k, "value", 0.0));
  float *y = f(k.outPtr);
  int64_t n = k.output->numElements();
  cudaStream_t s = k.ctx.stream;
  return [=] { launchFill(y, n, value, s); };
}

/// A shape seen as [outer, size, inner] around one axis (slice, concat,
/// softmax).
struct Split {
  int64_t outer = 1, size = 1, inner = 1;
};

Split splitAt(const std::vector<int64_t> &shape, int64_t axis) {
  Split s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (int64_t(i) < axis) s.outer *= shape[i];
    else if (int64_t(i) == axis) s.size = shape[i];
    else s.inner *= shape[i];
  }
  return s;
}

void requireBlockDType(const plan::Buffer *b, const plan::Buffer *out) {
  if (b->dtype != plan::DType::F32 && b->dtype != plan::DType::I32)
    throw RuleError("buffer '" + b->name + "' must be f32 or i32");
  if (b->dtype != out->dtype)
    throw RuleError("buffers '" + b->name + "' and '" + out->name + "' differ in dtype");
}

Launch prepareSlice(const KernelOperands &k) {
  requireArity(k, 1, 1);
  const plan::Buffer *x = k.inputs[0];
  requireBlockDType(x, k.output);
  if (x->shape.empty()) throw RuleError("slice needs rank >= 1");
  int64_t axis = normAxis(attrInt(k, "axis", 0), x->shape.size());
  int64_t start = attrInt(k, "start", 0), stop = attrInt(k, "stop", 0);
  Split sp = splitAt(x->shape, axis);
  if (start < 0 || start >= stop || stop > sp.size)
    throw RuleError("slice range out of bounds for buffer '" + x->name + "'");
  std::vector<int64_t> want = x->shape;
  want[size_t(axis)] = stop - start;
  if (k.output->shape != want) throw RuleError("result shape does not match the slice");
  const uint32_t *in = static_cast<const uint32_t *>(k.inPtr[0]) + start * sp.inner;
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  int64_t outer = sp.outer, row = (stop - start) * sp.inner, inRow = sp.size * sp.inner;
  cudaStream_t s = k.ctx.stream;
  return [=] { launchBlockCopy(in, out, outer, row, inRow, row, s); };
}

Launch prepareConcat(const KernelOperands &k) {
  requireArity(k, 2, 2);
  const plan::Buffer *a = k.inputs[0], *b = k.inputs[1];
  requireBlockDType(a, k.output);
  requireBlockDType(b, k.output);
  if (a->shape.empty()) throw RuleError("concat needs rank >= 1");
  int64_t axis = normAxis(attrInt(k, "axis", 0), a->shape.size());
  bool ok = a->shape.size() == b->shape.size();
  for (size_t i = 0; ok && i < a->shape.size(); ++i)
    ok = int64_t(i) == axis || a->shape[i] == b->shape[i];
  std::vector<int64_t> want = a->shape;
  if (ok) want[size_t(axis)] += b->shape[size_t(axis)];
  if (!ok || k.output->shape != want)
    throw RuleError("buffers '" + a->name + "' and '" + b->name +
                    "' do not concatenate to the result shape");
  Split sa = splitAt(a->shape, axis), sb = splitAt(b->shape, axis);
  int64_t outer = sa.outer, rowA = sa.size * sa.inner, rowB = sb.size * sb.inner;
  const uint32_t *pa = static_cast<const uint32_t *>(k.inPtr[0]);
  const uint32_t *pb = static_cast<const uint32_t *>(k.inPtr[1]);
  uint32_t *out = static_cast<uint32_t *>(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchBlockCopy(pa, out, outer, rowA, rowA, rowA + rowB, s);
    launchBlockCopy(pb, out + rowA, outer, rowB, rowB, rowA + rowB, s);
  };
}

// ---- Softmax -------------------------------------------------------------------

Split splitAxis(const KernelOperands &k) {
  const std::vector<int64_t> &shape = k.inputs[0]->shape;
  if (shape.empty()) throw RuleError("softmax needs rank >= 1");
  return splitAt(shape, normAxis(attrInt(k, "axis", -1), shape.size()));
}

template <SoftmaxKind Kind> Launch prepareSoftmax(const KernelOperands &k) {
  requireArity(k, 1, 1);
  requireF32(k.inputs[0]);
  requireSameCount(k.inputs[0], k.output);
  Split sp = splitAxis(k);
  const float *x = cf(k.inPtr[0]);
  float *y = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchSoftmax(Kind, x, y, sp.outer, sp.size, sp.inner, s); };
}

Launch prepareSoftmaxGrad(const KernelOperands &k) {
  requireArity(k, 2, 2);
  requireSameCount(k.inputs[0], k.inputs[1]);
  requireSameCount(k.inputs[0], k.output);
  Split sp = splitAxis(k);
  const float *y = cf(k.inPtr[0]), *dy = cf(k.inPtr[1]);
  float *dx = f(k.outPtr);
  cudaStream_t s = k.ctx.stream;
  return [=] { launchSoftmaxGrad(y, dy, dx, sp.outer, sp.size, sp.inner, s); };
}

// ---- Loss ------------------------------------------------------------------

int64_t mseScratch(const KernelOperands &k) {
  return allReduceScratchFloats(k.inputs[0]->numElements());
}

Launch prepareMse(const KernelOperands &k) {
  requireArity(k, 2, 2);
  requireSameCount(k.inputs[0], k.inputs[1]);
  int64_t n = k.inputs[0]->numElements();
  float scale = float(1.0 / double(n));
  const float *p = cf(k.inPtr[0]), *t = cf(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] { launchReduceAll(p, t, y, n, scale, ctx.scratch, ctx.stream); };
}

void checkLogits(const KernelOperands &k) {
  const plan::Buffer *logits = k.inputs[0], *labels = k.inputs[1];
  if (logits->shape.size() != 2 || labels->shape.size() != 1 ||
      labels->shape[0] != logits->shape[0] || labels->dtype != plan::DType::I32)
    throw RuleError("expected logits f32[N,C] and labels i32[N]");
}

int64_t crossEntropyScratch(const KernelOperands &k) {
  return crossEntropyScratchFloats(k.inputs[0]->shape.empty() ? 0 : k.inputs[0]->shape[0]);
}

Launch prepareCrossEntropy(const KernelOperands &k) {
  requireArity(k, 2, 2);
  checkLogits(k);
  int64_t rows = k.inputs[0]->shape[0], classes = k.inputs[0]->shape[1];
  const float *logits = cf(k.inPtr[0]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *y = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropy(logits, labels, y, rows, classes, ctx.scratch, ctx.errorFlag,
                              ctx.stream);
  };
}

Launch prepareCrossEntropyGrad(const KernelOperands &k) {
  requireArity(k, 3, 3);
  checkLogits(k);
  requireSameCount(k.inputs[0], k.output);
  int64_t rows = k.inputs[0]->shape[0], classes = k.inputs[0]->shape[1];
  const float *logits = cf(k.inPtr[0]), *dy = cf(k.inPtr[2]);
  const int32_t *labels = static_cast<const int32_t *>(k.inPtr[1]);
  float *dx = f(k.outPtr);
  KernelContext ctx = k.ctx;
  return [=] {
    launchSoftmaxCrossEntropyGrad(logits, labels, dy, dx, rows, classes, ctx.errorFlag,
                                  ctx.stream);
  };
}

// ---- Optimizer -----------------------------------------------------------------

/// Copies the updated parameter into the op's result when the plan gave the
/// result its own buffer.
void copyResult(const KernelOperands &k, cudaStream_t s) {
  if (k.outPtr != k.inPtr[0] && k.output->bytes)
    cudaCheck(cudaMemcpyAsync(k.outPtr, k.inPtr[0], k.output->bytes, cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync");
}

Launch prepareSgd(const KernelOperands &k) {
  requireArity(k, 2, 4);
  if (k.inputs.size() == 3) throw RuleError("sgd_update takes momentum_buf and step together");
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (i != 3) requireSameCount(k.inputs[0], k.inputs[i]);
  SgdHyper h;
  h.lr = attrFloat(k, "lr", 0.0);
  h.momentum = attrFloat(k, "momentum", 0.0);
  h.dampening = attrFloat(k, "dampening", 0.0);
  h.weightDecay = attrFloat(k, "weight_decay", 0.0);
  h.nesterov = attrBool(k, "nesterov", false);
  if (h.momentum != 0.0 && k.inputs.size() != 4)
    throw RuleError("sgd_update with momentum needs momentum_buf and step");
  bool state = k.inputs.size() == 4;
  float *p = f(k.inPtr[0]), *buf = state ? f(k.inPtr[2]) : nullptr;
  float *step = state ? f(k.inPtr[3]) : nullptr;
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchSgdUpdate(p, g, buf, step, n, h, s);
    copyResult(copy, s);
  };
}

Launch prepareAdam(const KernelOperands &k) {
  requireArity(k, 5, 5);
  for (size_t i = 1; i < 4; ++i) requireSameCount(k.inputs[0], k.inputs[i]);
  if (k.inputs[4]->numElements() != 1) throw RuleError("adam_update step must be f32[1]");
  AdamHyper h;
  h.lr = attrFloat(k, "lr", 0.0);
  h.beta1 = attrFloat(k, "beta1", 0.9);
  h.beta2 = attrFloat(k, "beta2", 0.999);
  h.eps = attrFloat(k, "eps", 1e-8);
  h.weightDecay = attrFloat(k, "weight_decay", 0.0);
  h.decoupled = attrBool(k, "decoupled", false);
  float *p = f(k.inPtr[0]), *m = f(k.inPtr[2]), *v = f(k.inPtr[3]), *step = f(k.inPtr[4]);
  const float *g = cf(k.inPtr[1]);
  int64_t n = k.inputs[0]->numElements();
  KernelOperands copy = k;
  cudaStream_t s = k.ctx.stream;
  return [=] {
    launchAdamUpdate(p, g, m, v, step, n, h, s);
    copyResult(copy, s);
  };
}

KernelRegistry<CudaKernel> buildRegistry() {
  KernelRegistry<CudaKernel> r("cuda");
  auto add = [&](const char *name, Launch (*prepare)(const KernelOperands &),
                 int64_t (*scratch)(const KernelOperands &) = nullptr) {
    r.add(name, CudaKernel{scratch, prepare});
  };
  add("matmul", prepareMatMul);
  add("add", prepareBinary<BinaryOp::Add>);
  add("sub", prepareBinary<BinaryOp::Sub>);
  add("mul", prepareBinary<BinaryOp::Mul>);
  add("div", prepareBinary<BinaryOp::Div>);
  add("neg", prepareUnary<UnaryOp::Neg>);
  add("scale", prepareUnary<UnaryOp::Scale>);
  add("relu", prepareUnary<UnaryOp::Relu>);
  add("sigmoid", prepareUnary<UnaryOp::Sigmoid>);
  add("tanh", prepareUnary<UnaryOp::Tanh>);
  add("gelu", prepareUnary<UnaryOp::Gelu>);
  add("exp", prepareUnary<UnaryOp::Exp>);
  add("log", prepareUnary<UnaryOp::Log>);
  add("relu_grad", prepareBinary<BinaryOp::ReluGrad>);
  add("gelu_grad", prepareBinary<BinaryOp::GeluGrad>);
  add("tanh_grad", prepareBinary<BinaryOp::TanhGrad>);
  add("sigmoid_grad", prepareBinary<BinaryOp::SigmoidGrad>);
  add("sum", prepareReduce<false>, reduceScratch);
  add("mean", prepareReduce<true>, reduceScratch);
  add("broadcast_to", prepareBroadcastTo);
  add("reshape", copyLaunch);
  add("transpose", prepareTranspose);
  add("fill", prepareFill);
  add("slice", prepareSlice);
  add("concat", prepareConcat);
  add("softmax", prepareSoftmax<SoftmaxKind::Softmax>);
  add("log_softmax", prepareSoftmax<SoftmaxKind::LogSoftmax>);
  add("softmax_grad", prepareSoftmaxGrad);
  add("mse_loss", prepareMse, mseScratch);
  add("softmax_cross_entropy", prepareCrossEntropy, crossEntropyScratch);
  add("softmax_cross_entropy_grad", prepareCrossEntropyGrad);
  add("copy", copyLaunch);
  add("stop_gradient", copyLaunch);
  add("sgd_update", prepareSgd);
  add("adam_update", prepareAdam);
  return r;
}

} // namespace

const KernelRegistry<CudaKernel> &cudaKernels() {
  static const KernelRegistry<CudaKernel> registry = buildRegistry();
  return registry;
}

} // namespace mpc::runtime::cuda
