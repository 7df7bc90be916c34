//===- frontend/onnx/Import.cpp - the import driver ------------------------===//
//
// 1. Read the file, fix the --input dimensions, check it and infer shapes
//    (OnnxFile.h).
// 2. Known values: initializers and Constant nodes. Fuse the exporter's
//    GELU and layer-norm chains (Fuse.h).
// 3. Walk the nodes in the file's order (topological, as ONNX requires):
//    a node whose inputs are all known folds (Constant.h; Shape folds from
//    its input's shape); any other maps through its table entry
//    (OpMapping.h). Initializers take their role from their use: a
//    parameter (data of a computing node), a running statistic (batch
//    norm), or a constant (read by a mapping: shapes, axes, ratios).
// 4. Graph outputs are the model's outputs; --loss adds the loss on the one
//    output, fed by a new input "label"; the optimizer comes from the flags.
// 5. Write the model JSON, read it back with the ir reader, compare every
//    shape with ONNX's inference.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/Import.h"

#include "frontend/onnx/Fuse.h"
#include "frontend/onnx/OnnxFile.h"
#include "frontend/onnx/OpMapping.h"
#include "ir/Graph.h"
#include "support/Error.h"
#include "support/StringUtil.h"

#include <cmath>
#include <map>
#include <memory>
#include <regex>
#include <set>

namespace mpc::frontend::onnx {

using json = nlohmann::ordered_json;

std::pair<std::string, std::string> parseGroupRule(const std::string &text) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UserError("", "--group " + text, "expected REGEX=GROUP, e.g. '^/layers\\.[0-3]/=stage0'");
  std::string re = text.substr(0, eq), group = text.substr(eq + 1);
  try {
    std::regex r(re);
  } catch (const std::regex_error &e) {
    throw UserError("", "--group " + text, "bad regular expression " + quoteName(re) + ": " + e.what());
  }
  return {re, group};
}

std::string supportedOpList() {
  std::string s;
  for (const OpMapping *m : allOpMappings()) s += (s.empty() ? "" : ", ") + m->op;
  return s + "; folded when their inputs are known at import: Constant, Shape, " +
         "ConstantOfShape, Expand, Range, Where and the shape arithmetic around them";
}

std::string supportedOpTable() {
  std::string s = "| ONNX op | mpc |\n|---|---|\n";
  for (const OpMapping *m : allOpMappings()) s += "| " + m->op + " | " + m->summary + " |\n";
  std::set<std::string> foldOnly = foldableOps();
  for (const char *op : {"Constant", "Shape", "Size"}) foldOnly.insert(op);
  for (const std::string &op : foldOnly)
    if (!findOpMapping(op)) s += "| " + op + " | folded at import (inputs known) |\n";
  return s;
}

namespace {

/// An mpc name for an ONNX name: characters the IR reserves become '_'.
std::string sanitize(const std::string &s) {
  std::string out;
  for (char c : s) {
    bool bad = c <= ' ' || c > '~' || std::string_view("\"'%@,(){}").find(c) != std::string_view::npos;
    out += bad ? '_' : c;
  }
  if (out.empty()) out = "_";
  if (out.size() > 200) out = out.substr(0, 200);
  return out;
}

enum class Role { Param, Running, Frozen };

std::string describe(const ::onnx::NodeProto &n) {
  std::string name = n.name().empty() ? (n.output_size() ? n.output(0) : "?") : n.name();
  return "node " + quoteName(name) + " (" + n.op_type() + ")";
}

std::string unsupportedOpMessage(const std::string &op, int64_t opset) {
  return "op " + op + " (opset " + std::to_string(opset) + ") is not supported; mpc imports " +
         supportedOpList();
}

/// Before the ONNX library infers shapes: every op is one mpc maps, folds,
/// or fuses (Erf, inside PyTorch's GELU chain).
void refuseUnsupportedOps(const OnnxFile &f) {
  for (const auto &n : f.model.graph().node()) {
    const std::string &op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      throw UserError(f.file, describe(n), "op domain " + quoteName(n.domain()) +
                                               " is not supported; mpc imports the default domain");
    bool known = findOpMapping(op) || foldable(op) || op == "Constant" || op == "Shape" ||
                 op == "Size" || op == "Erf";
    if (!known) throw UserError(f.file, describe(n), unsupportedOpMessage(op, f.opset));
  }
  // The ONNX library's shape inference of windows divides by strides and
  // groups unchecked (libonnx 1.12): those out of range are refused first.
  for (const auto &n : f.model.graph().node()) {
    const std::string &op = n.op_type();
    if (op != "Conv" && op != "MaxPool" && op != "AveragePool") continue;
    for (const auto &a : n.attribute()) {
      bool positive = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      if (positive || a.name() == "pads")
        for (int64_t v : a.ints())
          if (v < (positive ? 1 : 0))
            throw UserError(f.file, describe(n),
                            "attribute " + quoteName(a.name()) + " holds " + std::to_string(v) +
                                (positive ? "; it must be at least 1" : "; pads must not be negative"));
      if (a.name() == "group" && a.i() < 1)
        throw UserError(f.file, describe(n), "attribute 'group' must be at least 1");
    }
  }
  // The ONNX library's shape inference indexes dimensions by an op's axis
  // unchecked for some ops (LayerNormalization in libonnx 1.12): an axis
  // out of its input's declared rank is refused first.
  std::map<std::string, int64_t> rank;
  const ::onnx::GraphProto &g = f.model.graph();
  for (const auto &t : g.initializer()) rank[t.name()] = t.dims_size();
  for (const auto *list : {&g.input(), &g.value_info()})
    for (const auto &v : *list)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        rank[v.name()] = v.type().tensor_type().shape().dim_size();
  for (const auto &n : g.node()) {
    if (n.input_size() == 0) continue;
    auto r = rank.find(n.input(0));
    const ::onnx::AttributeProto *axis = nullptr;
    for (const auto &a : n.attribute())
      if (a.name() == "axis") axis = &a;
    if (r == rank.end() || !axis) continue;
    int64_t hi = n.op_type() == "Flatten" ? r->second : r->second - 1;
    if (axis->i() < -r->second || axis->i() > hi)
      throw UserError(f.file, describe(n),
                      "axis " + std::to_string(axis->i()) + " is out of range for input " +
                          quoteName(n.input(0)) + " of rank " + std::to_string(r->second));
  }
}

class Importer final : public MapContext {
public:
  Importer(OnnxFile f, const ImportOptions &opt) : file_(f.file), opt_(opt), f_(std::move(f)) {}

  ImportResult run() {
    ::onnx::GraphProto &g = *f_.model.mutable_graph();
    for (const auto &t : g.initializer()) {
      try {
        known_[t.name()] = readTensor(t);
      } catch (const RuleError &e) {
        throw UserError(file_, "initializer " + t.name(), e.what());
      }
      initializers_.insert(t.name());
    }
    for (const auto &n : g.node())
      if (n.op_type() == "Constant") foldConstantNode(n);
    try {
      fuseDecompositions(g, [&](const std::string &v) -> const Const * {
        auto it = known_.find(v);
        return it == known_.end() ? nullptr : &it->second;
      });
    } catch (const RuleError &e) {
      throw UserError(file_, "", e.what());
    }
    for (const auto &n : g.node())
      for (const std::string &in : n.input()) uses_[in]++;
    for (const auto &o : g.output()) uses_[o.name()]++;
    for (const auto &in : g.input())
      if (!initializers_.count(in.name())) graphInputs_.insert(in.name());
    for (int i = 0; i < g.node_size(); ++i) {
      try {
        visit(g.node(i), i);
      } catch (const RuleError &e) { // an attribute of the wrong type, a shape out of range
        throw UserError(file_, describe(g.node(i)), e.what());
      }
    }
    finishOutputs();
    ruleUsed_.resize(opt_.groups.size());
    for (size_t k = 0; k < opt_.groups.size(); ++k)
      if (!ruleUsed_[k])
        notes_.push_back("mpc import-onnx: warning: --group " + opt_.groups[k].first + "=" +
                         opt_.groups[k].second + " matches no node");
    for (const InputSpec &in : opt_.inputs)
      if (!usedInputs_.count(in.name))
        notes_.push_back("mpc import-onnx: warning: --input " + in.name +
                         " is not used by the imported model");
    ImportResult r;
    r.frozen = frozen_;
    r.modelJson = writeModel();
    validate(r.modelJson);
    r.arrays = arrays_;
    r.notes = notes_;
    return r;
  }

  // MapContext
  const ::onnx::NodeProto &node() const override { return *cur_; }
  const Attrs &attrs() const override { return *attrs_; }
  int64_t opset() const override { return f_.opset; }
  bool training() const override { return !opt_.training.inference; }

  bool has(size_t i) const override {
    return int(i) < cur_->input_size() && !cur_->input(int(i)).empty();
  }

  const Const *constant(size_t i) override {
    if (!has(i)) return nullptr;
    auto it = known_.find(cur_->input(int(i)));
    if (it == known_.end()) return nullptr;
    return &it->second;
  }

  Value data(size_t i) override {
    if (!has(i)) fail("input " + std::to_string(i) + " is missing");
    const std::string &name = cur_->input(int(i));
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (graphInputs_.count(name)) return addInput(name);
    auto k = known_.find(name);
    if (k == known_.end()) fail("input " + quoteName(name) + " is not produced by any node");
    if (initializers_.count(name)) return addParam(name, k->second, Role::Param);
    return constantValue(name, k->second);
  }

  std::string runningStat(size_t i) override {
    if (!has(i) || !initializers_.count(cur_->input(int(i))))
      fail("input " + std::to_string(i) +
           " (a running statistic) must be an initializer of the model");
    const std::string &name = cur_->input(int(i));
    auto r = roles_.find(name);
    if (r != roles_.end() && r->second.first != Role::Running)
      fail("initializer " + quoteName(name) + " is both a running statistic and a parameter");
    if (r == roles_.end()) {
      const Const &c = known_.at(name);
      roles_[name] = {Role::Running, sanitizeUnique(name)};
      addArray(roles_[name].second, c);
    }
    return roles_[name].second;
  }

  bool outputUsed(size_t k) const override {
    if (int(k) >= cur_->output_size() || cur_->output(int(k)).empty()) return false;
    auto it = uses_.find(cur_->output(int(k)));
    return it != uses_.end() && it->second > 0;
  }

  std::string outName(size_t k) const override { return outNames_.at(k); }
  std::string tmpName(const std::string &suffix) const override {
    return outNames_.at(0) + "/" + suffix;
  }

  Value emit(const std::string &name, const std::string &op, std::vector<Value> inputs,
             json attrs, Shape shape, bool i32) override {
    if (!names_.insert(name).second)
      fail("the mpc name " + quoteName(name) + " is taken by another value");
    json n = {{"name", name}, {"op", op}};
    json in = json::array();
    for (const Value &v : inputs) in.push_back(v.name);
    n["inputs"] = in;
    if (!attrs.empty()) n["attrs"] = attrs;
    if (!group_.empty()) n["device"] = group_;
    pointers_["/nodes/" + std::to_string(nodes_.size())] = nodeIndex_;
    nodes_.push_back(n);
    return Value{name, std::move(shape), i32};
  }

  [[noreturn]] void fail(const std::string &msg) const override {
    throw UserError(file_, describe(*cur_), msg);
  }

private:

  std::string sanitizeUnique(const std::string &onnxName) {
    std::string s = sanitize(onnxName), out = s;
    for (int k = 1; reserved_.count(out); ++k) out = s + "_" + std::to_string(k);
    reserved_.insert(out);
    return out;
  }

  void foldConstantNode(const ::onnx::NodeProto &n) {
    Attrs a(n);
    std::optional<Const> c;
    try {
      if (a.has("value")) c = a.getTensor("value");
      else if (a.has("value_float")) c = Const{Const::Float, {}, {a.getFloat("value_float", 0)}};
      else if (a.has("value_int")) c = Const{Const::Int, {}, {double(a.getInt("value_int", 0))}};
      else if (a.has("value_floats") || a.has("value_ints")) {
        const auto *p = a.find(a.has("value_floats") ? "value_floats" : "value_ints");
        Const v;
        v.kind = a.has("value_floats") ? Const::Float : Const::Int;
        if (v.kind == Const::Float) for (float x : p->floats()) v.values.push_back(x);
        else for (int64_t x : p->ints()) v.values.push_back(double(x));
        v.shape = {v.numel()};
        c = v;
      }
    } catch (const RuleError &e) {
      throw UserError(file_, describe(n), e.what());
    }
    if (!c)
      throw UserError(file_, describe(n), "a Constant of a kind mpc does not read (sparse or string)");
    known_[n.output(0)] = *c;
  }

  /// The group of the current node by --group (first rule that matches).
  std::string groupOf(const ::onnx::NodeProto &n) {
    std::string name = n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name();
    ruleUsed_.resize(opt_.groups.size());
    for (size_t k = 0; k < opt_.groups.size(); ++k)
      if (std::regex_search(name, std::regex(opt_.groups[k].first))) {
        ruleUsed_[k] = true;
        return opt_.groups[k].second;
      }
    return "";
  }

  void visit(const ::onnx::NodeProto &n, int index) {
    if (n.op_type() == "Constant") return;
    cur_ = &n;
    nodeIndex_ = index;
    Attrs a(n);
    attrs_ = &a;
    group_ = groupOf(n);
    // Shape folds from its input's shape, known or not.
    if (n.op_type() == "Shape") {
      Shape s = shapeOfInput(0);
      int64_t rank = int64_t(s.size());
      int64_t start = a.getInt("start", 0), end = a.getInt("end", rank);
      start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
      end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
      Const c{Const::Int, {std::max<int64_t>(end - start, 0)}, {}};
      for (int64_t k = start; k < end; ++k) c.values.push_back(double(s[size_t(k)]));
      known_[n.output(0)] = c;
      return;
    }
    if (n.op_type() == "Size") {
      try {
        known_[n.output(0)] = Const{Const::Int, {}, {double(shapeProduct(shapeOfInput(0)))}};
      } catch (const RuleError &e) {
        fail(e.what());
      }
      return;
    }
    // PyTorch's exporter writes equal initializers once and the others as
    // Identity of it (two norms' ones): each output is an initializer of
    // its own, as the module's parameters are.
    if (n.op_type() == "Identity" && n.input_size() == 1 && initializers_.count(n.input(0))) {
      known_[n.output(0)] = known_.at(n.input(0));
      initializers_.insert(n.output(0));
      return;
    }
    // Fold when every given input is known, and none is a float
    // initializer: a computation on a parameter (a transposed weight) runs
    // in the model, so that the parameter itself trains.
    bool allKnown = true;
    std::vector<const Const *> in;
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) {
        in.push_back(nullptr);
        continue;
      }
      auto it = known_.find(n.input(i));
      if (it == known_.end() || (initializers_.count(n.input(i)) && it->second.kind == Const::Float)) {
        allKnown = false;
        break;
      }
      in.push_back(&it->second);
    }
    if (allKnown && foldable(n.op_type())) {
      std::optional<std::vector<Const>> out;
      try {
        out = fold(n, f_.opset, in);
      } catch (const RuleError &e) {
        fail(e.what());
      }
      if (out) {
        for (int k = 0; k < n.output_size() && k < int(out->size()); ++k)
          known_[n.output(k)] = (*out)[size_t(k)];
        return;
      }
    }
    const OpMapping *m = findOpMapping(n.op_type());
    if (!m && (foldable(n.op_type()) || n.op_type() == "Size"))
      fail("op " + n.op_type() + " is folded at import only, and input " +
           quoteName(firstUnknownInput(n)) + " is known only at run time");
    if (!m) fail(unsupportedOpMessage(n.op_type(), f_.opset));
    outNames_.clear();
    for (const std::string &o : n.output()) outNames_.push_back(o.empty() ? "" : sanitizeUnique(o));
    std::vector<Value> outs;
    try {
      outs = m->map(*this);
    } catch (const RuleError &e) {
      fail(e.what());
    }
    for (size_t k = 0; k < outs.size() && int(k) < n.output_size(); ++k)
      if (!n.output(int(k)).empty()) values_[n.output(int(k))] = outs[k];
    for (int k = int(outs.size()); k < n.output_size(); ++k)
      if (outputUsed(size_t(k)))
        fail("output " + std::to_string(k) + " (" + quoteName(n.output(k)) +
             ") is used, and mpc imports only the first " + std::to_string(outs.size()) +
             " output" + (outs.size() == 1 ? "" : "s") + " of " + n.op_type());
    attrs_ = nullptr;
  }

  std::string firstUnknownInput(const ::onnx::NodeProto &n) const {
    for (const std::string &in : n.input())
      if (!in.empty() && !known_.count(in)) return in;
    return "?";
  }

  Shape shapeOfInput(size_t i) {
    const std::string &name = cur_->input(int(i));
    if (auto it = values_.find(name); it != values_.end()) return it->second.shape;
    if (auto it = known_.find(name); it != known_.end()) return it->second.shape;
    if (graphInputs_.count(name)) return addInput(name).shape;
    fail("input " + quoteName(name) + " has no known shape");
  }

  Value addInput(const std::string &name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    const ::onnx::ValueInfoProto *vi = nullptr;
    for (const auto &i : f_.model.graph().input())
      if (i.name() == name) vi = &i;
    const auto &tt = vi->type().tensor_type();
    int32_t et = tt.elem_type();
    Const::Kind kind = kindOfElementType(et);
    if (kind == Const::Bool || (kind == Const::Float && et != ::onnx::TensorProto::FLOAT) ||
        (kind == Const::Int && et != ::onnx::TensorProto::INT64 && et != ::onnx::TensorProto::INT32))
      throw UserError(file_, "input " + name,
                      "input " + quoteName(name) + " is " + elementTypeName(et) +
                          "; mpc takes float (f32) and int64/int32 (as i32) inputs");
    Shape s;
    int k = 0;
    for (const auto &d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() <= 0)
        throw UserError(file_, "input " + name,
                        "dimension " + std::to_string(k) + " of input " + quoteName(name) +
                            " is " + (d.has_dim_param() ? quoteName(d.dim_param()) : "unknown") +
                            ": give it with --input " + name + "=D0,D1,..." +
                            (kind == Const::Int ? ":i32" : ""));
      s.push_back(d.dim_value());
      ++k;
    }
    if (s.empty())
      throw UserError(file_, "input " + name,
                      "input " + quoteName(name) + " is a scalar; mpc inputs have a batch axis");
    Value v{sanitizeUnique(name), s, kind == Const::Int};
    json in = {{"shape", s}};
    if (v.i32) in["dtype"] = "i32";
    if (!group_.empty()) in["device"] = group_;
    inputs_[v.name] = in;
    names_.insert(v.name);
    values_[name] = v;
    usedInputs_.insert(name);
    return v;
  }

  /// The initial values a parameter gets in the model (its initializer's
  /// come with --params-out): the initializer's one value when all are
  /// equal, else PyTorch's default for a layer's weight,
  /// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and zeros for a vector.
  static json defaultInit(const Const &c) {
    const Shape &s = c.shape;
    // An initializer of one value (a norm's ones, a bias's zeros) keeps it.
    if (c.uniform()) {
      double v = double(float(c.values[0]));
      if (v == 0) return "zeros";
      if (v == 1) return "ones";
      return json{{"constant", v}};
    }
    if (s.size() < 2) return "zeros";
    double fanIn = s[0] > 0 ? double(shapeProduct(s) / s[0]) : 1.0;
    double b = 1 / std::sqrt(std::max(fanIn, 1.0));
    return json{{"uniform", {{"low", -b}, {"high", b}}}};
  }

  Value addParam(const std::string &onnxName, const Const &c, Role role) {
    auto r = roles_.find(onnxName);
    if (r != roles_.end()) {
      if (r->second.first == Role::Running)
        fail("initializer " + quoteName(onnxName) + " is both a running statistic and data");
      return values_.at(onnxName);
    }
    if (c.kind != Const::Float)
      fail("input " + quoteName(onnxName) + " is an integer constant used as data; mpc "
           "computes on float values (integer inputs index embeddings)");
    std::string name = sanitizeUnique(onnxName);
    json p = {{"shape", c.shape}, {"init", defaultInit(c)}};
    if (role == Role::Frozen) {
      p["lr_mult"] = 0;
      p["wd_mult"] = 0;
    }
    if (!group_.empty()) p["device"] = group_;
    params_[name] = p;
    names_.insert(name);
    roles_[onnxName] = {role, name};
    addArray(name, c);
    Value v{name, c.shape, false};
    values_[onnxName] = v;
    return v;
  }

  void addArray(const std::string &name, const Const &c) {
    FloatTensor a;
    a.name = name;
    a.shape = c.shape;
    for (double x : c.values) a.data.push_back(float(x));
    arrays_.push_back(std::move(a));
  }

  /// A Constant (or folded value) used as data: a fill when every element
  /// is the same, else a frozen parameter whose values --params-out holds.
  Value constantValue(const std::string &onnxName, const Const &c) {
    if (auto it = values_.find(onnxName); it != values_.end()) return it->second;
    if (c.kind != Const::Float)
      fail("input " + quoteName(onnxName) + " is an integer or boolean constant used as data; "
           "mpc computes on float values");
    if (c.uniform() || c.values.empty()) {
      std::string name = sanitizeUnique(onnxName);
      double v = c.values.empty() ? 0.0 : double(float(c.values[0]));
      Value out = emit(name, "fill", {}, json{{"value", v}, {"shape", c.shape}}, c.shape, false);
      values_[onnxName] = out;
      return out;
    }
    frozen_.push_back(onnxName);
    return addParam(onnxName, c, Role::Frozen);
  }

  void finishOutputs() {
    const ::onnx::GraphProto &g = f_.model.graph();
    cur_ = nullptr;
    std::vector<Value> heads;
    for (const auto &o : g.output()) {
      auto it = values_.find(o.name());
      if (it == values_.end())
        throw UserError(file_, "output " + o.name(),
                        known_.count(o.name())
                            ? "output " + quoteName(o.name()) +
                                  " is a constant known at import; mpc outputs computed values"
                            : "output " + quoteName(o.name()) + " is not produced by any node");
      Value v = it->second;
      // An output that is an input, a parameter or another value under
      // another name gets a node of its own, under the output's name.
      std::string want = sanitize(o.name());
      if (v.name != want || inputs_.contains(v.name) || params_.contains(v.name)) {
        std::string name = names_.count(want) ? want + "/out" : want;
        json n = {{"name", name}, {"op", "reshape"}, {"inputs", {v.name}},
                  {"attrs", {{"shape", v.shape}}}};
        names_.insert(name);
        nodes_.push_back(n);
        v.name = name;
      }
      outputs_.push_back(v.name);
      heads.push_back(v);
    }
    if (opt_.training.inference) return;
    if (opt_.training.loss.empty())
      throw UserError(file_, "",
                      "an ONNX model carries no loss: give --loss softmax_cross_entropy|mse to "
                      "train it, or --inference");
    if (heads.size() != 1)
      throw UserError(file_, "graph.output",
                      "--loss needs a model with one output, got " + std::to_string(heads.size()));
    const Value &head = heads[0];
    bool classes = opt_.training.loss == "softmax_cross_entropy";
    if (classes && head.shape.size() < 2)
      throw UserError(file_, "output " + head.name,
                      "--loss softmax_cross_entropy needs an output of classes on its last axis, "
                      "got " + shapeText(head.shape));
    // The labels: one class per row of the output's leading axes, or the
    // output's shape. A dataset's rows are the batch: when the output's
    // first axis is not the inputs' (logits [B*T, V] from ids [B, T]), the
    // label input is [B, ...] and reshaped in the model.
    Shape want = classes ? Shape(head.shape.begin(), head.shape.end() - 1) : head.shape;
    Shape given = want;
    int64_t batch = inputs_.empty() ? 0 : inputs_.begin().value()["shape"][0].get<int64_t>();
    if (batch > 0 && !want.empty() && want[0] != batch && shapeProduct(want) % batch == 0)
      given = {batch, shapeProduct(want) / batch};
    Value label = labelInput(given, classes);
    if (given != want) {
      json n = {{"name", "label/reshaped"}, {"op", "reshape"}, {"inputs", {"label"}},
                {"attrs", {{"shape", want}}}};
      names_.insert("label/reshaped");
      nodes_.push_back(n);
      label = Value{"label/reshaped", want, classes};
    }
    lossNode(classes ? "softmax_cross_entropy" : "mse_loss", head, label);
  }

  Value labelInput(const Shape &shape, bool i32) {
    std::string name = "label";
    if (names_.count(name) || graphInputs_.count(name))
      throw UserError(file_, "", "the model already has a value named 'label'; mpc's added loss "
                                 "takes its labels from an input of that name");
    for (const InputSpec &s : opt_.inputs)
      if (s.name == name) {
        if (s.i32 != i32 || s.shape != shape)
          throw UserError("", "--input label",
                          "the labels of --loss " + opt_.training.loss + " are " +
                              (i32 ? "i32" : "f32") + shapeText(shape));
        usedInputs_.insert(name);
      }
    json in = {{"shape", shape}};
    if (i32) in["dtype"] = "i32";
    inputs_[name] = in;
    names_.insert(name);
    return Value{name, shape, i32};
  }

  void lossNode(const std::string &op, const Value &head, const Value &label) {
    json n = {{"name", "loss"}, {"op", op}, {"inputs", {head.name, label.name}}};
    if (names_.count("loss"))
      throw UserError(file_, "", "the model already has a value named 'loss'");
    names_.insert("loss");
    nodes_.push_back(n);
    loss_ = "loss";
  }

  std::string writeModel() const {
    ModelParts m;
    m.name = opt_.modelName.empty() ? modelNameFromFile(file_, {".onnx"}) : opt_.modelName;
    m.inputs = inputs_;
    m.params = params_;
    m.nodes = nodes_;
    if (!opt_.training.inference) m.loss = loss_;
    m.outputs = outputs_;
    if (!opt_.training.inference) m.optimizer = optimizerJson(opt_.training);
    return writeModelText(m);
  }

  /// Reads the model back (mpc's shape rules run) and compares each ONNX
  /// value's shape; errors name the ONNX node.
  void validate(const std::string &text) {
    std::string file = opt_.outputFile.empty() ? "model.json" : opt_.outputFile;
    std::unique_ptr<ir::Graph> g = readBack<int>(
        text, file, pointers_, [&](const int *node, const std::string &what) {
          if (!node) throw UserError(file_, "", what);
          throw UserError(file_, describe(f_.model.graph().node(*node)), what);
        });
    for (const auto &[onnxName, v] : values_) {
      auto it = f_.shapes.find(onnxName);
      if (it == f_.shapes.end() || it->second.empty()) continue;
      bool complete = true;
      for (int64_t d : it->second) complete &= d >= 0;
      const ir::Node *n = g->find(v.name);
      // Inputs and parameters take their shapes from the file itself.
      if (!complete || !n || !n->isOp()) continue;
      Shape have(n->type.shape.begin(), n->type.shape.end());
      if (have != it->second && f_.declared.count(onnxName))
        throw UserError(file_, "value " + onnxName,
                        "the model declares " + quoteName(onnxName) + " of shape " +
                            shapeText(it->second) + ", but the node that makes it computes " +
                            shapeText(have));
      if (have != it->second)
        throw InternalError("import-onnx: value '" + onnxName + "' has shape " +
                            shapeText(it->second) + " by ONNX's inference but " + n->type.str() +
                            " by mpc's rule for " + n->info().name);
    }
  }

  std::string file_;
  const ImportOptions &opt_;
  OnnxFile f_;
  std::map<std::string, Const> known_;
  std::set<std::string> initializers_, graphInputs_, usedInputs_;
  std::map<std::string, int> uses_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::pair<Role, std::string>> roles_;
  std::vector<std::string> frozen_;
  std::set<std::string> names_, reserved_;
  std::vector<bool> ruleUsed_; ///< per --group rule: it matched a node
  json inputs_ = json::object(), params_ = json::object(), nodes_ = json::array();
  std::vector<std::string> outputs_;
  std::optional<std::string> loss_;
  std::map<std::string, int> pointers_;
  std::vector<FloatTensor> arrays_;
  std::vector<std::string> notes_;
  const ::onnx::NodeProto *cur_ = nullptr;
  int nodeIndex_ = -1;
  const Attrs *attrs_ = nullptr;
  std::string group_;
  std::vector<std::string> outNames_;
};

} // namespace

ImportResult importOnnx(const std::string &file, const ImportOptions &options) {
  return Importer(readOnnxFile(file, options.inputs, refuseUnsupportedOps), options).run();
}

ImportResult importOnnxBytes(const std::string &bytes, const std::string &file,
                             const ImportOptions &options) {
  return Importer(parseOnnxFile(bytes, file, options.inputs, refuseUnsupportedOps), options).run();
}

} // namespace mpc::frontend::onnx
