//===- frontend/mxnet/OpMapping.cpp - MXNet ops as mpc nodes -------------===//
//
// Shapes follow MXNet's shape functions (src/operator/nn/*.cc); the mpc
// reader re-infers every shape with mpc's rules after emission and the
// import compares the two, so a semantic difference between an MXNet op and
// its mpc counterpart cannot pass unnoticed.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/OpMapping.h"

#include "support/StringUtil.h"

#include <algorithm>
#include <cmath>

namespace mpc::frontend::mxnet {

using json = nlohmann::ordered_json;

namespace {

int64_t product(const Shape &s, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

Value floatData(MapContext &c, size_t i) {
  Value v = c.data(i);
  if (v.i32)
    c.fail("input " + std::to_string(i) + " (" + quoteName(v.name) +
           ") must be float32, got int32");
  return v;
}

/// [N, d1, d2, ...] -> [N, d1*d2*...], as MXNet's FullyConnected(flatten=True).
Value flattenTo2d(MapContext &c, const Value &x, const std::string &suffix) {
  if (x.shape.size() == 2) return x;
  if (x.shape.size() < 2) c.fail("cannot flatten data of shape " + tupleText(x.shape));
  Shape s = {x.shape[0], product(x.shape, 1)};
  return c.emit(suffix, "flatten", {x}, json::object(), s);
}

/// A 2-element tuple attribute with a default for "()" or absence.
std::vector<int64_t> pair(MapContext &c, const char *key, int64_t dflt) {
  std::vector<int64_t> t = c.attrs().getTuple(key, std::vector<int64_t>{});
  if (t.empty()) return {dflt, dflt};
  if (t.size() != 2) c.attrs().fail(key, "only 2-D (two values) is supported, got " + tupleText(t));
  return t;
}

void checkLayout(MapContext &c) {
  if (!c.attrs().has("layout")) return;
  std::string l = c.attrs().getString("layout");
  if (l != "None" && l != "NCHW")
    c.attrs().fail("layout", "only NCHW is supported, got " + quoteName(l, ""));
}

Value rank4(MapContext &c, size_t i) {
  Value x = floatData(c, i);
  if (x.shape.size() != 4)
    c.fail("only 2-D data (N, C, H, W) is supported, got shape " + tupleText(x.shape));
  return x;
}

Value mapFullyConnected(MapContext &c) {
  AttrReader &a = c.attrs();
  int64_t hidden = a.getInt("num_hidden");
  bool noBias = a.getBool("no_bias", false), flatten = a.getBool("flatten", true);
  if (hidden <= 0) a.fail("num_hidden", "must be > 0");
  Value x = floatData(c, 0);
  if (x.shape.size() < 2) c.fail("data must have rank >= 2, got " + tupleText(x.shape));
  if (flatten) x = flattenTo2d(c, x, "flatten");
  int64_t k = x.shape.back();
  Value w = c.param(1, {hidden, k}, "xavier");
  Shape out = x.shape;
  out.back() = hidden;
  // MXNet keeps the weight as [num_hidden, in]: y = x w^T + b.
  json mm = {{"transpose_b", true}};
  if (noBias) return c.emit("", "matmul", {x, w}, mm, out);
  Value y = c.emit("matmul", "matmul", {x, w}, mm, out);
  Value b = c.param(2, {hidden}, "zeros");
  return c.emit("", "add", {y, b}, json::object(), out);
}

Value mapConvolution(MapContext &c) {
  AttrReader &a = c.attrs();
  std::vector<int64_t> kernel = a.getTuple("kernel");
  if (kernel.size() != 2)
    a.fail("kernel", "only 2-D convolution is supported, got kernel " + tupleText(kernel));
  std::vector<int64_t> stride = pair(c, "stride", 1), dilate = pair(c, "dilate", 1),
                       pad = pair(c, "pad", 0);
  int64_t filters = a.getInt("num_filter"), groups = a.getInt("num_group", 1);
  bool noBias = a.getBool("no_bias", false);
  checkLayout(c);
  a.ignore({"workspace", "cudnn_tune", "cudnn_off"});
  Value x = rank4(c, 0);
  int64_t channels = x.shape[1];
  if (groups <= 0 || channels % groups != 0 || filters % groups != 0)
    a.fail("num_group", "must divide the input channels (" + std::to_string(channels) +
                            ") and num_filter (" + std::to_string(filters) + ")");
  Shape out = {x.shape[0], filters, 0, 0};
  for (int d = 0; d < 2; ++d) {
    if (kernel[d] <= 0 || stride[d] <= 0 || dilate[d] <= 0 || pad[d] < 0)
      c.fail("kernel, stride and dilate must be > 0 and pad >= 0");
    int64_t span = dilate[d] * (kernel[d] - 1) + 1;
    int64_t in = x.shape[2 + d] + 2 * pad[d];
    if (in < span)
      c.fail("kernel " + tupleText(kernel) + " does not fit the padded input " +
             tupleText(x.shape));
    out[2 + d] = (in - span) / stride[d] + 1;
  }
  Value w = c.param(1, {filters, channels / groups, kernel[0], kernel[1]}, "xavier");
  json attrs = {{"stride", stride}, {"padding", pad}, {"dilation", dilate}, {"groups", groups}};
  if (noBias) return c.emit("", "conv2d", {x, w}, attrs, out);
  // conv2d's optional third operand is MXNet's [num_filter] bias.
  Value b = c.param(2, {filters}, "zeros");
  return c.emit("", "conv2d", {x, w, b}, attrs, out);
}

Value mapPooling(MapContext &c) {
  AttrReader &a = c.attrs();
  std::string type = a.getString("pool_type", "max");
  bool global = a.getBool("global_pool", false);
  std::string convention = a.getString("pooling_convention", "valid");
  std::optional<bool> includePad = a.getOptBool("count_include_pad");
  checkLayout(c);
  a.ignore({"cudnn_off", "p_value"});
  if (type != "max" && type != "avg")
    a.fail("pool_type", "only max and avg are supported, got " + quoteName(type, ""));
  if (convention != "valid" && convention != "full")
    a.fail("pooling_convention",
           "only valid and full are supported, got " + quoteName(convention, ""));
  Value x = rank4(c, 0);
  int64_t n = x.shape[0], ch = x.shape[1];
  if (global) {
    // The kernel, stride and pad of a global pool are ignored by MXNet.
    a.ignore({"kernel", "stride", "pad"});
    if (type == "avg") return c.emit("", "global_avg_pool2d", {x}, json::object(), {n, ch, 1, 1});
    json attrs = {{"kernel", Shape{x.shape[2], x.shape[3]}},
                  {"stride", Shape{1, 1}},
                  {"padding", Shape{0, 0}},
                  {"ceil_mode", false}};
    return c.emit("", "max_pool2d", {x}, attrs, {n, ch, 1, 1});
  }
  std::vector<int64_t> kernel = a.getTuple("kernel");
  if (kernel.size() != 2)
    a.fail("kernel", "only 2-D pooling is supported, got kernel " + tupleText(kernel));
  std::vector<int64_t> stride = pair(c, "stride", 1), pad = pair(c, "pad", 0);
  bool ceil = convention == "full";
  Shape out = {n, ch, 0, 0};
  for (int d = 0; d < 2; ++d) {
    if (kernel[d] <= 0 || stride[d] <= 0 || pad[d] < 0)
      c.fail("kernel and stride must be > 0 and pad >= 0");
    int64_t in = x.shape[2 + d] + 2 * pad[d];
    if (in < kernel[d])
      c.fail("kernel " + tupleText(kernel) + " does not fit the padded input " +
             tupleText(x.shape));
    int64_t steps = in - kernel[d];
    out[2 + d] = (ceil ? (steps + stride[d] - 1) / stride[d] : steps / stride[d]) + 1;
    // MXNet's "full" rounds up and keeps a last window that starts past the
    // input and its left padding (it pools over nothing there); mpc's
    // ceil_mode, as PyTorch's, drops that window. Where they differ, no mpc
    // model computes what MXNet does.
    if (ceil && (out[2 + d] - 1) * stride[d] >= x.shape[2 + d] + pad[d])
      c.fail("pooling_convention \"full\" with kernel " + tupleText(kernel) + ", stride " +
             tupleText(stride) + " and pad " + tupleText(pad) + " on input " +
             tupleText(x.shape) + " gives a last window (along " + (d ? "width" : "height") +
             ") that starts past the input and its padding, which MXNet pools over nothing; "
             "mpc's ceil_mode drops such a window, so this pooling cannot be imported (use a "
             "stride or pad with which every window overlaps the input)");
  }
  json attrs = {{"kernel", kernel}, {"stride", stride}, {"padding", pad}, {"ceil_mode", ceil}};
  if (type == "max") return c.emit("", "max_pool2d", {x}, attrs, out);
  attrs["count_include_pad"] = includePad.value_or(true); // MXNet's default
  return c.emit("", "avg_pool2d", {x}, attrs, out);
}

/// softrelu(x) = log(1 + exp(x)), composed from mpc ops in the form that
/// cannot overflow: relu(x) + log(1 + exp(-|x|)), with |x| = relu(x) +
/// relu(-x). (log(1 + exp(x)) itself would give inf for x > 88.)
Value softrelu(MapContext &c, const Value &x) {
  Value pos = c.emit("pos", "relu", {x}, json::object(), x.shape);
  Value nx = c.emit("negx", "neg", {x}, json::object(), x.shape);
  Value neg = c.emit("neg", "relu", {nx}, json::object(), x.shape);
  Value abs = c.emit("abs", "add", {pos, neg}, json::object(), x.shape);
  Value mabs = c.emit("negabs", "neg", {abs}, json::object(), x.shape);
  Value e = c.emit("exp", "exp", {mabs}, json::object(), x.shape);
  Value one = c.emit("one", "fill", {}, json{{"value", 1.0}, {"shape", Shape{}}}, {});
  Value p = c.emit("1p", "add", {e, one}, json::object(), x.shape);
  Value l = c.emit("log", "log", {p}, json::object(), x.shape);
  return c.emit("", "add", {pos, l}, json::object(), x.shape);
}

Value mapActivation(MapContext &c) {
  std::string act = c.attrs().getString("act_type");
  Value x = floatData(c, 0);
  if (act == "relu" || act == "sigmoid" || act == "tanh")
    return c.emit("", act, {x}, json::object(), x.shape);
  if (act == "softrelu") return softrelu(c, x);
  c.attrs().fail("act_type", "unsupported activation " + quoteName(act) +
                                 " (supported: relu, sigmoid, tanh, softrelu)");
}

Value mapLeakyReLU(MapContext &c) {
  AttrReader &a = c.attrs();
  std::string act = a.getString("act_type", "leaky");
  Value x = floatData(c, 0);
  a.ignore({"lower_bound", "upper_bound"}); // rrelu only
  if (act == "gelu") return c.emit("", "gelu", {x}, json{{"approximate", "none"}}, x.shape);
  if (act != "leaky")
    a.fail("act_type",
           "unsupported LeakyReLU type " + quoteName(act) + " (supported: leaky, gelu)");
  double slope = a.getFloat("slope", 0.25);
  // leaky(x) = relu(x) - slope * relu(-x), from ops mpc has.
  Value pos = c.emit("pos", "relu", {x}, json::object(), x.shape);
  Value nx = c.emit("negx", "neg", {x}, json::object(), x.shape);
  Value neg = c.emit("neg", "relu", {nx}, json::object(), x.shape);
  Value sneg = c.emit("negscaled", "scale", {neg}, json{{"value", -slope}}, x.shape);
  return c.emit("", "add", {pos, sneg}, json::object(), x.shape);
}

Value mapUnary(MapContext &c, const std::string &op) {
  Value x = floatData(c, 0);
  return c.emit("", op, {x}, json::object(), x.shape);
}

Value mapBatchNorm(MapContext &c) {
  AttrReader &a = c.attrs();
  double eps = a.getFloat("eps", 1e-3), momentum = a.getFloat("momentum", 0.9);
  bool fixGamma = a.getBool("fix_gamma", true), global = a.getBool("use_global_stats", false);
  int64_t axis = a.getInt("axis", 1);
  a.ignore({"cudnn_off", "output_mean_var"}); // only outputs 1 and 2, which are refused
  Value x = floatData(c, 0);
  int64_t rank = int64_t(x.shape.size());
  if (axis < -rank || axis >= rank)
    a.fail("axis", "out of range for data of shape " + tupleText(x.shape));
  int64_t ch = x.shape[size_t(axis < 0 ? axis + rank : axis)];
  Value gamma;
  if (fixGamma) {
    // fix_gamma: MXNet multiplies by 1 and never updates gamma; a constant
    // of ones, not a parameter.
    c.unused(1, {ch});
    gamma = c.emit("gamma_fixed", "fill", {}, json{{"value", 1.0}, {"shape", Shape{ch}}}, {ch});
  } else {
    gamma = c.param(1, {ch}, "ones");
  }
  Value beta = c.param(2, {ch}, "zeros");
  std::string mean = c.aux(3, {ch}), var = c.aux(4, {ch});
  json attrs = {{"eps", eps},           {"momentum", momentum},
                {"axis", axis},         {"use_global_stats", global || c.inference()},
                {"running_mean", mean}, {"running_var", var}};
  return c.emit("", "batch_norm", {x, gamma, beta}, attrs, x.shape);
}

Value mapFlatten(MapContext &c) {
  Value x = floatData(c, 0);
  if (x.shape.size() < 2) c.fail("data must have rank >= 2, got " + tupleText(x.shape));
  Shape s = {x.shape[0], product(x.shape, 1)};
  return c.emit("", "flatten", {x}, json::object(), s);
}

Value mapDropout(MapContext &c) {
  AttrReader &a = c.attrs();
  double p = a.getFloat("p", 0.5);
  std::string mode = a.getString("mode", "training");
  std::vector<int64_t> axes = a.getTuple("axes", std::vector<int64_t>{});
  a.ignore({"cudnn_off"});
  if (mode != "training")
    a.fail("mode", "only 'training' is supported (mpc drops out in training only), got " +
                       quoteName(mode, ""));
  if (!axes.empty()) a.fail("axes", "shared masks along axes are not supported");
  if (p < 0 || p >= 1) a.fail("p", "must be in [0, 1)");
  Value x = floatData(c, 0);
  return c.emit("", "dropout", {x}, json{{"p", p}}, x.shape);
}

Value mapBinary(MapContext &c, const std::string &op, bool broadcast) {
  Value x = floatData(c, 0), y = floatData(c, 1);
  if (!broadcast && x.shape != y.shape)
    c.fail("operands must have the same shape, got " + tupleText(x.shape) + " and " +
           tupleText(y.shape));
  Shape out(std::max(x.shape.size(), y.shape.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    auto dim = [&](const Shape &s) {
      return i + s.size() >= out.size() ? s[i + s.size() - out.size()] : int64_t(1);
    };
    int64_t p = dim(x.shape), q = dim(y.shape);
    if (p != q && p != 1 && q != 1)
      c.fail("shapes " + tupleText(x.shape) + " and " + tupleText(y.shape) + " do not broadcast");
    out[i] = p == 1 ? q : p;
  }
  return c.emit("", op, {x, y}, json::object(), out);
}

/// x op scalar (Gluon's `x * 2`, `x / 255`, `x + 1`): scale, or an add of
/// an f32[] fill.
Value mapScalar(MapContext &c, char op) {
  double v = c.attrs().getFloat("scalar");
  c.attrs().ignore({"is_int"}); // mpc computes in float32 either way
  Value x = floatData(c, 0);
  if (op == '*' || op == '/') {
    if (op == '/' && v == 0) c.attrs().fail("scalar", "division by zero");
    return c.emit("", "scale", {x}, json{{"value", op == '*' ? v : 1.0 / v}}, x.shape);
  }
  Value s =
      c.emit("scalar", "fill", {}, json{{"value", op == '+' ? v : -v}, {"shape", Shape{}}}, {});
  return c.emit("", "add", {x, s}, json::object(), x.shape);
}

Value mapConcat(MapContext &c) {
  AttrReader &a = c.attrs();
  int64_t dim = a.getInt("dim", 1), num = a.getInt("num_args");
  if (num != int64_t(c.numInputs()))
    a.fail("num_args", "is " + std::to_string(num) + " but the node has " +
                           std::to_string(c.numInputs()) + " inputs");
  std::vector<Value> in;
  for (size_t i = 0; i < c.numInputs(); ++i) in.push_back(floatData(c, i));
  Shape out = in[0].shape;
  int64_t rank = int64_t(out.size());
  if (dim < -rank || dim >= rank) a.fail("dim", "out of range for rank " + std::to_string(rank));
  size_t ax = size_t(dim < 0 ? dim + rank : dim);
  for (size_t i = 1; i < in.size(); ++i) {
    Shape s = in[i].shape;
    if (s.size() != out.size()) c.fail("inputs differ in rank");
    for (size_t d = 0; d < s.size(); ++d)
      if (d != ax && s[d] != out[d])
        c.fail("inputs " + tupleText(in[0].shape) + " and " + tupleText(s) +
               " differ outside dim " + std::to_string(dim));
    out[ax] += s[ax];
  }
  return c.emit("", "concat", in, json{{"axis", dim}}, out);
}

/// MXNet's Reshape special values (matrix_op-inl.h InferReshapeShape):
/// 0 copies a dim, -1 infers one, -2 copies the rest, -3 merges two dims,
/// -4 splits one into the next two values (one of which may be -1).
Shape reshapeTarget(MapContext &c, const Shape &in, const std::vector<int64_t> &spec) {
  Shape out;
  size_t src = 0;
  int inferred = -1;
  auto need = [&](size_t n) {
    if (src + n > in.size())
      c.attrs().fail("shape", "refers past the input's " + std::to_string(in.size()) + " dims");
  };
  for (size_t j = 0; j < spec.size(); ++j) {
    int64_t v = spec[j];
    if (v > 0) {
      out.push_back(v);
      ++src;
    } else if (v == 0) {
      need(1);
      out.push_back(in[src++]);
    } else if (v == -1) {
      if (inferred >= 0) c.attrs().fail("shape", "more than one -1");
      inferred = int(out.size());
      out.push_back(1);
      ++src;
    } else if (v == -2) {
      while (src < in.size()) out.push_back(in[src++]);
    } else if (v == -3) {
      need(2);
      out.push_back(in[src] * in[src + 1]);
      src += 2;
    } else if (v == -4) {
      need(1);
      if (j + 2 >= spec.size()) c.attrs().fail("shape", "-4 must be followed by two values");
      int64_t d1 = spec[j + 1], d2 = spec[j + 2];
      if (d1 == -1 && d2 > 0 && in[src] % d2 == 0) d1 = in[src] / d2;
      if (d2 == -1 && d1 > 0 && in[src] % d1 == 0) d2 = in[src] / d1;
      if (d1 <= 0 || d2 <= 0 || d1 * d2 != in[src])
        c.attrs().fail("shape", "-4 cannot split dim " + std::to_string(in[src]));
      out.push_back(d1);
      out.push_back(d2);
      ++src;
      j += 2;
    } else {
      c.attrs().fail("shape", "unknown special value " + std::to_string(v));
    }
  }
  if (inferred >= 0) {
    int64_t known = product(out);
    if (known == 0 || product(in) % known != 0)
      c.attrs().fail("shape", "cannot infer -1 for " + tupleText(in));
    out[size_t(inferred)] = product(in) / known;
  }
  return out;
}

Value mapReshape(MapContext &c) {
  AttrReader &a = c.attrs();
  std::vector<int64_t> spec = a.getTuple("shape", std::vector<int64_t>{});
  bool reverse = a.getBool("reverse", false);
  if (!a.getTuple("target_shape", std::vector<int64_t>{}).empty())
    a.fail("target_shape", "the deprecated target_shape is not supported; use shape");
  if (a.getBool("keep_highest", false)) a.fail("keep_highest", "is not supported");
  Value x = c.data(0);
  Shape in = x.shape, out;
  if (reverse) {
    // reverse=True applies the special values right to left.
    std::reverse(in.begin(), in.end());
    std::reverse(spec.begin(), spec.end());
    out = reshapeTarget(c, in, spec);
    std::reverse(out.begin(), out.end());
  } else {
    out = reshapeTarget(c, in, spec);
  }
  if (product(out) != product(x.shape))
    a.fail("shape", "cannot reshape " + tupleText(x.shape) + " to " + tupleText(out));
  return c.emit("", "reshape", {x}, json{{"shape", out}}, out, x.i32);
}

Value mapSoftmaxLike(MapContext &c, const std::string &op) {
  AttrReader &a = c.attrs();
  int64_t axis = a.getInt("axis", -1);
  std::optional<double> t = a.getOptFloat("temperature");
  if (a.getBool("use_length", false)) a.fail("use_length", "is not supported");
  if (a.has("dtype") && !isNoneAttr(a.getString("dtype")) && a.getString("dtype") != "float32")
    a.fail("dtype", "only float32 is supported");
  Value x = floatData(c, 0);
  int64_t rank = int64_t(x.shape.size());
  if (axis < -rank || axis >= rank) a.fail("axis", "out of range for rank " + std::to_string(rank));
  if (t && *t != 1.0) {
    if (*t == 0) a.fail("temperature", "must not be 0");
    x = c.emit("temperature", "scale", {x}, json{{"value", 1.0 / *t}}, x.shape);
  }
  return c.emit("", op, {x}, json{{"axis", axis}}, x.shape);
}

Value mapEmbedding(MapContext &c) {
  AttrReader &a = c.attrs();
  int64_t vocab = a.getInt("input_dim"), dim = a.getInt("output_dim");
  if (a.has("dtype") && a.getString("dtype") != "float32")
    a.fail("dtype", "only float32 is supported");
  a.ignore({"sparse_grad"}); // mpc's dense gradient has the same values
  Value ids = c.data(0);
  if (!ids.i32)
    c.fail("ids " + quoteName(ids.name) + " must be int32 in mpc: give them as --input " +
           quoteName(ids.name, "") + "=...:i32");
  Value w = c.param(1, {vocab, dim}, "xavier");
  Shape out = ids.shape;
  out.push_back(dim);
  return c.emit("", "embedding", {ids, w}, json::object(), out);
}

/// SoftmaxOutput: forward, the probabilities; backward, MXNet's gradient
///   dlogits = grad_scale / valid_cnt * (softmax(x) - onehot(label))
/// (zero on ignored rows with use_ignore), valid_cnt = 1 (null), N (batch)
/// or the rows not ignored (valid). mpc's softmax_cross_entropy ("mean")
/// has the gradient (softmax - onehot) / K, K the rows not ignored, so:
///   null  -> scale(sce, grad_scale * N)      (no ignored rows: K = N)
///   batch -> scale(sce, grad_scale)
///   valid -> scale(sce, grad_scale)
/// With use_ignore under null or batch, K varies per batch, so the sum form
/// (reduction "sum") is needed: scale(sce_sum, grad_scale [/ N]).
Value mapSoftmaxOutput(MapContext &c) {
  AttrReader &a = c.attrs();
  double gradScale = a.getFloat("grad_scale", 1.0), ignoreLabel = a.getFloat("ignore_label", -1);
  bool useIgnore = a.getBool("use_ignore", false);
  std::string norm = a.getString("normalization", "null");
  for (const char *k : {"multi_output", "preserve_shape", "out_grad"})
    if (a.getBool(k, false)) a.fail(k, "is not supported");
  if (a.getFloat("smooth_alpha", 0) != 0)
    a.fail("smooth_alpha", "label smoothing is not supported");
  if (norm != "null" && norm != "batch" && norm != "valid")
    a.fail("normalization", "must be null, batch or valid, got " + quoteName(norm, ""));
  Value x = floatData(c, 0);
  if (x.shape.size() != 2)
    c.fail("data must be (batch, classes), got " + tupleText(x.shape) +
           "; flatten it first (multi_output is not supported)");
  Value probs = c.emit("", "softmax", {x}, json{{"axis", -1}}, x.shape);
  if (c.inference()) return probs;
  int64_t n = x.shape[0];
  Value label = c.label(1, {n}, /*i32=*/true);
  json attrs = json::object();
  if (useIgnore) {
    if (ignoreLabel != std::floor(ignoreLabel))
      a.fail("ignore_label", "must be an integer class, got " + std::to_string(ignoreLabel));
    attrs["ignore_index"] = int64_t(ignoreLabel);
  }
  double scale = gradScale;
  if (norm == "null" && !useIgnore) scale = gradScale * double(n);
  if (useIgnore && norm != "valid") {
    attrs["reduction"] = "sum";
    if (norm == "batch") scale = gradScale / double(n);
  }
  Value loss = c.emit("loss", "softmax_cross_entropy", {x, label}, attrs, {});
  if (scale != 1.0) loss = c.emit("loss_scaled", "scale", {loss}, json{{"value", scale}}, {});
  c.setLoss(loss);
  return probs;
}

/// LinearRegressionOutput: forward, the identity; backward, MXNet's
///   dpred = grad_scale / M * (pred - label),  M = label elements per row.
/// mse_loss = sum((pred - label)^2) / (N M) has dpred = 2 (pred - label) /
/// (N M), so loss = scale(mse_loss, grad_scale * N / 2) gives MXNet's.
Value mapLinearRegressionOutput(MapContext &c) {
  double gradScale = c.attrs().getFloat("grad_scale", 1.0);
  Value x = floatData(c, 0);
  if (x.shape.empty()) c.fail("data must have a batch axis");
  Value out = c.emit("", "scale", {x}, json{{"value", 1.0}}, x.shape); // the identity
  if (c.inference()) return out;
  Value label = c.label(1, x.shape, /*i32=*/false);
  Value mse = c.emit("loss", "mse_loss", {x, label}, json::object(), {});
  double scale = gradScale * double(x.shape[0]) / 2;
  Value loss =
      scale == 1.0 ? mse : c.emit("loss_scaled", "scale", {mse}, json{{"value", scale}}, {});
  c.setLoss(loss);
  return out;
}

const std::vector<OpMapping> &table() {
  static const std::vector<OpMapping> kTable = {
      {{"Activation"}, {"data"}, false, "relu, sigmoid, tanh, softrelu", mapActivation},
      {{"BatchNorm"},
       {"data", "gamma", "beta", "moving_mean", "moving_var"},
       false,
       "batch_norm",
       mapBatchNorm},
      {{"BlockGrad", "stop_gradient"},
       {"data"},
       false,
       "stop_gradient",
       [](MapContext &c) { return mapUnary(c, "stop_gradient"); }},
      {{"Concat", "concat"}, {}, false, "concat", mapConcat},
      {{"Convolution"}, {"data", "weight", "bias"}, false, "conv2d", mapConvolution},
      {{"Dropout"}, {"data"}, false, "dropout", mapDropout},
      {{"Embedding"}, {"data", "weight"}, false, "embedding", mapEmbedding},
      {{"Flatten", "flatten"}, {"data"}, false, "flatten", mapFlatten},
      {{"FullyConnected"}, {"data", "weight", "bias"}, false, "matmul + add", mapFullyConnected},
      {{"LeakyReLU"}, {"data"}, false, "leaky, gelu", mapLeakyReLU},
      {{"LinearRegressionOutput"},
       {"data", "label"},
       true,
       "mse_loss head",
       mapLinearRegressionOutput},
      {{"Pooling"}, {"data"}, false, "max/avg/global pools", mapPooling},
      {{"Reshape", "reshape"}, {"data"}, false, "reshape", mapReshape},
      {{"SoftmaxOutput", "Softmax"},
       {"data", "label"},
       true,
       "softmax_cross_entropy head",
       mapSoftmaxOutput},
      {{"broadcast_add", "broadcast_plus"},
       {"lhs", "rhs"},
       false,
       "add",
       [](MapContext &c) { return mapBinary(c, "add", true); }},
      {{"broadcast_div"},
       {"lhs", "rhs"},
       false,
       "div",
       [](MapContext &c) { return mapBinary(c, "div", true); }},
      {{"broadcast_mul"},
       {"lhs", "rhs"},
       false,
       "mul",
       [](MapContext &c) { return mapBinary(c, "mul", true); }},
      {{"broadcast_sub", "broadcast_minus"},
       {"lhs", "rhs"},
       false,
       "sub",
       [](MapContext &c) { return mapBinary(c, "sub", true); }},
      {{"elemwise_add", "_Plus", "_plus", "_add"},
       {"lhs", "rhs"},
       false,
       "add",
       [](MapContext &c) { return mapBinary(c, "add", false); }},
      {{"elemwise_div", "_Div", "_div"},
       {"lhs", "rhs"},
       false,
       "div",
       [](MapContext &c) { return mapBinary(c, "div", false); }},
      {{"elemwise_mul", "_Mul", "_mul"},
       {"lhs", "rhs"},
       false,
       "mul",
       [](MapContext &c) { return mapBinary(c, "mul", false); }},
      {{"elemwise_sub", "_Minus", "_minus", "_sub"},
       {"lhs", "rhs"},
       false,
       "sub",
       [](MapContext &c) { return mapBinary(c, "sub", false); }},
      {{"_div_scalar"}, {"data"}, false, "scale", [](MapContext &c) { return mapScalar(c, '/'); }},
      {{"_minus_scalar"},
       {"data"},
       false,
       "add of a fill",
       [](MapContext &c) { return mapScalar(c, '-'); }},
      {{"_mul_scalar"}, {"data"}, false, "scale", [](MapContext &c) { return mapScalar(c, '*'); }},
      {{"_plus_scalar"},
       {"data"},
       false,
       "add of a fill",
       [](MapContext &c) { return mapScalar(c, '+'); }},
      {{"exp"}, {"data"}, false, "exp", [](MapContext &c) { return mapUnary(c, "exp"); }},
      {{"log"}, {"data"}, false, "log", [](MapContext &c) { return mapUnary(c, "log"); }},
      {{"log_softmax"},
       {"data"},
       false,
       "log_softmax",
       [](MapContext &c) { return mapSoftmaxLike(c, "log_softmax"); }},
      {{"relu"}, {"data"}, false, "relu", [](MapContext &c) { return mapUnary(c, "relu"); }},
      {{"sigmoid"},
       {"data"},
       false,
       "sigmoid",
       [](MapContext &c) { return mapUnary(c, "sigmoid"); }},
      {{"softmax"},
       {"data"},
       false,
       "softmax",
       [](MapContext &c) { return mapSoftmaxLike(c, "softmax"); }},
      {{"tanh"}, {"data"}, false, "tanh", [](MapContext &c) { return mapUnary(c, "tanh"); }},
  };
  return kTable;
}

} // namespace

const OpMapping *findOpMapping(const std::string &op) {
  for (const OpMapping &m : table())
    for (const std::string &n : m.names)
      if (n == op) return &m;
  return nullptr;
}

std::string supportedOpList() {
  std::string s;
  for (const OpMapping &m : table())
    for (const std::string &n : m.names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

} // namespace mpc::frontend::mxnet
