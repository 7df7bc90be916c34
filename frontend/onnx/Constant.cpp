//===- frontend/onnx/Constant.cpp - values known at import -----------------===//
#include "frontend/onnx/Constant.h"

#include "frontend/onnx/OnnxFile.h"
#include "ops/Type.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

namespace mpc::frontend::onnx {

using T = ::onnx::TensorProto;

int64_t shapeProduct(const std::vector<int64_t> &shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    if (shape[i] < 0 || __builtin_mul_overflow(p, shape[i], &p))
      throw RuleError("the shape " + shapeText(shape) + " is out of range");
  return p;
}

int64_t toInt(double v) {
  if (!(std::fabs(v) <= 9007199254740992.0)) // 2^53, and not NaN
    throw RuleError("integer value " + std::to_string(v) + " is out of range");
  return int64_t(v);
}

bool Const::uniform() const {
  return !values.empty() &&
         std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
}

Const::Kind kindOfElementType(int32_t type) {
  switch (type) {
  case T::FLOAT:
  case T::DOUBLE:
  case T::FLOAT16:
  case T::BFLOAT16: return Const::Float;
  case T::BOOL: return Const::Bool;
  default: return Const::Int;
  }
}

namespace {

/// A shape's element count, at most kMaxFoldElements (the folding limit).
int64_t product(const std::vector<int64_t> &s) {
  int64_t p = shapeProduct(s);
  if (p > kMaxFoldElements)
    throw RuleError("a value of shape " + shapeText(s) + " is too large to fold at import (more "
                    "than " + std::to_string(kMaxFoldElements) + " elements)");
  return p;
}

template <class V> void appendRaw(const std::string &raw, std::vector<double> &out) {
  size_t n = raw.size() / sizeof(V);
  for (size_t i = 0; i < n; ++i) {
    V v;
    std::memcpy(&v, raw.data() + i * sizeof(V), sizeof(V));
    out.push_back(double(v));
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else {
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

Const readTensor(const T &t) {
  if (t.data_location() == T::EXTERNAL)
    throw RuleError("tensor " + quoteName(t.name()) +
                    " keeps its data in an external file; save the model with every tensor "
                    "inside it (torch.onnx.export does so below 2 GB)");
  Const c;
  c.kind = kindOfElementType(t.data_type());
  for (int64_t d : t.dims()) c.shape.push_back(d);
  std::vector<double> &v = c.values;
  const std::string &raw = t.raw_data();
  switch (t.data_type()) {
  case T::FLOAT:
    if (t.has_raw_data()) appendRaw<float>(raw, v);
    else for (float x : t.float_data()) v.push_back(x);
    break;
  case T::DOUBLE:
    if (t.has_raw_data()) appendRaw<double>(raw, v);
    else for (double x : t.double_data()) v.push_back(x);
    break;
  case T::FLOAT16:
    if (t.has_raw_data()) {
      for (size_t i = 0; i + 1 < raw.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, raw.data() + i, 2);
        v.push_back(halfToFloat(h));
      }
    } else {
      for (int32_t x : t.int32_data()) v.push_back(halfToFloat(uint16_t(x)));
    }
    break;
  case T::INT64:
    if (t.has_raw_data()) appendRaw<int64_t>(raw, v);
    else for (int64_t x : t.int64_data()) v.push_back(double(x));
    break;
  case T::UINT64:
    if (t.has_raw_data()) appendRaw<uint64_t>(raw, v);
    else for (uint64_t x : t.uint64_data()) v.push_back(double(x));
    break;
  case T::INT32:
    if (t.has_raw_data()) appendRaw<int32_t>(raw, v);
    else for (int32_t x : t.int32_data()) v.push_back(x);
    break;
  case T::UINT32:
    if (t.has_raw_data()) appendRaw<uint32_t>(raw, v);
    else for (uint64_t x : t.uint64_data()) v.push_back(double(x));
    break;
  case T::INT16:
    if (t.has_raw_data()) appendRaw<int16_t>(raw, v);
    else for (int32_t x : t.int32_data()) v.push_back(x);
    break;
  case T::UINT16:
    if (t.has_raw_data()) appendRaw<uint16_t>(raw, v);
    else for (int32_t x : t.int32_data()) v.push_back(x);
    break;
  case T::INT8:
    if (t.has_raw_data()) appendRaw<int8_t>(raw, v);
    else for (int32_t x : t.int32_data()) v.push_back(x);
    break;
  case T::UINT8:
  case T::BOOL:
    if (t.has_raw_data()) appendRaw<uint8_t>(raw, v);
    else for (int32_t x : t.int32_data()) v.push_back(x);
    break;
  default:
    throw RuleError("tensor " + quoteName(t.name()) + " has element type " +
                    elementTypeName(t.data_type()) + ", which mpc does not hold");
  }
  if (int64_t(v.size()) != product(c.shape))
    throw RuleError("tensor " + quoteName(t.name()) + " holds " + std::to_string(v.size()) +
                    " values for its shape's " + std::to_string(product(c.shape)));
  return c;
}

const ::onnx::AttributeProto *Attrs::find(const std::string &name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {
/// An attribute of the wrong type is an error, as ONNX's own readers treat it.
const ::onnx::AttributeProto *typed(const ::onnx::AttributeProto *a,
                                    ::onnx::AttributeProto::AttributeType type, const char *what) {
  if (a && a->type() != type)
    throw RuleError("attribute " + quoteName(a->name()) + " must be " + what);
  bool present = !a || (type == ::onnx::AttributeProto::INT && a->has_i()) ||
                 (type == ::onnx::AttributeProto::FLOAT && a->has_f()) ||
                 (type == ::onnx::AttributeProto::STRING && a->has_s()) ||
                 (type == ::onnx::AttributeProto::TENSOR && a->has_t()) ||
                 type == ::onnx::AttributeProto::INTS;
  if (!present) throw RuleError("attribute " + quoteName(a->name()) + " has no value");
  return a;
}
} // namespace

int64_t Attrs::getInt(const std::string &name, int64_t dflt) const {
  const auto *a = typed(find(name), ::onnx::AttributeProto::INT, "an int");
  return a ? a->i() : dflt;
}

bool Attrs::getBool(const std::string &name, bool dflt) const {
  int64_t v = getInt(name, dflt ? 1 : 0);
  if (v != 0 && v != 1)
    throw RuleError("attribute " + quoteName(name) + " must be 0 or 1, got " + std::to_string(v));
  return v == 1;
}

double Attrs::getFloat(const std::string &name, double dflt) const {
  const auto *a = typed(find(name), ::onnx::AttributeProto::FLOAT, "a float");
  return a ? double(a->f()) : dflt;
}

std::string Attrs::getString(const std::string &name, const std::string &dflt) const {
  const auto *a = typed(find(name), ::onnx::AttributeProto::STRING, "a string");
  return a ? a->s() : dflt;
}

std::vector<int64_t> Attrs::getInts(const std::string &name,
                                    const std::vector<int64_t> &dflt) const {
  const auto *a = typed(find(name), ::onnx::AttributeProto::INTS, "a list of ints");
  if (!a) return dflt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<Const> Attrs::getTensor(const std::string &name) const {
  const auto *a = typed(find(name), ::onnx::AttributeProto::TENSOR, "a tensor");
  if (!a) return std::nullopt;
  return readTensor(a->t());
}

namespace {

/// numpy broadcasting of two shapes (ops::broadcastShapes).
std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::optional<std::vector<int64_t>> s = ops::broadcastShapes(a, b);
  if (!s) throw RuleError("shapes do not broadcast: " + shapeText(a) + " and " + shapeText(b));
  return *s;
}

/// The element of `c` that broadcasts to flat index `i` of `shape`.
double at(const Const &c, const std::vector<int64_t> &shape, int64_t i) {
  int64_t offset = 0, stride = 1;
  size_t r = shape.size(), cr = c.shape.size();
  for (size_t k = r; k-- > 0;) {
    int64_t idx = i % shape[k];
    i /= shape[k];
    if (k >= r - cr) {
      int64_t d = c.shape[k - (r - cr)];
      if (d != 1) offset += idx * stride;
      stride *= d;
    }
  }
  return c.values[size_t(offset)];
}

Const nary(const std::vector<const Const *> &in, Const::Kind kind,
           const std::function<double(const std::vector<double> &)> &f) {
  std::vector<int64_t> shape;
  for (const Const *c : in) shape = broadcastShape(shape, c->shape);
  Const out;
  out.kind = kind;
  out.shape = shape;
  int64_t n = product(shape);
  std::vector<double> args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = at(*in[k], shape, i);
    out.values.push_back(f(args));
  }
  return out;
}

int64_t normAxis(int64_t axis, int64_t rank) {
  std::optional<int64_t> a = ops::normalizeAxis(axis, rank);
  if (!a)
    throw RuleError("axis " + std::to_string(axis) + " out of range for rank " +
                    std::to_string(rank));
  return *a;
}

std::vector<int64_t> ints(const Const &c) {
  std::vector<int64_t> v;
  for (double x : c.values) v.push_back(toInt(x));
  return v;
}

/// Round-to-float32 of a Float result, as the graph computes it.
double f32(double x) { return double(float(x)); }

} // namespace

const std::set<std::string> &foldableOps() {
  static const std::set<std::string> ops = {
      "Identity", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Add", "Sub", "Mul",
      "Div", "Neg", "Sqrt", "Pow", "Equal", "Less", "Greater", "Not", "And", "Or", "Where",
      "ConstantOfShape", "Expand", "Range", "Reshape", "Slice", "Transpose", "Trilu",
      "Flatten", "Min", "Max"};
  return ops;
}

std::optional<std::vector<Const>> fold(const ::onnx::NodeProto &n, int64_t opset,
                                       const std::vector<const Const *> &in) {
  const std::string &op = n.op_type();
  Attrs a(n);
  auto need = [&](size_t i) -> const Const & {
    if (i >= in.size() || !in[i]) throw RuleError("input " + std::to_string(i) + " is missing");
    return *in[i];
  };
  auto kindOf = [&](const Const &x, const Const &y) {
    return x.kind == Const::Float || y.kind == Const::Float ? Const::Float : x.kind;
  };
  auto arith = [&](std::function<double(double, double)> f) {
    const Const &x = need(0), &y = need(1);
    Const::Kind k = kindOf(x, y);
    return std::vector<Const>{nary({&x, &y}, k, [&](const std::vector<double> &v) {
      double r = f(v[0], v[1]);
      return k == Const::Float ? f32(r) : r;
    })};
  };
  auto compare = [&](std::function<bool(double, double)> f) {
    const Const &x = need(0), &y = need(1);
    return std::vector<Const>{nary({&x, &y}, Const::Bool, [&](const std::vector<double> &v) {
      return f(v[0], v[1]) ? 1.0 : 0.0;
    })};
  };
  if (op == "Identity") return std::vector<Const>{need(0)};
  if (op == "Add") return arith([](double x, double y) { return x + y; });
  if (op == "Sub") return arith([](double x, double y) { return x - y; });
  if (op == "Mul") return arith([](double x, double y) { return x * y; });
  if (op == "Div") {
    bool integer = kindOf(need(0), need(1)) != Const::Float;
    return arith([integer](double x, double y) {
      if (integer) {
        if (y == 0) throw RuleError("integer division by zero");
        return std::trunc(x / y);
      }
      return x / y;
    });
  }
  if (op == "Pow") return arith([](double x, double y) { return std::pow(x, y); });
  if (op == "Min") return arith([](double x, double y) { return std::min(x, y); });
  if (op == "Max") return arith([](double x, double y) { return std::max(x, y); });
  if (op == "Equal") return compare([](double x, double y) { return x == y; });
  if (op == "Less") return compare([](double x, double y) { return x < y; });
  if (op == "Greater") return compare([](double x, double y) { return x > y; });
  if (op == "And") return compare([](double x, double y) { return x != 0 && y != 0; });
  if (op == "Or") return compare([](double x, double y) { return x != 0 || y != 0; });
  if (op == "Neg" || op == "Sqrt" || op == "Not") {
    Const r = need(0);
    for (double &v : r.values)
      v = op == "Neg" ? -v : op == "Not" ? double(v == 0) : f32(std::sqrt(v));
    return std::vector<Const>{r};
  }
  if (op == "Where") {
    const Const &c = need(0), &x = need(1), &y = need(2);
    return std::vector<Const>{nary({&c, &x, &y}, kindOf(x, y),
                                   [](const std::vector<double> &v) { return v[0] ? v[1] : v[2]; })};
  }
  if (op == "Cast") {
    Const r = need(0);
    r.kind = kindOfElementType(int32_t(a.getInt("to", T::FLOAT)));
    for (double &v : r.values) {
      if (r.kind == Const::Int) v = std::trunc(v);
      else if (r.kind == Const::Bool) v = v != 0;
      else v = f32(v);
    }
    return std::vector<Const>{r};
  }
  if (op == "ConstantOfShape") {
    Const r;
    std::optional<Const> value = a.getTensor("value");
    r.kind = value ? value->kind : Const::Float;
    r.shape = ints(need(0));
    double v = value && !value->values.empty() ? value->values[0] : 0.0;
    r.values.assign(size_t(product(r.shape)), v);
    return std::vector<Const>{r};
  }
  if (op == "Expand") {
    const Const &x = need(0);
    std::vector<int64_t> shape = broadcastShape(x.shape, ints(need(1)));
    Const ones;
    ones.shape = shape;
    ones.values.assign(size_t(product(shape)), 0);
    return std::vector<Const>{nary({&x, &ones}, x.kind, [](const std::vector<double> &v) { return v[0]; })};
  }
  if (op == "Range") {
    double start = need(0).values.at(0), limit = need(1).values.at(0), delta = need(2).values.at(0);
    if (delta == 0) throw RuleError("Range with delta 0");
    Const r;
    r.kind = need(0).kind;
    double n = std::ceil((limit - start) / delta);
    if (!(n <= double(kMaxFoldElements))) throw RuleError("Range of too many elements to fold");
    int64_t count = std::max<int64_t>(int64_t(n), 0);
    for (int64_t i = 0; i < count; ++i) r.values.push_back(start + double(i) * delta);
    r.shape = {count};
    return std::vector<Const>{r};
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Const r = need(0);
    std::vector<int64_t> axes = opset >= 13 ? (in.size() > 1 && in[1] ? ints(*in[1]) : std::vector<int64_t>{})
                                            : a.getInts("axes", {});
    if (op == "Unsqueeze") {
      int64_t rank = int64_t(r.shape.size() + axes.size());
      std::vector<int64_t> norm;
      for (int64_t ax : axes) norm.push_back(normAxis(ax, rank));
      std::sort(norm.begin(), norm.end());
      for (int64_t ax : norm) r.shape.insert(r.shape.begin() + ax, 1);
    } else {
      int64_t rank = int64_t(r.shape.size());
      std::set<int64_t> drop;
      for (int64_t ax : axes) drop.insert(normAxis(ax, rank));
      std::vector<int64_t> s;
      for (int64_t k = 0; k < rank; ++k)
        if (!(axes.empty() ? r.shape[size_t(k)] == 1 : drop.count(k) > 0)) s.push_back(r.shape[size_t(k)]);
      r.shape = s;
    }
    return std::vector<Const>{r};
  }
  if (op == "Reshape" || op == "Flatten") {
    Const r = need(0);
    std::vector<int64_t> target;
    if (op == "Flatten") {
      int64_t rank = int64_t(r.shape.size()), axis = a.getInt("axis", 1);
      if (axis < -rank || axis > rank) throw RuleError("Flatten axis out of range");
      if (axis < 0) axis += rank;
      int64_t lead = 1;
      for (int64_t k = 0; k < axis; ++k) lead *= r.shape[size_t(k)];
      target = {lead, r.numel() / std::max<int64_t>(lead, 1)};
    } else {
      target = ints(need(1));
      int64_t known = 1, infer = -1;
      for (size_t k = 0; k < target.size(); ++k) {
        if (target[k] == 0 && !a.getBool("allowzero", 0)) target[k] = r.shape.at(k);
        if (target[k] == -1) infer = int64_t(k);
        else known *= target[k];
      }
      if (infer >= 0) target[size_t(infer)] = known ? r.numel() / known : 0;
    }
    if (product(target) != r.numel())
      throw RuleError("cannot reshape " + shapeText(r.shape) + " to " + shapeText(target));
    r.shape = target;
    return std::vector<Const>{r};
  }
  if (op == "Concat") {
    Const r;
    std::vector<const Const *> parts;
    for (const Const *c : in)
      if (c) parts.push_back(c);
    if (parts.empty()) throw RuleError("Concat of nothing");
    int64_t rank = int64_t(parts[0]->shape.size());
    int64_t axis = normAxis(a.getInt("axis", 0), rank);
    r.kind = parts[0]->kind;
    r.shape = parts[0]->shape;
    r.shape[size_t(axis)] = 0;
    for (const Const *c : parts) r.shape[size_t(axis)] += c->shape.at(size_t(axis));
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= r.shape[size_t(k)];
    for (int64_t o = 0; o < outer; ++o)
      for (const Const *c : parts) {
        int64_t block = c->numel() / std::max<int64_t>(outer, 1);
        for (int64_t i = 0; i < block; ++i) r.values.push_back(c->values[size_t(o * block + i)]);
      }
    return std::vector<Const>{r};
  }
  if (op == "Gather") {
    const Const &x = need(0), &idx = need(1);
    int64_t rank = int64_t(x.shape.size());
    int64_t axis = normAxis(a.getInt("axis", 0), rank);
    Const r;
    r.kind = x.kind;
    for (int64_t k = 0; k < axis; ++k) r.shape.push_back(x.shape[size_t(k)]);
    for (int64_t d : idx.shape) r.shape.push_back(d);
    for (int64_t k = axis + 1; k < rank; ++k) r.shape.push_back(x.shape[size_t(k)]);
    int64_t outer = 1, inner = 1, dim = x.shape[size_t(axis)];
    for (int64_t k = 0; k < axis; ++k) outer *= x.shape[size_t(k)];
    for (int64_t k = axis + 1; k < rank; ++k) inner *= x.shape[size_t(k)];
    for (int64_t o = 0; o < outer; ++o)
      for (double iv : idx.values) {
        int64_t i = toInt(iv);
        if (i < 0) i += dim;
        if (i < 0 || i >= dim) throw RuleError("Gather index " + std::to_string(toInt(iv)) + " out of range");
        for (int64_t k = 0; k < inner; ++k)
          r.values.push_back(x.values[size_t((o * dim + i) * inner + k)]);
      }
    return std::vector<Const>{r};
  }
  if (op == "Slice" || op == "Transpose" || op == "Trilu") {
    const Const &x = need(0);
    int64_t rank = int64_t(x.shape.size());
    std::vector<int64_t> strides(size_t(rank), 1);
    for (int64_t k = rank - 1; k > 0; --k) strides[size_t(k - 1)] = strides[size_t(k)] * x.shape[size_t(k)];
    Const r;
    r.kind = x.kind;
    if (op == "Trilu") {
      if (rank < 2) throw RuleError("Trilu of rank < 2");
      int64_t kk = in.size() > 1 && in[1] ? toInt(in[1]->values.at(0)) : 0;
      bool upper = a.getBool("upper", 1);
      r = x;
      int64_t rows = x.shape[size_t(rank - 2)], cols = x.shape[size_t(rank - 1)];
      for (int64_t i = 0; i < r.numel(); ++i) {
        int64_t c = i % cols, row = (i / cols) % rows;
        bool keep = upper ? c - row >= kk : c - row <= kk;
        if (!keep) r.values[size_t(i)] = 0;
      }
      return std::vector<Const>{r};
    }
    std::vector<int64_t> perm, begin(size_t(rank), 0), step(size_t(rank), 1);
    std::vector<int64_t> shape = x.shape;
    if (op == "Transpose") {
      perm = a.getInts("perm", {});
      if (perm.empty())
        for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
      for (size_t k = 0; k < perm.size(); ++k) shape[k] = x.shape.at(size_t(perm[k]));
    } else {
      for (int64_t k = 0; k < rank; ++k) perm.push_back(k);
      std::vector<int64_t> starts, ends, axes, steps;
      if (opset < 10) {
        starts = a.getInts("starts", {});
        ends = a.getInts("ends", {});
        axes = a.getInts("axes", {});
      } else {
        starts = ints(need(1));
        ends = ints(need(2));
        if (in.size() > 3 && in[3]) axes = ints(*in[3]);
        if (in.size() > 4 && in[4]) steps = ints(*in[4]);
      }
      if (axes.empty())
        for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
      for (size_t k = 0; k < axes.size(); ++k) {
        int64_t ax = normAxis(axes[k], rank), d = x.shape[size_t(ax)];
        int64_t st = steps.empty() ? 1 : steps[k];
        if (st == 0) throw RuleError("Slice step 0");
        int64_t s = starts[k] < 0 ? starts[k] + d : starts[k];
        int64_t e = ends[k] < 0 ? ends[k] + d : ends[k];
        if (st > 0) {
          s = std::clamp<int64_t>(s, 0, d);
          e = std::clamp<int64_t>(e, 0, d);
          shape[size_t(ax)] = std::max<int64_t>((e - s + st - 1) / st, 0);
        } else {
          s = std::clamp<int64_t>(s, -1, d - 1);
          e = std::clamp<int64_t>(e, -1, d - 1);
          shape[size_t(ax)] = std::max<int64_t>((s - e + (-st) - 1) / (-st), 0);
        }
        begin[size_t(ax)] = s;
        step[size_t(ax)] = st;
      }
    }
    r.shape = shape;
    int64_t n = product(shape);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, offset = 0;
      for (int64_t k = rank - 1; k >= 0; --k) {
        int64_t idx = rem % shape[size_t(k)];
        rem /= shape[size_t(k)];
        int64_t src = perm[size_t(k)];
        offset += (begin[size_t(src)] + idx * step[size_t(src)]) * strides[size_t(src)];
      }
      r.values.push_back(x.values[size_t(offset)]);
    }
    return std::vector<Const>{r};
  }
  return std::nullopt;
}

} // namespace mpc::frontend::onnx
