//===- frontend/mxnet/Import.cpp - the import driver ---------------------===//
//
// 1. Check --input names against the symbol's variables; the batch is the
//    first --input's leading dimension.
// 2. Visit the nodes the heads depend on, operands first; map each op node
//    (OpMapping.cpp). Variables take their role from their first use: data
//    (an --input), parameter, label, running statistic.
// 3. Outputs are the heads' forward values; the loss comes from the loss
//    head, or from --loss; the optimizer from the flags.
// 4. Write the model JSON, read it back with the ir reader, compare shapes.
//
//===----------------------------------------------------------------------===//
#include "frontend/mxnet/Import.h"

#include "frontend/mxnet/AttrParse.h"
#include "frontend/mxnet/OpMapping.h"
#include "ir/Device.h"
#include "ir/Graph.h"
#include "support/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace mpc::frontend::mxnet {

using json = nlohmann::ordered_json;

namespace {

int64_t numel(const Shape &s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

/// MXNet's __init__ ("[\"xavier\", {\"magnitude\": 2}]") as an mpc
/// initialiser, or nullopt when mpc has no equivalent.
std::optional<json> mapInit(const std::string &text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception &) {
    return std::nullopt;
  }
  if (j.is_string()) j = json::array({j, json::object()});
  if (!j.is_array() || j.size() != 2 || !j[0].is_string() || !j[1].is_object()) return std::nullopt;
  std::string kind = j[0].get<std::string>();
  const json &a = j[1];
  auto num = [&](const char *k, double d) {
    return a.contains(k) && a[k].is_number() ? a[k].get<double>() : d;
  };
  auto str = [&](const char *k, const std::string &d) {
    return a.contains(k) && a[k].is_string() ? a[k].get<std::string>() : d;
  };
  if (kind == "zero" || kind == "zeros") return json("zeros");
  if (kind == "one" || kind == "ones") return json("ones");
  if (kind == "constant") return json{{"constant", num("value", 0)}};
  if (kind == "uniform") {
    double s = num("scale", 0.07);
    return json{{"uniform", {{"low", -s}, {"high", s}}}};
  }
  if (kind == "normal") return json{{"normal", {{"mean", 0.0}, {"std", num("sigma", 0.01)}}}};
  if (kind == "xavier" && str("rnd_type", "uniform") == "uniform" &&
      str("factor_type", "avg") == "avg")
    return json{{"xavier", {{"magnitude", num("magnitude", 3)}}}};
  return std::nullopt;
}

enum class Role { Input, Param, Label, Aux, Unused };

const char *roleName(Role r) {
  switch (r) {
  case Role::Input: return "data";
  case Role::Param: return "a parameter";
  case Role::Label: return "a label";
  case Role::Aux: return "a running statistic";
  case Role::Unused: return "a fixed (unused) parameter";
  }
  return "?";
}

struct VarUse {
  Role role;
  Value value;
  std::string user; ///< the node that first used it
};

class Importer final : public MapContext {
public:
  Importer(const SymbolFile &sym, const ImportOptions &opt) : sym_(sym), opt_(opt) {}

  ImportResult run() {
    checkInputs();
    std::vector<bool> needed = reachable();
    for (int idx : sym_.order) {
      if (!needed[size_t(idx)] || sym_.nodes[size_t(idx)].isVariable()) continue;
      mapNode(idx);
    }
    finishHeads();
    ImportResult r;
    for (const InputSpec &in : opt_.inputs)
      if (!vars_.count(in.name))
        notes_.push_back("mpc import-mxnet: warning: --input " + in.name +
                         " is not used by the imported model");
    r.modelJson = writeModel();
    validate(r.modelJson);
    r.arrays = arrays_;
    r.notes = notes_;
    return r;
  }

  // MapContext
  const SymbolNode &node() const override { return *cur_; }
  AttrReader &attrs() override { return *reader_; }
  size_t numInputs() const override { return cur_->inputs.size(); }
  bool inference() const override { return opt_.training.inference; }
  int64_t batch() const override { return batch_; }

  Value data(size_t i) override {
    const SymbolNode *v = inputNode(i);
    if (!v) return values_.at(cur_->inputs[i].node);
    if (const VarUse *u = use(*v, Role::Input)) return u->value;
    auto it = given_.find(v->name);
    if (it == given_.end())
      fail("input '" + argName(i) + "' is the variable " + quoteName(v->name) +
           ", which is data here: give its shape with --input " + quoteName(v->name, "") +
           "=D0,D1,...");
    Value val{v->name, it->second.shape, it->second.i32};
    checkShapeAnnotation(*v, val.shape);
    json in = {{"shape", val.shape}};
    if (val.i32) in["dtype"] = "i32";
    if (v->ctxGroup) in["device"] = group(*v, *v->ctxGroup);
    addLeaf(inputs_, "/inputs/", v->name, in, *v);
    vars_[v->name] = {Role::Input, val, cur_->name};
    return val;
  }

  Value param(size_t i, const Shape &shape, const json &init) override {
    const SymbolNode *v = variableInput(i, "a parameter");
    if (const VarUse *u = use(*v, Role::Param)) {
      if (u->value.shape != shape)
        fail("shares parameter " + quoteName(v->name) + " with " + quoteName(u->user) +
             ", which needs shape " + tupleText(u->value.shape) + ", not " + tupleText(shape));
      return u->value;
    }
    checkShapeAnnotation(*v, shape);
    if (v->dtype && *v->dtype != "0")
      throw UserError(sym_.file, v->pointer,
                      "parameter " + v->describe() + " has __dtype__ " + quoteName(*v->dtype, "") +
                          "; mpc trains float32 (0) parameters only");
    json p = {{"shape", shape}, {"init", paramInit(*v, init)}};
    if (std::string g = v->ctxGroup ? *v->ctxGroup : cur_->ctxGroup.value_or(""); !g.empty())
      p["device"] = group(v->ctxGroup ? *v : *cur_, g);
    for (const char *k : {"lr_mult", "wd_mult"}) {
      std::optional<std::string> s = std::string(k) == "lr_mult" ? v->lrMult : v->wdMult;
      std::string opKey = argName(i) + "_" + k;
      if (!s && reader_->has(opKey)) s = reader_->getString(opKey);
      if (!s) continue;
      double m = 0;
      try {
        m = parseFloatAttr(*s);
      } catch (const RuleError &e) {
        throw UserError(sym_.file, v->pointer,
                        std::string(k) + " of " + v->describe() + ": " + e.what());
      }
      if (m < 0)
        throw UserError(sym_.file, v->pointer,
                        std::string(k) + " of " + v->describe() + " must be >= 0");
      if (m != 1.0) p[k] = m;
    }
    addLeaf(params_, "/params/", v->name, p, *v);
    Value val{v->name, shape, false};
    vars_[v->name] = {Role::Param, val, cur_->name};
    arrays_.push_back({v->name, shape, false, false, cur_->name});
    return val;
  }

  std::string aux(size_t i, const Shape &shape) override {
    const SymbolNode *v = variableInput(i, "a running statistic");
    if (const VarUse *u = use(*v, Role::Aux)) return u->value.name;
    checkShapeAnnotation(*v, shape);
    vars_[v->name] = {Role::Aux, Value{v->name, shape, false}, cur_->name};
    arrays_.push_back({v->name, shape, true, false, cur_->name});
    return v->name;
  }

  void unused(size_t i, const Shape &shape) override {
    const SymbolNode *v = variableInput(i, "a parameter");
    if (use(*v, Role::Unused)) return;
    checkShapeAnnotation(*v, shape);
    vars_[v->name] = {Role::Unused, Value{v->name, shape, false}, cur_->name};
    arrays_.push_back({v->name, shape, false, true, cur_->name});
  }

  Value label(size_t i, const Shape &shape, bool i32) override {
    const SymbolNode *v = variableInput(i, "a label");
    if (const VarUse *u = use(*v, Role::Label)) return u->value;
    return makeLabel(v->name, shape, i32, v);
  }

  Value emit(const std::string &suffix, const std::string &op, std::vector<Value> inputs,
             json attrs, Shape shape, bool i32) override {
    std::string name = suffix.empty() ? cur_->name : cur_->name + "/" + suffix;
    json n = {{"name", name}, {"op", op}};
    json in = json::array();
    for (const Value &v : inputs) in.push_back(v.name);
    n["inputs"] = in;
    if (!attrs.empty()) n["attrs"] = attrs;
    if (cur_->ctxGroup) n["device"] = group(*cur_, *cur_->ctxGroup);
    claimName(name);
    pointers_["/nodes/" + std::to_string(nodes_.size())] = cur_;
    nodes_.push_back(n);
    expected_[name] = {shape, i32};
    return Value{name, std::move(shape), i32};
  }

  void setLoss(const Value &loss) override {
    if (loss_)
      fail("a second loss head (the first is " + quoteName(lossHead_->name) +
           "); mpc trains one loss: import a symbol with one head");
    loss_ = loss;
    lossHead_ = cur_;
  }

private:
  void checkInputs() {
    std::set<std::string> variables;
    for (const SymbolNode &n : sym_.nodes)
      if (n.isVariable()) variables.insert(n.name);
    for (const InputSpec &s : opt_.inputs) {
      if (given_.count(s.name)) throw UserError("", "--input " + s.name, "given twice");
      bool gluonLabel = !opt_.training.loss.empty() && s.name == "label";
      if (!variables.count(s.name) && !gluonLabel) {
        std::string list;
        for (const std::string &v : variables)
          list += (list.empty() ? "" : ", ") + quoteName(v, "");
        throw UserError(sym_.file, "--input " + s.name,
                        "the symbol has no variable " + quoteName(s.name) +
                            " (variables: " + list + ")");
      }
      given_[s.name] = s;
    }
    if (opt_.inputs.empty())
      throw UserError("", "--input", "give the shape of the data, e.g. --input data=64,784");
    batch_ = opt_.inputs[0].shape[0];
  }

  std::vector<bool> reachable() const {
    std::vector<bool> seen(sym_.nodes.size(), false);
    std::vector<int> work;
    for (const Entry &h : sym_.heads) work.push_back(h.node);
    while (!work.empty()) {
      int v = work.back();
      work.pop_back();
      if (seen[size_t(v)]) continue;
      seen[size_t(v)] = true;
      for (const Entry &e : sym_.nodes[size_t(v)].inputs) work.push_back(e.node);
    }
    return seen;
  }

  void mapNode(int idx) {
    const SymbolNode &n = sym_.nodes[size_t(idx)];
    const OpMapping *m = findOpMapping(n.op);
    if (!m)
      throw UserError(sym_.file, n.pointer + "/op",
                      "unsupported MXNet op " + quoteName(n.op) + " in " + quoteName(n.name) +
                          " (supported: " + supportedOpList() + ")");
    cur_ = &n;
    mapping_ = m;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k].index != 0) {
        const SymbolNode &src = sym_.nodes[size_t(n.inputs[k].node)];
        throw UserError(sym_.file, n.pointer + "/inputs/" + std::to_string(k),
                        n.describe() + " uses output " + std::to_string(n.inputs[k].index) +
                            " of " + src.describe() + "; only output 0 is supported");
      }
    AttrReader reader(sym_, n);
    reader_ = &reader;
    // Per-argument annotations on the op ("weight_lr_mult", MXNet < 0.9.4)
    // are read by param(); elsewhere they mean nothing.
    for (const std::string &a : m->args)
      for (const char *k : {"_lr_mult", "_wd_mult"}) reader.ignore({(a + k).c_str()});
    Value v = m->map(*this);
    reader.finish();
    values_[idx] = v;
    reader_ = nullptr;
  }

  void finishHeads() {
    for (size_t i = 0; i < sym_.heads.size(); ++i) {
      const Entry &h = sym_.heads[i];
      const SymbolNode &n = sym_.nodes[size_t(h.node)];
      if (n.isVariable() || h.index != 0)
        throw UserError(sym_.file, "/heads/" + std::to_string(i),
                        "head " + n.describe() +
                            (h.index ? " output " + std::to_string(h.index) : "") +
                            " is not an op's first output; it cannot be a model output");
      outputs_.push_back(values_.at(h.node).name);
    }
    if (opt_.training.inference) return;
    if (!opt_.training.loss.empty()) {
      if (loss_)
        throw UserError(sym_.file, lossHead_->pointer,
                        "--loss " + opt_.training.loss + " given, but the symbol has the loss head " +
                            lossHead_->describe() +
                            "; drop --loss (it is for symbols without "
                            "one, e.g. Gluon exports)");
      if (sym_.heads.size() != 1)
        throw UserError(sym_.file, "/heads",
                        "--loss needs a symbol with one head, got " +
                            std::to_string(sym_.heads.size()));
      addGluonLoss();
      return;
    }
    if (!loss_)
      throw UserError(sym_.file, "/heads",
                      "the symbol has no loss head (SoftmaxOutput, LinearRegressionOutput); give "
                      "--loss softmax_cross_entropy|mse to train it, or --inference");
  }

  /// --loss for a head without one: a label input named "label".
  void addGluonLoss() {
    const Entry &h = sym_.heads[0];
    cur_ = &sym_.nodes[size_t(h.node)];
    Value head = values_.at(h.node);
    AttrReader reader(sym_, *cur_);
    reader_ = &reader;
    if (opt_.training.loss == "softmax_cross_entropy") {
      if (head.shape.size() != 2)
        fail("--loss softmax_cross_entropy needs a (batch, classes) head, got " +
             tupleText(head.shape));
      Value label = makeLabel("label", {head.shape[0]}, true, nullptr);
      setLoss(emit("loss", "softmax_cross_entropy", {head, label}, json::object(), {}, false));
    } else {
      Value label = makeLabel("label", head.shape, false, nullptr);
      setLoss(emit("loss", "mse_loss", {head, label}, json::object(), {}, false));
    }
    reader_ = nullptr;
  }

  /// A label input of `shape` (or the --input shape of as many elements,
  /// reshaped).
  Value makeLabel(const std::string &name, const Shape &shape, bool i32, const SymbolNode *v) {
    Value val{name, shape, i32};
    auto it = given_.find(name);
    if (it != given_.end()) {
      const InputSpec &s = it->second;
      if (s.i32 != i32)
        throw UserError("", "--input " + name,
                        "label " + quoteName(name) + " of " + cur_->describe() + " must be " +
                            (i32 ? "int32 (class ids): add :i32" : "float32: drop :i32"));
      if (numel(s.shape) != numel(shape))
        throw UserError("", "--input " + name,
                        "label " + quoteName(name) + " of " + cur_->describe() + " has shape " +
                            tupleText(s.shape) + "; expected " + tupleText(shape));
      val.shape = s.shape;
    }
    if (v) checkShapeAnnotation(*v, val.shape);
    json in = {{"shape", val.shape}};
    if (i32) in["dtype"] = "i32";
    if (v && v->ctxGroup) in["device"] = group(*v, *v->ctxGroup);
    addLeaf(inputs_, "/inputs/", name, in, v ? *v : *cur_);
    vars_[name] = {Role::Label, val, cur_->name};
    if (val.shape != shape)
      return emit("label", "reshape", {val}, json{{"shape", shape}}, shape, i32);
    return val;
  }

  /// The input node i as a variable; virtual ones (omitted by old files)
  /// are "<node>_<arg>" with the node's annotations, as MXNet makes them.
  const SymbolNode *inputNode(size_t i) {
    if (i < cur_->inputs.size()) {
      const SymbolNode &v = sym_.nodes[size_t(cur_->inputs[i].node)];
      return v.isVariable() ? &v : nullptr;
    }
    if (i >= mapping_->args.size()) fail("missing input " + std::to_string(i));
    SymbolNode v;
    v.name = cur_->name + "_" + mapping_->args[i];
    v.op = "null";
    v.ctxGroup = cur_->ctxGroup;
    v.pointer = cur_->pointer;
    virtual_.push_back(v);
    return &virtual_.back();
  }

  const SymbolNode *variableInput(size_t i, const std::string &what) {
    const SymbolNode *v = inputNode(i);
    if (!v)
      fail("input '" + argName(i) + "' must be a variable (" + what + "), got the output of " +
           quoteName(sym_.nodes[size_t(cur_->inputs[i].node)].name));
    return v;
  }

  /// The variable's use so far, which must be `role` if any. Only data and
  /// labels may come from --input.
  const VarUse *use(const SymbolNode &v, Role role) {
    if (given_.count(v.name) && role != Role::Input && role != Role::Label)
      throw UserError("", "--input " + v.name,
                      quoteName(v.name) + " is " + roleName(role) + " of " + cur_->describe() +
                          ", not data fed per step");
    auto it = vars_.find(v.name);
    if (it == vars_.end()) return nullptr;
    if (it->second.role != role)
      fail("uses variable " + quoteName(v.name) + " as " + roleName(role) + ", but " +
           quoteName(it->second.user) + " uses it as " + roleName(it->second.role));
    return &it->second;
  }

  std::string argName(size_t i) const {
    return i < mapping_->args.size() ? mapping_->args[i] : "input " + std::to_string(i);
  }

  /// __shape__ where given must agree (0 means "inferred").
  void checkShapeAnnotation(const SymbolNode &v, const Shape &shape) {
    if (!v.shape) return;
    std::vector<int64_t> s;
    try {
      s = parseTupleAttr(*v.shape);
    } catch (const RuleError &e) {
      throw UserError(sym_.file, v.pointer, "__shape__ of " + v.describe() + ": " + e.what());
    }
    bool ok = s.size() == shape.size() || s.empty();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = s[k] == 0 || s[k] == shape[k];
    if (!ok)
      throw UserError(sym_.file, v.pointer,
                      "shape mismatch: __shape__ " + quoteName(*v.shape, "") + " of " +
                          v.describe() + " disagrees with " + tupleText(shape) +
                          ", inferred from " + cur_->describe());
  }

  json paramInit(const SymbolNode &v, const json &dflt) {
    if (!v.init) return dflt;
    if (std::optional<json> j = mapInit(*v.init)) return *j;
    notes_.push_back(sym_.file + ": warning: " + v.pointer + ": __init__ " +
                     quoteName(*v.init, "") + " of " + v.describe() +
                     " has no mpc equivalent; using " + dflt.dump());
    return dflt;
  }

  /// The group as the model's "device": what the mpc reader accepts there, a
  /// group name or a device (checked by the reader's own rule, in one pass
  /// over the characters, whatever the length).
  std::string group(const SymbolNode &n, const std::string &g) const {
    if (!ir::parseDevice(g) && !ir::isValidGroupName(g))
      throw UserError(sym_.file, n.pointer,
                      "ctx_group " + quoteName(g) + " of " + n.describe() +
                          " is not a valid mpc device group ([A-Za-z_][A-Za-z0-9_.-]*) or "
                          "device (cpu:N, gpu:N, N < 1024)");
    return g;
  }

  void claimName(const std::string &name) {
    if (!names_.insert(name).second)
      fail("the mpc name " + quoteName(name) + " is taken by another value; rename the node");
  }

  void addLeaf(json &section, const std::string &prefix, const std::string &name, json body,
               const SymbolNode &owner) {
    claimName(name);
    pointers_[prefix + name] = &owner;
    section[name] = std::move(body);
  }

  std::string modelName() const {
    if (!opt_.modelName.empty()) return opt_.modelName;
    return modelNameFromFile(sym_.file, {"-symbol.json", ".json"});
  }

  std::string writeModel() const {
    ModelParts m;
    m.name = modelName();
    m.inputs = inputs_;
    m.params = params_;
    m.nodes = nodes_;
    if (loss_ && !opt_.training.inference) m.loss = loss_->name;
    m.outputs = outputs_;
    if (!opt_.training.inference) m.optimizer = optimizerJson(opt_.training);
    return writeModelText(m);
  }

  /// Reads the model back (mpc's shape rules run) and compares every shape
  /// with MXNet's; errors name the MXNet node.
  void validate(const std::string &text) {
    std::string file = opt_.outputFile.empty() ? "model.json" : opt_.outputFile;
    std::unique_ptr<ir::Graph> g = readBack<const SymbolNode *>(
        text, file, pointers_, [&](const SymbolNode *const *n, const std::string &what) {
          if (!n) throw UserError(sym_.file, "", what);
          throw UserError(sym_.file, (*n)->pointer, (*n)->describe() + ": " + what);
        });
    for (const auto &[name, want] : expected_) {
      const ir::Node *n = g->find(name);
      MPC_ASSERT(n, "emitted node '" + name + "' missing after reading");
      Shape have(n->type.shape.begin(), n->type.shape.end());
      bool i32 = n->type.dtype == ir::DType::I32;
      if (have != want.first || i32 != want.second)
        throw InternalError("import-mxnet: '" + name + "' has shape " + tupleText(want.first) +
                            " in MXNet but " + n->type.str() + " by mpc's rule for " +
                            n->info().name);
    }
  }

  const SymbolFile &sym_;
  const ImportOptions &opt_;
  std::map<std::string, InputSpec> given_;
  int64_t batch_ = 0;
  const SymbolNode *cur_ = nullptr;
  const OpMapping *mapping_ = nullptr;
  AttrReader *reader_ = nullptr;
  std::map<int, Value> values_;
  std::map<std::string, VarUse> vars_;
  std::deque<SymbolNode> virtual_;
  json inputs_ = json::object(), params_ = json::object(), nodes_ = json::array();
  std::vector<std::string> outputs_;
  std::optional<Value> loss_;
  const SymbolNode *lossHead_ = nullptr;
  std::set<std::string> names_;
  std::map<std::string, const SymbolNode *> pointers_;
  std::map<std::string, std::pair<Shape, bool>> expected_;
  std::vector<ExpectedArray> arrays_;
  std::vector<std::string> notes_;
};

} // namespace

ImportResult importSymbol(const SymbolFile &symbol, const ImportOptions &options) {
  return Importer(symbol, options).run();
}

} // namespace mpc::frontend::mxnet
