//===- frontend/onnx/OpMapping.cpp - one table entry per ONNX op -----------===//
//
// The table is at the bottom; docs/import-onnx.md lists it. Each mapping
// reads the attributes with ONNX's defaults (for the model's opset where
// they changed) and refuses, naming the attribute, what mpc cannot run.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/OpMapping.h"

#include "ops/Type.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace mpc::frontend::onnx {

using json = nlohmann::ordered_json;

namespace {

int64_t axisOf(MapContext &c, int64_t axis, int64_t rank, const char *what = "axis") {
  std::optional<int64_t> a = ops::normalizeAxis(axis, rank);
  if (!a)
    c.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(rank));
  return *a;
}

/// Data input i, f32.
Value floatData(MapContext &c, size_t i) {
  Value v = c.data(i);
  if (v.i32) c.fail("input " + std::to_string(i) + " is an integer tensor; this op takes float");
  return v;
}

/// A constant input read as integers (shapes, axes, indices).
std::vector<int64_t> constInts(MapContext &c, size_t i, const char *what) {
  const Const *k = c.constant(i);
  if (!k)
    c.fail(std::string(what) + " (input " + std::to_string(i) +
           ") must be known at import (a constant or computed from shapes)");
  std::vector<int64_t> v;
  try {
    for (double x : k->values) v.push_back(toInt(x));
  } catch (const RuleError &e) {
    c.fail(std::string(what) + ": " + e.what());
  }
  return v;
}

/// Axes from the attribute (older opsets) or the input (newer ones).
std::vector<int64_t> axesOf(MapContext &c, int64_t inputFrom, size_t input) {
  if (c.opset() >= inputFrom) return c.has(input) ? constInts(c, input, "axes") : std::vector<int64_t>{};
  return c.attrs().getInts("axes", {});
}

Value reshape(MapContext &c, const std::string &name, const Value &x, const Shape &s) {
  return c.emit(name, "reshape", {x}, json{{"shape", s}}, s, x.i32);
}

Shape broadcast(MapContext &c, const Shape &a, const Shape &b) {
  std::optional<Shape> s = ops::broadcastShapes(a, b);
  if (!s) c.fail("operand shapes " + shapeText(a) + " and " + shapeText(b) + " do not broadcast");
  return *s;
}

std::vector<Value> one(Value v) { return {std::move(v)}; }

std::vector<Value> unary(MapContext &c, const char *op) {
  Value x = floatData(c, 0);
  return one(c.emit(c.outName(0), op, {x}, json::object(), x.shape));
}

std::vector<Value> binary(MapContext &c, const char *op) {
  if (c.opset() < 7 && c.attrs().has("broadcast")) c.fail("legacy broadcast attribute");
  Value a = floatData(c, 0), b = floatData(c, 1);
  return one(c.emit(c.outName(0), op, {a, b}, json::object(), broadcast(c, a.shape, b.shape)));
}

std::vector<Value> mapIdentity(MapContext &c) { return one(c.data(0)); }

std::vector<Value> mapGelu(MapContext &c) {
  std::string approx = c.attrs().getString("approximate", "none");
  if (approx != "none" && approx != "tanh") c.fail("approximate must be none or tanh");
  Value x = floatData(c, 0);
  return one(c.emit(c.outName(0), "gelu", {x}, json{{"approximate", approx}}, x.shape));
}

std::vector<Value> mapLeakyRelu(MapContext &c) {
  double alpha = c.attrs().getFloat("alpha", 0.01);
  Value x = floatData(c, 0);
  // relu(x) - alpha * relu(-x): x where x >= 0, alpha * x below.
  Value pos = c.emit(c.tmpName("pos"), "relu", {x}, json::object(), x.shape);
  Value neg = c.emit(c.tmpName("neg"), "neg", {x}, json::object(), x.shape);
  Value rneg = c.emit(c.tmpName("relu_neg"), "relu", {neg}, json::object(), x.shape);
  Value scaled = c.emit(c.tmpName("scaled"), "scale", {rneg}, json{{"value", alpha}}, x.shape);
  return one(c.emit(c.outName(0), "sub", {pos, scaled}, json::object(), x.shape));
}

/// A scalar constant, for the compositions below.
Value scalar(MapContext &c, const std::string &suffix, double v) {
  return c.emit(c.tmpName(suffix), "fill", {}, json{{"value", v}, {"shape", json::array()}}, {});
}

Value op1(MapContext &c, const std::string &name, const char *op, const Value &x, json attrs = json::object()) {
  return c.emit(name, op, {x}, std::move(attrs), x.shape);
}

Value op2(MapContext &c, const std::string &name, const char *op, const Value &a, const Value &b) {
  return c.emit(name, op, {a, b}, json::object(), broadcast(c, a.shape, b.shape));
}

// Activations composed of mpc ops (each differentiable, so training needs
// no rule of its own). Where the input is in the range an op passes
// through, the result is x itself, bit for bit.

/// |x| = relu(x) + relu(-x).
Value absOf(MapContext &c, const std::string &name, const Value &x) {
  Value pos = op1(c, c.tmpName("abs_pos"), "relu", x);
  Value neg = op1(c, c.tmpName("abs_neg"), "relu", op1(c, c.tmpName("abs_negx"), "neg", x));
  return op2(c, name, "add", pos, neg);
}

/// clip(x, lo, hi) = x - relu(x - hi) + relu(lo - x), either bound optional.
Value clipOf(MapContext &c, const std::string &name, Value x, std::optional<double> lo,
             std::optional<double> hi) {
  if (hi) {
    Value over = op1(c, c.tmpName("over"), "relu", op2(c, c.tmpName("minus_hi"), "sub", x, scalar(c, "hi", *hi)));
    x = op2(c, lo ? c.tmpName("clipped_hi") : name, "sub", x, over);
  }
  if (lo) {
    Value under = op1(c, c.tmpName("under"), "relu", op2(c, c.tmpName("lo_minus"), "sub", scalar(c, "lo", *lo), x));
    x = op2(c, name, "add", x, under);
  }
  if (!lo && !hi) return op1(c, name, "reshape", x, json{{"shape", x.shape}});
  return x;
}

/// relu(x) + alpha * (exp(min(x, 0) / scale) - 1), min(x, 0) = -relu(-x):
/// ELU (scale 1), CELU (scale alpha).
Value expLinear(MapContext &c, const std::string &name, const Value &x, double alpha, double scale) {
  Value pos = op1(c, c.tmpName("pos"), "relu", x);
  Value negPart = op1(c, c.tmpName("neg_part"), "neg",
                      op1(c, c.tmpName("relu_neg"), "relu", op1(c, c.tmpName("negx"), "neg", x)));
  if (scale != 1.0) negPart = op1(c, c.tmpName("scaled_in"), "scale", negPart, json{{"value", 1.0 / scale}});
  Value em1 = op2(c, c.tmpName("expm1"), "sub", op1(c, c.tmpName("exp"), "exp", negPart), scalar(c, "one", 1.0));
  return op2(c, name, "add", pos, op1(c, c.tmpName("alpha"), "scale", em1, json{{"value", alpha}}));
}

std::vector<Value> mapAbs(MapContext &c) { return one(absOf(c, c.outName(0), floatData(c, 0))); }

std::vector<Value> mapReciprocal(MapContext &c) {
  Value x = floatData(c, 0);
  return one(op2(c, c.outName(0), "div", scalar(c, "one", 1.0), x));
}

std::vector<Value> mapClip(MapContext &c) {
  Value x = floatData(c, 0);
  std::optional<double> lo, hi;
  if (c.opset() < 11) {
    lo = c.attrs().getFloat("min", -3.4028234663852886e38);
    hi = c.attrs().getFloat("max", 3.4028234663852886e38);
  } else {
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!c.has(i)) continue;
      const Const *b = c.constant(i);
      if (!b || !b->scalarLike()) c.fail("min and max must be constants");
      (i == 1 ? lo : hi) = b->values[0];
    }
  }
  return one(clipOf(c, c.outName(0), x, lo, hi));
}

std::vector<Value> mapElu(MapContext &c) {
  return one(expLinear(c, c.outName(0), floatData(c, 0), c.attrs().getFloat("alpha", 1.0), 1.0));
}

std::vector<Value> mapCelu(MapContext &c) {
  double alpha = c.attrs().getFloat("alpha", 1.0);
  if (alpha == 0) c.fail("alpha must not be 0");
  return one(expLinear(c, c.outName(0), floatData(c, 0), alpha, alpha));
}

std::vector<Value> mapSelu(MapContext &c) {
  double alpha = c.attrs().getFloat("alpha", 1.67326319217681884765625);
  double gamma = c.attrs().getFloat("gamma", 1.05070102214813232421875);
  Value e = expLinear(c, c.tmpName("elu"), floatData(c, 0), alpha, 1.0);
  return one(op1(c, c.outName(0), "scale", e, json{{"value", gamma}}));
}

/// max(0, min(1, alpha x + beta)); HardSwish is x times it (alpha 1/6).
Value hardSigmoidOf(MapContext &c, const std::string &name, const Value &x, double alpha, double beta) {
  Value y = op2(c, c.tmpName("affine"), "add", op1(c, c.tmpName("alpha_x"), "scale", x, json{{"value", alpha}}),
                scalar(c, "beta", beta));
  return clipOf(c, name, y, 0.0, 1.0);
}

std::vector<Value> mapHardSigmoid(MapContext &c) {
  return one(hardSigmoidOf(c, c.outName(0), floatData(c, 0), c.attrs().getFloat("alpha", 0.2),
                           c.attrs().getFloat("beta", 0.5)));
}

std::vector<Value> mapHardSwish(MapContext &c) {
  Value x = floatData(c, 0);
  return one(op2(c, c.outName(0), "mul", x, hardSigmoidOf(c, c.tmpName("hard_sigmoid"), x, 1.0 / 6, 0.5)));
}

/// relu(x) - slope * relu(-x), slope broadcast to x.
std::vector<Value> mapPRelu(MapContext &c) {
  Value x = floatData(c, 0), slope = floatData(c, 1);
  Value pos = op1(c, c.tmpName("pos"), "relu", x);
  Value neg = op1(c, c.tmpName("relu_neg"), "relu", op1(c, c.tmpName("negx"), "neg", x));
  Value scaled = op2(c, c.tmpName("scaled"), "mul", neg, slope);
  if (scaled.shape != x.shape) c.fail("slope " + shapeText(slope.shape) + " must broadcast to the input");
  return one(op2(c, c.outName(0), "sub", pos, scaled));
}

/// x / (1 + |x|).
std::vector<Value> mapSoftsign(MapContext &c) {
  Value x = floatData(c, 0);
  Value den = op2(c, c.tmpName("den"), "add", scalar(c, "one", 1.0), absOf(c, c.tmpName("abs"), x));
  return one(op2(c, c.outName(0), "div", x, den));
}

/// Sum and Mean of any number of inputs, broadcasting, added in order.
std::vector<Value> mapVariadic(MapContext &c, bool mean) {
  std::vector<Value> in;
  for (int i = 0; i < c.node().input_size(); ++i)
    if (c.has(size_t(i))) in.push_back(floatData(c, size_t(i)));
  if (in.empty()) c.fail("no inputs");
  Value acc = in[0];
  for (size_t i = 1; i < in.size(); ++i)
    acc = op2(c, i + 1 == in.size() && !mean ? c.outName(0) : c.tmpName("sum" + std::to_string(i)),
              "add", acc, in[i]);
  if (mean && in.size() > 1)
    return one(op1(c, c.outName(0), "scale", acc, json{{"value", 1.0 / double(in.size())}}));
  if (in.size() == 1) return one(op1(c, c.outName(0), "reshape", acc, json{{"shape", acc.shape}}));
  return one(acc);
}

std::vector<Value> mapTile(MapContext &c) {
  Value x = c.data(0);
  std::vector<int64_t> repeats = constInts(c, 1, "repeats");
  if (repeats.size() != x.shape.size()) c.fail("repeats must give one count per axis");
  std::vector<size_t> axes;
  for (size_t k = 0; k < repeats.size(); ++k) {
    if (repeats[k] < 1) c.fail("repeats must be positive");
    if (repeats[k] > 1) axes.push_back(k);
  }
  if (axes.empty()) return one(op1(c, c.outName(0), "reshape", x, json{{"shape", x.shape}}));
  for (size_t j = 0; j < axes.size(); ++j) {
    size_t k = axes[j];
    Shape s = x.shape;
    s[k] *= repeats[k];
    std::vector<Value> copies(size_t(repeats[k]), x);
    x = c.emit(j + 1 == axes.size() ? c.outName(0) : c.tmpName("axis" + std::to_string(k)), "concat",
               copies, json{{"axis", k}}, s, x.i32);
  }
  return one(x);
}

std::vector<Value> mapGlobalMaxPool(MapContext &c) {
  Value x = floatData(c, 0);
  if (x.shape.size() != 4) c.fail("only [N, C, H, W] inputs are supported");
  std::vector<int64_t> k = {x.shape[2], x.shape[3]};
  return one(c.emit(c.outName(0), "max_pool2d", {x}, json{{"kernel", k}, {"stride", k}},
                    {x.shape[0], x.shape[1], 1, 1}));
}

/// The axes (sorted, non-negative), keepdims and result shape of a Reduce*
/// node over x; `noop` when its axes are empty and noop_with_empty_axes
/// is set. Its axes are an input from opset `axesInputFrom` on.
struct Reduction {
  std::vector<int64_t> axes;
  bool keep = true, noop = false;
  Shape shape;
};

Reduction reductionOf(MapContext &c, const Shape &x, int64_t axesInputFrom) {
  Reduction r;
  int64_t rank = int64_t(x.size());
  r.axes = axesOf(c, axesInputFrom, 1);
  r.keep = c.attrs().getBool("keepdims", 1);
  if (r.axes.empty()) {
    r.noop = c.attrs().getBool("noop_with_empty_axes", 0);
    for (int64_t k = 0; k < rank; ++k) r.axes.push_back(k);
  }
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t &ax : r.axes) {
    ax = axisOf(c, ax, rank);
    reduced[size_t(ax)] = true;
  }
  std::sort(r.axes.begin(), r.axes.end());
  for (int64_t k = 0; k < rank; ++k)
    if (!reduced[size_t(k)]) r.shape.push_back(x[size_t(k)]);
    else if (r.keep) r.shape.push_back(1);
  return r;
}

/// ReduceSumSquare, ReduceL1, ReduceLogSumExp over mpc's sum.
std::vector<Value> mapReduceComposed(MapContext &c, const char *kind) {
  Value x = floatData(c, 0);
  std::string k = kind;
  Reduction r = reductionOf(c, x.shape, 18);
  if (r.noop) c.fail("noop_with_empty_axes is not supported");
  Value in = k == "sumsquare" ? op2(c, c.tmpName("square"), "mul", x, x)
             : k == "l1"      ? absOf(c, c.tmpName("abs"), x)
                              : op1(c, c.tmpName("exp"), "exp", x);
  bool logOf = k == "logsumexp";
  Value sum = c.emit(logOf ? c.tmpName("sum") : c.outName(0), "sum", {in},
                     json{{"axes", r.axes}, {"keepdims", r.keep}}, r.shape);
  return one(logOf ? op1(c, c.outName(0), "log", sum) : sum);
}

std::vector<Value> mapPow(MapContext &c) {
  const Const *e = c.constant(1);
  if (!e || !e->scalarLike() || e->values[0] != 2.0)
    c.fail("only a constant exponent 2 is supported (x * x) outside a layer norm");
  Value x = floatData(c, 0);
  return one(c.emit(c.outName(0), "mul", {x, x}, json::object(), x.shape));
}

/// a (rank >= 1) x b (rank >= 1), numpy.matmul's rules for rank 1.
Value matmul(MapContext &c, const std::string &name, Value a, Value b, bool ta, bool tb) {
  bool vecA = a.shape.size() == 1, vecB = b.shape.size() == 1;
  if (vecA) a = reshape(c, c.tmpName("a2d"), a, {1, a.shape[0]});
  if (vecB) b = reshape(c, c.tmpName("b2d"), b, {b.shape[0], 1});
  Shape sa = a.shape, sb = b.shape;
  size_t ra = sa.size(), rb = sb.size();
  int64_t m = ta ? sa[ra - 1] : sa[ra - 2], ka = ta ? sa[ra - 2] : sa[ra - 1];
  int64_t kb = tb ? sb[rb - 1] : sb[rb - 2], n = tb ? sb[rb - 2] : sb[rb - 1];
  if (ka != kb) c.fail("inner dimensions differ: " + shapeText(sa) + " x " + shapeText(sb));
  Shape batch = broadcast(c, Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  Shape out = batch;
  out.push_back(m);
  out.push_back(n);
  json attrs = json::object();
  if (ta) attrs["transpose_a"] = true;
  if (tb) attrs["transpose_b"] = true;
  if (!vecA && !vecB) return c.emit(name, "matmul", {a, b}, attrs, out);
  Value r = c.emit(name + "/2d", "matmul", {a, b}, attrs, out);
  Shape s(out.begin(), out.end() - 2);
  if (!vecA) s.push_back(m);
  if (!vecB) s.push_back(n);
  return reshape(c, name, r, s);
}

std::vector<Value> mapMatMul(MapContext &c) {
  return one(matmul(c, c.outName(0), floatData(c, 0), floatData(c, 1), false, false));
}

std::vector<Value> mapGemm(MapContext &c) {
  const Attrs &a = c.attrs();
  double alpha = a.getFloat("alpha", 1.0), beta = a.getFloat("beta", 1.0);
  bool ta = a.getBool("transA", 0), tb = a.getBool("transB", 0);
  Value A = floatData(c, 0), B = floatData(c, 1);
  if (A.shape.size() != 2 || B.shape.size() != 2) c.fail("A and B must be matrices");
  bool bias = c.has(2) && beta != 0;
  std::string productName = bias || alpha != 1.0 ? c.tmpName("matmul") : c.outName(0);
  Value y = matmul(c, productName, A, B, ta, tb);
  if (alpha != 1.0)
    y = c.emit(bias ? c.tmpName("alpha") : c.outName(0), "scale", {y}, json{{"value", alpha}}, y.shape);
  if (!bias) return one(y);
  Value C = floatData(c, 2);
  if (beta != 1.0) C = c.emit(c.tmpName("beta"), "scale", {C}, json{{"value", beta}}, C.shape);
  return one(c.emit(c.outName(0), "add", {y, C}, json::object(), broadcast(c, y.shape, C.shape)));
}

/// Strides, dilations and kernel sizes are at least 1.
void requirePositive(MapContext &c, const std::vector<int64_t> &v, const char *what) {
  for (int64_t x : v)
    if (x < 1) c.fail(std::string(what) + " " + shapeText(v) + " must be at least 1");
}

/// Symmetric pads of a 2-d window op: [top, left] from ONNX's
/// [top, left, bottom, right] or auto_pad.
std::vector<int64_t> pads2d(MapContext &c, const Shape &in, const std::vector<int64_t> &kernel,
                            const std::vector<int64_t> &stride, const std::vector<int64_t> &dilation) {
  const Attrs &a = c.attrs();
  requirePositive(c, kernel, "kernel_shape");
  requirePositive(c, stride, "strides");
  requirePositive(c, dilation, "dilations");
  if (stride.size() != 2 || dilation.size() != 2 || kernel.size() != 2)
    c.fail("kernel_shape, strides and dilations must have 2 values for a 2-d window");
  std::string autoPad = a.getString("auto_pad", "NOTSET");
  std::vector<int64_t> p = a.getInts("pads", {0, 0, 0, 0});
  if (autoPad == "VALID") p = {0, 0, 0, 0};
  else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    p.assign(4, 0);
    for (size_t k = 0; k < 2; ++k) {
      int64_t size = in[2 + k], out = (size + stride[k] - 1) / stride[k];
      int64_t total = std::max<int64_t>((out - 1) * stride[k] + (kernel[k] - 1) * dilation[k] + 1 - size, 0);
      p[k] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      p[k + 2] = total - p[k];
    }
  } else if (autoPad != "NOTSET") {
    c.fail("auto_pad " + quoteName(autoPad) + " is not supported");
  }
  if (p.size() != 4) c.fail("pads must have 4 values for a 2-d window");
  for (int64_t v : p)
    if (v < 0) c.fail("pads " + shapeText(p) + " must not be negative");
  if (p[0] != p[2] || p[1] != p[3])
    c.fail("asymmetric pads " + shapeText(p) + " are not supported (mpc pads both sides equally)");
  return {p[0], p[1]};
}

std::vector<Value> mapConv(MapContext &c) {
  const Attrs &a = c.attrs();
  Value x = floatData(c, 0), w = floatData(c, 1);
  bool oneD = x.shape.size() == 3;
  if (x.shape.size() != 4 && !oneD) c.fail("only 1-d and 2-d convolutions are supported");
  if (w.shape.size() != x.shape.size()) c.fail("weight rank differs from the input's");
  std::vector<int64_t> stride = a.getInts("strides", oneD ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 1});
  std::vector<int64_t> dilation = a.getInts("dilations", oneD ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 1});
  int64_t groups = a.getInt("group", 1);
  if (oneD) {
    // [N, C, L] as [N, C, 1, L].
    std::vector<int64_t> p = a.getInts("pads", {0, 0});
    if (a.getString("auto_pad", "NOTSET") != "NOTSET") c.fail("auto_pad is supported for 2-d only");
    if (p.size() != 2 || p[0] != p[1]) c.fail("asymmetric pads are not supported");
    x = reshape(c, c.tmpName("x2d"), x, {x.shape[0], x.shape[1], 1, x.shape[2]});
    w = reshape(c, c.tmpName("w2d"), w, {w.shape[0], w.shape[1], 1, w.shape[2]});
    if (stride.size() != 1 || dilation.size() != 1) c.fail("strides and dilations must have 1 value");
    requirePositive(c, stride, "strides");
    requirePositive(c, dilation, "dilations");
    if (p[0] < 0) c.fail("pads must not be negative");
    stride = {1, stride.at(0)};
    dilation = {1, dilation.at(0)};
    std::vector<Value> in = {x, w};
    if (c.has(2)) in.push_back(floatData(c, 2));
    int64_t l = (x.shape[3] + 2 * p[0] - dilation[1] * (w.shape[3] - 1) - 1) / stride[1] + 1;
    Shape out = {x.shape[0], w.shape[0], 1, l};
    json attrs = {{"stride", stride}, {"padding", {0, p[0]}}, {"dilation", dilation}, {"groups", groups}};
    Value y = c.emit(c.tmpName("conv2d"), "conv2d", in, attrs, out);
    return one(reshape(c, c.outName(0), y, {out[0], out[1], out[3]}));
  }
  std::vector<int64_t> kernel = {w.shape[2], w.shape[3]};
  if (a.has("kernel_shape") && a.getInts("kernel_shape", {}) != kernel)
    c.fail("kernel_shape differs from the weight's");
  std::vector<int64_t> pad = pads2d(c, x.shape, kernel, stride, dilation);
  std::vector<Value> in = {x, w};
  if (c.has(2)) in.push_back(floatData(c, 2));
  Shape out = {x.shape[0], w.shape[0], 0, 0};
  for (size_t k = 0; k < 2; ++k)
    out[2 + k] = (x.shape[2 + k] + 2 * pad[k] - dilation[k] * (kernel[k] - 1) - 1) / stride[k] + 1;
  json attrs = {{"stride", stride}, {"padding", pad}, {"dilation", dilation}, {"groups", groups}};
  return one(c.emit(c.outName(0), "conv2d", in, attrs, out));
}

std::vector<Value> mapPool(MapContext &c, bool max) {
  const Attrs &a = c.attrs();
  Value x = floatData(c, 0);
  if (x.shape.size() != 4) c.fail("only 2-d pooling (an [N, C, H, W] input) is supported");
  std::vector<int64_t> kernel = a.getInts("kernel_shape", {});
  if (kernel.size() != 2) c.fail("kernel_shape must have 2 values");
  std::vector<int64_t> stride = a.getInts("strides", {1, 1});
  std::vector<int64_t> dilation = a.getInts("dilations", {1, 1});
  if (dilation != std::vector<int64_t>{1, 1}) c.fail("dilations other than 1 are not supported");
  if (a.getInt("storage_order", 0) != 0) c.fail("storage_order 1 is not supported");
  bool ceil = a.getBool("ceil_mode", 0);
  std::vector<int64_t> pad = pads2d(c, x.shape, kernel, stride, dilation);
  Shape out = {x.shape[0], x.shape[1], 0, 0};
  for (size_t k = 0; k < 2; ++k) {
    int64_t span = x.shape[2 + k] + 2 * pad[k] - kernel[k];
    if (span < 0) c.fail("the kernel " + shapeText(kernel) + " is larger than the padded input");
    int64_t o = (ceil ? (span + stride[k] - 1) / stride[k] : span / stride[k]) + 1;
    // mpc pools as PyTorch does: a last window that would start in the
    // padding is dropped. ONNX before opset 19 keeps it.
    if (ceil && (o - 1) * stride[k] >= x.shape[2 + k] + pad[k])
      c.fail("ceil_mode: ONNX's output size " + std::to_string(o) + " along axis " +
             std::to_string(2 + k) + " counts a window that starts in the padding, which mpc "
             "(as PyTorch) drops");
    out[2 + k] = o;
  }
  json attrs = {{"kernel", kernel}, {"stride", stride}, {"padding", pad}, {"ceil_mode", ceil}};
  if (!max) attrs["count_include_pad"] = a.getBool("count_include_pad", 0);
  return one(c.emit(c.outName(0), max ? "max_pool2d" : "avg_pool2d", {x}, attrs, out));
}

std::vector<Value> mapGlobalAveragePool(MapContext &c) {
  Value x = floatData(c, 0);
  if (x.shape.size() != 4) c.fail("only [N, C, H, W] inputs are supported");
  return one(c.emit(c.outName(0), "global_avg_pool2d", {x}, json::object(),
                    {x.shape[0], x.shape[1], 1, 1}));
}

std::vector<Value> mapBatchNormalization(MapContext &c) {
  const Attrs &a = c.attrs();
  if (c.opset() < 9 && a.getInt("spatial", 1) != 1) c.fail("spatial 0 is not supported");
  Value x = floatData(c, 0);
  if (x.shape.size() < 2) c.fail("input must have a channel axis");
  Value gamma = floatData(c, 1), beta = floatData(c, 2);
  std::string mean = c.runningStat(3), var = c.runningStat(4);
  json attrs = {{"eps", a.getFloat("epsilon", 1e-5)},
                {"momentum", a.getFloat("momentum", 0.9)},
                {"axis", 1},
                {"use_global_stats", !c.training()},
                {"running_mean", mean},
                {"running_var", var}};
  return one(c.emit(c.outName(0), "batch_norm", {x, gamma, beta}, attrs, x.shape));
}

std::vector<Value> mapLayerNormalization(MapContext &c) {
  const Attrs &a = c.attrs();
  Value x = floatData(c, 0);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = axisOf(c, a.getInt("axis", -1), rank);
  if (a.getInt("stash_type", 1) != 1) c.fail("stash_type other than float is not supported");
  // Over the axes from `axis` on: mpc's layer_norm over the last axis of x
  // seen as [outer, inner], then back.
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  int64_t d = shapeProduct(normalized);
  auto vector = [&](size_t i, const char *name, double dflt) {
    if (!c.has(i))
      return c.emit(c.tmpName(name), "fill", {}, json{{"value", dflt}, {"shape", {d}}}, {d});
    Value v = floatData(c, i);
    if (v.shape != normalized && v.shape != Shape{d})
      c.fail(std::string(name) + " must have the normalised axes' shape " + shapeText(normalized));
    return v.shape == Shape{d} ? v : reshape(c, c.tmpName(std::string(name) + "1d"), v, {d});
  };
  Value gamma = vector(1, "scale", 1.0), beta = vector(2, "bias", 0.0);
  json attrs = {{"eps", a.getFloat("epsilon", 1e-5)}};
  if (axis == rank - 1)
    return one(c.emit(c.outName(0), "layer_norm", {x, gamma, beta}, attrs, x.shape));
  Shape flat = {shapeProduct(x.shape, 0, size_t(axis)), d};
  Value f = reshape(c, c.tmpName("2d"), x, flat);
  Value y = c.emit(c.tmpName("layer_norm"), "layer_norm", {f, gamma, beta}, attrs, flat);
  return one(reshape(c, c.outName(0), y, x.shape));
}

std::vector<Value> mapSoftmax(MapContext &c, const char *op) {
  Value x = floatData(c, 0);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = axisOf(c, c.attrs().getInt("axis", c.opset() >= 13 ? -1 : 1), rank);
  if (c.opset() >= 13 || axis == rank - 1)
    return one(c.emit(c.outName(0), op, {x}, json{{"axis", axis}}, x.shape));
  // Before opset 13: over the input flattened to 2-d at axis.
  Shape flat = {shapeProduct(x.shape, 0, size_t(axis)), shapeProduct(x.shape, size_t(axis))};
  Value f = reshape(c, c.tmpName("2d"), x, flat);
  Value s = c.emit(c.tmpName(op), op, {f}, json{{"axis", 1}}, flat);
  return one(reshape(c, c.outName(0), s, x.shape));
}

std::vector<Value> mapFlatten(MapContext &c) {
  Value x = c.data(0);
  int64_t rank = int64_t(x.shape.size());
  // axis in [-rank, rank]; a negative one counts from rank.
  int64_t axis = c.attrs().getInt("axis", 1);
  if (axis < -rank || axis > rank) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  Shape s = {shapeProduct(x.shape, 0, size_t(axis)), shapeProduct(x.shape, size_t(axis))};
  if (axis == 1 && rank >= 2) return one(c.emit(c.outName(0), "flatten", {x}, json::object(), s, x.i32));
  return one(reshape(c, c.outName(0), x, s));
}

std::vector<Value> mapReshape(MapContext &c) {
  Value x = c.data(0);
  std::vector<int64_t> target =
      c.opset() >= 5 ? constInts(c, 1, "the shape") : c.attrs().getInts("shape", {});
  bool allowZero = c.attrs().getBool("allowzero", 0);
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allowZero) {
      if (k >= x.shape.size()) c.fail("shape copies dimension " + std::to_string(k) + " the input lacks");
      target[k] = x.shape[k];
    }
    if (target[k] == -1) {
      if (infer >= 0) c.fail("shape has two -1 dimensions");
      infer = int64_t(k);
    } else {
      known *= target[k];
    }
  }
  if (infer >= 0) target[size_t(infer)] = known ? shapeProduct(x.shape) / known : 0;
  if (shapeProduct(target) != shapeProduct(x.shape))
    c.fail("cannot reshape " + shapeText(x.shape) + " to " + shapeText(target));
  return one(reshape(c, c.outName(0), x, target));
}

std::vector<Value> mapTranspose(MapContext &c) {
  Value x = c.data(0);
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> perm = c.attrs().getInts("perm", {});
  if (perm.empty())
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  if (int64_t(perm.size()) != rank) c.fail("perm must list every axis");
  Shape s;
  for (int64_t p : perm) s.push_back(x.shape.at(size_t(axisOf(c, p, rank, "perm entry"))));
  return one(c.emit(c.outName(0), "transpose", {x}, json{{"perm", perm}}, s, x.i32));
}

std::vector<Value> mapSqueeze(MapContext &c, bool squeeze) {
  Value x = c.data(0);
  std::vector<int64_t> axes = axesOf(c, 13, 1);
  Shape s = x.shape;
  if (squeeze) {
    int64_t rank = int64_t(s.size());
    std::vector<bool> drop(size_t(rank), false);
    for (int64_t ax : axes) {
      int64_t k = axisOf(c, ax, rank);
      if (s[size_t(k)] != 1) c.fail("axis " + std::to_string(ax) + " has length " + std::to_string(s[size_t(k)]) + ", not 1");
      drop[size_t(k)] = true;
    }
    Shape out;
    for (int64_t k = 0; k < rank; ++k)
      if (!(axes.empty() ? s[size_t(k)] == 1 : drop[size_t(k)])) out.push_back(s[size_t(k)]);
    s = out;
  } else {
    int64_t rank = int64_t(s.size() + axes.size());
    std::vector<int64_t> norm;
    for (int64_t ax : axes) norm.push_back(axisOf(c, ax, rank));
    std::sort(norm.begin(), norm.end());
    for (int64_t ax : norm) s.insert(s.begin() + ax, 1);
  }
  return one(reshape(c, c.outName(0), x, s));
}

std::vector<Value> mapConcat(MapContext &c) {
  std::vector<Value> in;
  for (int i = 0; i < c.node().input_size(); ++i)
    if (c.has(size_t(i))) in.push_back(c.data(size_t(i)));
  if (in.empty()) c.fail("no inputs");
  int64_t rank = int64_t(in[0].shape.size());
  int64_t axis = axisOf(c, c.attrs().getInt("axis", 0), rank);
  Shape s = in[0].shape;
  s[size_t(axis)] = 0;
  for (const Value &v : in) {
    if (int64_t(v.shape.size()) != rank || v.i32 != in[0].i32) c.fail("inputs differ in rank or type");
    s[size_t(axis)] += v.shape[size_t(axis)];
  }
  if (in.size() == 1) return one(reshape(c, c.outName(0), in[0], s));
  return one(c.emit(c.outName(0), "concat", in, json{{"axis", axis}}, s, in[0].i32));
}

/// Elements [start, end) of x along axis.
Value sliceAxis(MapContext &c, const std::string &name, const Value &x, int64_t axis, int64_t start,
                int64_t end) {
  Shape s = x.shape;
  s[size_t(axis)] = end - start;
  return c.emit(name, "slice", {x}, json{{"axis", axis}, {"start", start}, {"end", end}}, s, x.i32);
}

std::vector<Value> mapSplit(MapContext &c) {
  Value x = c.data(0);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = axisOf(c, c.attrs().getInt("axis", 0), rank);
  int64_t d = x.shape[size_t(axis)];
  size_t outs = size_t(c.node().output_size());
  std::vector<int64_t> sizes = c.opset() >= 13 ? (c.has(1) ? constInts(c, 1, "split") : std::vector<int64_t>{})
                                               : c.attrs().getInts("split", {});
  if (sizes.empty()) {
    if (d % int64_t(outs) != 0) c.fail("axis length " + std::to_string(d) + " does not split evenly");
    sizes.assign(outs, d / int64_t(outs));
  }
  if (sizes.size() != outs) c.fail("split lists " + std::to_string(sizes.size()) + " sizes for " + std::to_string(outs) + " outputs");
  std::vector<Value> r;
  int64_t at = 0;
  for (size_t k = 0; k < outs; ++k) {
    r.push_back(sliceAxis(c, c.outName(k), x, axis, at, at + sizes[k]));
    at += sizes[k];
  }
  if (at != d) c.fail("split sizes add to " + std::to_string(at) + ", not " + std::to_string(d));
  return r;
}

std::vector<Value> mapSlice(MapContext &c) {
  Value x = c.data(0);
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attrs().getInts("starts", {});
    ends = c.attrs().getInts("ends", {});
    axes = c.attrs().getInts("axes", {});
  } else {
    starts = constInts(c, 1, "starts");
    ends = constInts(c, 2, "ends");
    if (c.has(3)) axes = constInts(c, 3, "axes");
    if (c.has(4)) steps = constInts(c, 4, "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  if (ends.size() != starts.size() || axes.size() != starts.size())
    c.fail("starts, ends and axes differ in length");
  Value v = x;
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> cuts;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (!steps.empty() && steps[k] != 1) c.fail("steps other than 1 are not supported");
    int64_t ax = axisOf(c, axes[k], rank), d = x.shape[size_t(ax)];
    int64_t s = starts[k] < 0 ? starts[k] + d : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + d : ends[k];
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, s, d);
    if (s != 0 || e != d) cuts.push_back({ax, {s, e}});
  }
  if (cuts.empty()) return one(reshape(c, c.outName(0), x, x.shape));
  for (size_t k = 0; k < cuts.size(); ++k) {
    std::string name = k + 1 == cuts.size() ? c.outName(0) : c.tmpName("axis" + std::to_string(cuts[k].first));
    v = sliceAxis(c, name, v, cuts[k].first, cuts[k].second.first, cuts[k].second.second);
  }
  return one(v);
}

std::vector<Value> mapGather(MapContext &c) {
  int64_t axisAttr = c.attrs().getInt("axis", 0);
  if (const Const *idx = c.constant(1)) {
    // Constant indices: slices of the data.
    Value x = c.data(0);
    int64_t rank = int64_t(x.shape.size());
    int64_t axis = axisOf(c, axisAttr, rank);
    int64_t d = x.shape[size_t(axis)];
    std::vector<Value> parts;
    for (size_t k = 0; k < idx->values.size(); ++k) {
      int64_t i = toInt(idx->values[k]);
      if (i < 0) i += d;
      if (i < 0 || i >= d) c.fail("index " + std::to_string(toInt(idx->values[k])) + " is out of range");
      parts.push_back(sliceAxis(c, c.tmpName("index" + std::to_string(k)), x, axis, i, i + 1));
    }
    Shape out(x.shape.begin(), x.shape.begin() + axis);
    for (int64_t s : idx->shape) out.push_back(s);
    for (int64_t k = axis + 1; k < rank; ++k) out.push_back(x.shape[size_t(k)]);
    Value joined = parts.size() == 1 ? parts[0] : [&] {
      Shape s = x.shape;
      s[size_t(axis)] = int64_t(parts.size());
      return c.emit(c.tmpName("joined"), "concat", parts, json{{"axis", axis}}, s, x.i32);
    }();
    return one(reshape(c, c.outName(0), joined, out));
  }
  // Data indices: an embedding lookup of rows of a matrix.
  Value table = floatData(c, 0), ids = c.data(1);
  if (!ids.i32) c.fail("indices must be integers");
  if (table.shape.size() != 2 || axisOf(c, axisAttr, 2) != 0)
    c.fail("indices known only at run time must pick rows (axis 0) of a matrix (an embedding)");
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  return one(c.emit(c.outName(0), "embedding", {ids, table}, json::object(), out));
}

/// A Pad that adds nothing (PyTorch's AvgPool2d export puts one before
/// every AveragePool); a Pad into a pool or convolution merges with it
/// (Fuse.h); any other is refused.
std::vector<Value> mapPad(MapContext &c) {
  std::vector<int64_t> pads = c.opset() >= 11 ? constInts(c, 1, "pads") : c.attrs().getInts("pads", {});
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; }))
    c.fail("a Pad that pads (" + shapeText(pads) + ") is supported only into a Conv or an "
           "AveragePool that counts the padding");
  return one(c.data(0));
}

std::vector<Value> mapDropout(MapContext &c) {
  double ratio = c.opset() >= 12 ? (c.has(1) ? [&] {
    const Const *r = c.constant(1);
    if (!r || !r->scalarLike()) c.fail("ratio must be a constant");
    return r->values[0];
  }() : 0.5)
                                 : c.attrs().getFloat("ratio", 0.5);
  if (c.opset() >= 12 && c.has(2)) {
    const Const *t = c.constant(2);
    if (!t) c.fail("training_mode must be a constant");
  }
  if (c.outputUsed(1)) c.fail("the mask output is not supported");
  Value x = c.data(0);
  if (!c.training() || ratio == 0) return one(x);
  if (ratio < 0 || ratio >= 1) c.fail("ratio must be in [0, 1)");
  return one(c.emit(c.outName(0), "dropout", {x}, json{{"p", ratio}}, x.shape));
}

std::vector<Value> mapCast(MapContext &c) {
  Value x = c.data(0);
  Const::Kind to = kindOfElementType(int32_t(c.attrs().getInt("to", 1)));
  int64_t toType = c.attrs().getInt("to", 1);
  bool same = x.i32 ? (toType == ::onnx::TensorProto::INT64 || toType == ::onnx::TensorProto::INT32)
                    : toType == ::onnx::TensorProto::FLOAT;
  if (!same)
    c.fail("a cast that changes values (to " + std::string(to == Const::Float ? "another float type" : "integers") +
           ") is not supported; casts between int64 and int32, and float to float, are");
  return one(x);
}

std::vector<Value> mapReduce(MapContext &c, const char *op) {
  Value x = floatData(c, 0);
  // ReduceSum takes its axes as an input from opset 13, ReduceMean from 18.
  Reduction r = reductionOf(c, x.shape, std::string(op) == "sum" ? 13 : 18);
  if (r.noop) return one(x);
  return one(c.emit(c.outName(0), op, {x}, json{{"axes", r.axes}, {"keepdims", r.keep}}, r.shape));
}

std::vector<Value> mapExpand(MapContext &c) {
  Value x = floatData(c, 0);
  Shape s = broadcast(c, x.shape, constInts(c, 1, "the shape"));
  if (s == x.shape) return one(x);
  return one(c.emit(c.outName(0), "broadcast_to", {x}, json{{"shape", s}}, s));
}

/// Where(cond, x, y) with a constant causal condition: keep x on and below
/// the diagonal of the last two axes, a constant elsewhere (a causal mask).
std::vector<Value> mapWhere(MapContext &c) {
  const Const *cond = c.constant(0);
  const Const *cx = c.constant(1), *cy = c.constant(2);
  if (!cond || (cx && cy) || (!cx && !cy) || cond->shape.size() < 2)
    c.fail("only a causal mask (a constant lower-triangular condition choosing between data and "
           "a constant) is supported");
  bool dataWhenTrue = cy != nullptr;
  const Const *fillC = dataWhenTrue ? cy : cx;
  if (!fillC->uniform()) c.fail("the masked value must be one constant");
  size_t r = cond->shape.size();
  int64_t rows = cond->shape[r - 2], cols = cond->shape[r - 1];
  for (int64_t i = 0; i < cond->numel(); ++i) {
    int64_t col = i % cols, row = (i / cols) % rows;
    bool keep = col <= row;
    if ((cond->values[size_t(i)] != 0) != (keep == dataWhenTrue))
      c.fail("only a causal mask (a constant lower-triangular condition choosing between data "
             "and a constant) is supported");
  }
  Value x = floatData(c, dataWhenTrue ? 1 : 2);
  if (x.shape.size() < 2 || x.shape[x.shape.size() - 2] != rows || x.shape.back() != cols)
    c.fail("the mask's last two axes must match the data's");
  // masked_fill(-inf): the lowest float instead (JSON has no infinity); a
  // causal row keeps its diagonal, so softmax gives the masked places
  // exp(lowest - max) = 0 either way.
  double value = fillC->values[0];
  if (std::isnan(value)) c.fail("the masked value is NaN");
  if (std::isinf(value))
    value = value < 0 ? double(std::numeric_limits<float>::lowest()) : double(std::numeric_limits<float>::max());
  return one(c.emit(c.outName(0), "causal_mask", {x}, json{{"value", value}}, x.shape));
}

const std::vector<OpMapping> &table() {
  static const std::vector<OpMapping> t = {
      {"Abs", "relu, neg, add", mapAbs},
      {"Add", "add", [](MapContext &c) { return binary(c, "add"); }},
      {"AveragePool", "avg_pool2d", [](MapContext &c) { return mapPool(c, false); }},
      {"BatchNormalization", "batch_norm (batch statistics in training models)", mapBatchNormalization},
      {"Cast", "nothing (int64 <-> int32, float -> float)", mapCast},
      {"Celu", "relu, neg, scale, exp, sub, add", mapCelu},
      {"Clip", "sub, relu, add (x itself within the bounds)", mapClip},
      {"Concat", "concat", mapConcat},
      {"Conv", "conv2d (1-d through a reshape)", mapConv},
      {"Div", "div", [](MapContext &c) { return binary(c, "div"); }},
      {"Dropout", "dropout (training models), nothing (inference)", mapDropout},
      {"Elu", "relu, neg, exp, sub, scale, add", mapElu},
      {"Exp", "exp", [](MapContext &c) { return unary(c, "exp"); }},
      {"Expand", "broadcast_to", mapExpand},
      {"Flatten", "flatten or reshape", mapFlatten},
      {"Gather", "embedding (run-time indices), slices (constant indices)", mapGather},
      {"Gelu", "gelu (also PyTorch's Div-Erf-Add-Mul-Mul)", mapGelu},
      {"Gemm", "matmul, scale, add", mapGemm},
      {"GlobalAveragePool", "global_avg_pool2d", mapGlobalAveragePool},
      {"GlobalMaxPool", "max_pool2d (the whole image)", mapGlobalMaxPool},
      {"HardSigmoid", "scale, add, and Clip's ops", mapHardSigmoid},
      {"HardSwish", "HardSigmoid's ops, mul", mapHardSwish},
      {"Identity", "nothing", mapIdentity},
      {"LayerNormalization", "layer_norm (also the ReduceMean-Sub-Pow-Sqrt-Div chain)", mapLayerNormalization},
      {"LeakyRelu", "relu, neg, scale, sub", mapLeakyRelu},
      {"Log", "log", [](MapContext &c) { return unary(c, "log"); }},
      {"LogSoftmax", "log_softmax", [](MapContext &c) { return mapSoftmax(c, "log_softmax"); }},
      {"MatMul", "matmul", mapMatMul},
      {"MaxPool", "max_pool2d", [](MapContext &c) { return mapPool(c, true); }},
      {"Mean", "add, scale", [](MapContext &c) { return mapVariadic(c, true); }},
      {"Mul", "mul", [](MapContext &c) { return binary(c, "mul"); }},
      {"Neg", "neg", [](MapContext &c) { return unary(c, "neg"); }},
      {"Pad", "nothing (no padding), or the padding of the Conv or AveragePool it feeds", mapPad},
      {"PRelu", "relu, neg, mul, sub", mapPRelu},
      {"Pow", "mul (exponent 2)", mapPow},
      {"Reciprocal", "div", mapReciprocal},
      {"ReduceL1", "Abs's ops, sum", [](MapContext &c) { return mapReduceComposed(c, "l1"); }},
      {"ReduceLogSumExp", "exp, sum, log", [](MapContext &c) { return mapReduceComposed(c, "logsumexp"); }},
      {"ReduceMean", "mean", [](MapContext &c) { return mapReduce(c, "mean"); }},
      {"ReduceSum", "sum", [](MapContext &c) { return mapReduce(c, "sum"); }},
      {"ReduceSumSquare", "mul, sum", [](MapContext &c) { return mapReduceComposed(c, "sumsquare"); }},
      {"Relu", "relu", [](MapContext &c) { return unary(c, "relu"); }},
      {"Reshape", "reshape", mapReshape},
      {"Selu", "Elu's ops, scale", mapSelu},
      {"Sigmoid", "sigmoid", [](MapContext &c) { return unary(c, "sigmoid"); }},
      {"Slice", "slice", mapSlice},
      {"Softmax", "softmax", [](MapContext &c) { return mapSoftmax(c, "softmax"); }},
      {"Softsign", "Abs's ops, add, div", mapSoftsign},
      {"Split", "slice", mapSplit},
      {"Squeeze", "reshape", [](MapContext &c) { return mapSqueeze(c, true); }},
      {"Sub", "sub", [](MapContext &c) { return binary(c, "sub"); }},
      {"Sum", "add", [](MapContext &c) { return mapVariadic(c, false); }},
      {"Tanh", "tanh", [](MapContext &c) { return unary(c, "tanh"); }},
      {"Tile", "concat", mapTile},
      {"Transpose", "transpose", mapTranspose},
      {"Unsqueeze", "reshape", [](MapContext &c) { return mapSqueeze(c, false); }},
      {"Where", "causal_mask (a constant causal condition)", mapWhere},
  };
  return t;
}

} // namespace

const OpMapping *findOpMapping(const std::string &op) {
  for (const OpMapping &m : table())
    if (m.op == op) return &m;
  return nullptr;
}

std::vector<const OpMapping *> allOpMappings() {
  std::vector<const OpMapping *> out;
  for (const OpMapping &m : table()) out.push_back(&m);
  return out;
}

} // namespace mpc::frontend::onnx
