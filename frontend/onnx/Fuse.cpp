//===- frontend/onnx/Fuse.cpp - exporters' decompositions, fused back -----===//
#include "frontend/onnx/Fuse.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace mpc::frontend::onnx {

namespace {

struct Graph {
  ::onnx::GraphProto &g;
  const std::function<const Const *(const std::string &)> &known;
  std::map<std::string, int> producer;          // value -> node index
  std::map<std::string, std::vector<int>> uses; // value -> consumer node indices
  std::set<std::string> outputs;
  std::set<int> removed;

  void index() {
    producer.clear();
    uses.clear();
    for (int i = 0; i < g.node_size(); ++i) {
      if (removed.count(i)) continue;
      for (const std::string &o : g.node(i).output()) producer[o] = i;
      for (const std::string &in : g.node(i).input())
        if (!in.empty()) uses[in].push_back(i);
    }
    for (const auto &o : g.output()) outputs.insert(o.name());
  }
  /// The single consumer of `value`, when it has exactly one and is not a
  /// graph output.
  const ::onnx::NodeProto *only(const std::string &value, int *index = nullptr) const {
    auto it = uses.find(value);
    if (it == uses.end() || it->second.size() != 1 || outputs.count(value)) return nullptr;
    if (index) *index = it->second[0];
    return &g.node(it->second[0]);
  }
  bool scalarNear(const std::string &value, double want) const {
    const Const *c = known(value);
    return c && c->scalarLike() && std::fabs(c->values[0] - want) <= 1e-6 * std::fabs(want);
  }
  /// The operand of binary node `n` other than `value`, or "".
  static std::string other(const ::onnx::NodeProto &n, const std::string &value) {
    if (n.input_size() != 2) return "";
    if (n.input(0) == value) return n.input(1);
    if (n.input(1) == value) return n.input(0);
    return "";
  }
};

/// Last-axis reduction of a ReduceMean with keepdims.
bool lastAxisMean(const ::onnx::NodeProto &n) {
  if (n.op_type() != "ReduceMean" || n.input_size() != 1) return false;
  Attrs a(n);
  std::vector<int64_t> axes = a.getInts("axes", {});
  return a.getBool("keepdims", 1) && axes.size() == 1 && axes[0] == -1;
}

bool fuseGelu(Graph &G, int erfIndex) {
  const ::onnx::NodeProto &erf = G.g.node(erfIndex);
  auto p = G.producer.find(erf.input(0));
  if (p == G.producer.end()) return false;
  int divIndex = p->second;
  const ::onnx::NodeProto &div = G.g.node(divIndex);
  std::string x;
  if (div.op_type() == "Div" && div.input_size() == 2 && G.scalarNear(div.input(1), std::sqrt(2.0)))
    x = div.input(0);
  else if (div.op_type() == "Mul" && div.input_size() == 2) {
    if (G.scalarNear(div.input(1), 1 / std::sqrt(2.0))) x = div.input(0);
    else if (G.scalarNear(div.input(0), 1 / std::sqrt(2.0))) x = div.input(1);
  }
  if (x.empty() || !G.only(div.output(0))) return false;
  int addIndex, mulIndex, halfIndex;
  const ::onnx::NodeProto *add = G.only(erf.output(0), &addIndex);
  if (!add || add->op_type() != "Add" || !G.scalarNear(Graph::other(*add, erf.output(0)), 1.0))
    return false;
  const ::onnx::NodeProto *mul = G.only(add->output(0), &mulIndex);
  if (!mul || mul->op_type() != "Mul" || Graph::other(*mul, add->output(0)) != x) return false;
  const ::onnx::NodeProto *half = G.only(mul->output(0), &halfIndex);
  if (!half || half->op_type() != "Mul" || !G.scalarNear(Graph::other(*half, mul->output(0)), 0.5))
    return false;
  ::onnx::NodeProto fused;
  fused.set_op_type("Gelu");
  fused.set_name(half->name());
  fused.add_input(x);
  fused.add_output(half->output(0));
  auto *a = fused.add_attribute();
  a->set_name("approximate");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s("none");
  *G.g.mutable_node(halfIndex) = fused;
  for (int i : {divIndex, erfIndex, addIndex, mulIndex}) G.removed.insert(i);
  return true;
}

bool fuseLayerNorm(Graph &G, int meanIndex) {
  const ::onnx::NodeProto &mean = G.g.node(meanIndex);
  if (!lastAxisMean(mean)) return false;
  std::string x = mean.input(0);
  int subIndex, powIndex, varIndex, epsIndex, sqrtIndex, divIndex;
  const ::onnx::NodeProto *sub = G.only(mean.output(0), &subIndex);
  if (!sub || sub->op_type() != "Sub" || sub->input(0) != x || sub->input(1) != mean.output(0))
    return false;
  // d = x - mean: used by the square and the division.
  auto du = G.uses.find(sub->output(0));
  if (du == G.uses.end() || du->second.size() != 2 || G.outputs.count(sub->output(0)))
    return false;
  powIndex = du->second[0];
  divIndex = du->second[1];
  if (G.g.node(powIndex).op_type() == "Div") std::swap(powIndex, divIndex);
  const ::onnx::NodeProto &pow = G.g.node(powIndex), &div = G.g.node(divIndex);
  bool square = (pow.op_type() == "Pow" && pow.input(0) == sub->output(0) &&
                 G.scalarNear(pow.input(1), 2.0)) ||
                (pow.op_type() == "Mul" && pow.input(0) == sub->output(0) &&
                 pow.input(1) == sub->output(0));
  if (!square || div.op_type() != "Div" || div.input(0) != sub->output(0)) return false;
  const ::onnx::NodeProto *var = G.only(pow.output(0), &varIndex);
  if (!var || !lastAxisMean(*var)) return false;
  const ::onnx::NodeProto *eps = G.only(var->output(0), &epsIndex);
  if (!eps || eps->op_type() != "Add") return false;
  const Const *e = G.known(Graph::other(*eps, var->output(0)));
  if (!e || !e->scalarLike()) return false;
  const ::onnx::NodeProto *sqrt = G.only(eps->output(0), &sqrtIndex);
  if (!sqrt || sqrt->op_type() != "Sqrt" || G.only(sqrt->output(0)) != &div) return false;
  // Optional affine: Mul by gamma, Add beta.
  std::string gamma, beta, out = div.output(0);
  std::vector<int> inner = {meanIndex, subIndex, powIndex, varIndex, epsIndex, sqrtIndex};
  int last = divIndex, gammaIndex, betaIndex;
  if (const ::onnx::NodeProto *mul = G.only(out, &gammaIndex); mul && mul->op_type() == "Mul") {
    std::string g = Graph::other(*mul, out);
    const ::onnx::NodeProto *add = G.only(mul->output(0), &betaIndex);
    if (!g.empty() && add && add->op_type() == "Add" && !Graph::other(*add, mul->output(0)).empty()) {
      gamma = g;
      beta = Graph::other(*add, mul->output(0));
      inner.push_back(divIndex);
      inner.push_back(gammaIndex);
      last = betaIndex;
      out = add->output(0);
    }
  }
  ::onnx::NodeProto fused;
  fused.set_op_type("LayerNormalization");
  fused.set_name(G.g.node(last).name());
  fused.add_input(x);
  if (!gamma.empty()) {
    fused.add_input(gamma);
    fused.add_input(beta);
  }
  fused.add_output(out);
  auto *axis = fused.add_attribute();
  axis->set_name("axis");
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(-1);
  auto *epsilon = fused.add_attribute();
  epsilon->set_name("epsilon");
  epsilon->set_type(::onnx::AttributeProto::FLOAT);
  epsilon->set_f(float(e->values[0]));
  *G.g.mutable_node(last) = fused;
  for (int i : inner) G.removed.insert(i);
  return true;
}

/// Pad(x) into a Conv, or an AveragePool without pads of its own: zeros on
/// the spatial axes only, the consumer's pads grow by them (an AveragePool
/// then counts them, as it counted the padded zeros).
bool fusePad(Graph &G, int padIndex) {
  const ::onnx::NodeProto &pad = G.g.node(padIndex);
  Attrs a(pad);
  if (a.getString("mode", "constant") != "constant") return false;
  std::vector<int64_t> pads;
  if (pad.input_size() >= 2 && !pad.input(1).empty()) {
    const Const *p = G.known(pad.input(1));
    if (!p) return false;
    for (double v : p->values) pads.push_back(int64_t(v));
    if (pad.input_size() >= 3 && !pad.input(2).empty()) {
      const Const *v = G.known(pad.input(2));
      if (!v || !v->scalarLike() || v->values[0] != 0) return false;
    }
  } else {
    pads = a.getInts("pads", {});
    if (a.getFloat("value", 0) != 0) return false;
  }
  if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) return false;
  int useIndex;
  const ::onnx::NodeProto *use = G.only(pad.output(0), &useIndex);
  if (!use || use->input(0) != pad.output(0)) return false;
  Attrs u(*use);
  bool pool = use->op_type() == "AveragePool";
  if (!pool && use->op_type() != "Conv") return false;
  if (u.getString("auto_pad", "NOTSET") != "NOTSET") return false;
  std::vector<int64_t> own = u.getInts("pads", {0, 0, 0, 0});
  if (own.size() != 4 || (pool && own != std::vector<int64_t>{0, 0, 0, 0})) return false;
  ::onnx::NodeProto fused = *use;
  fused.set_input(0, pad.input(0));
  auto set = [&](const char *name, std::vector<int64_t> ints, std::optional<int64_t> i) {
    ::onnx::AttributeProto *attr = nullptr;
    for (auto &x : *fused.mutable_attribute())
      if (x.name() == name) attr = &x;
    if (!attr) {
      attr = fused.add_attribute();
      attr->set_name(name);
    }
    attr->clear_ints();
    if (i) {
      attr->set_type(::onnx::AttributeProto::INT);
      attr->set_i(*i);
    } else {
      attr->set_type(::onnx::AttributeProto::INTS);
      for (int64_t v : ints) attr->add_ints(v);
    }
  };
  set("pads", {own[0] + pads[2], own[1] + pads[3], own[2] + pads[6], own[3] + pads[7]}, std::nullopt);
  if (pool) set("count_include_pad", {}, 1);
  *G.g.mutable_node(useIndex) = fused;
  G.removed.insert(padIndex);
  return true;
}

} // namespace

int fuseDecompositions(::onnx::GraphProto &graph,
                       const std::function<const Const *(const std::string &)> &known) {
  Graph G{graph, known, {}, {}, {}, {}};
  G.index();
  int fused = 0;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (G.removed.count(i)) continue;
    const std::string &op = graph.node(i).op_type();
    bool done = (op == "Erf" && fuseGelu(G, i)) || (op == "ReduceMean" && fuseLayerNorm(G, i)) ||
                (op == "Pad" && fusePad(G, i));
    if (done) {
      ++fused;
      G.index();
    }
  }
  if (!fused) return 0;
  ::onnx::GraphProto kept;
  for (int i = 0; i < graph.node_size(); ++i)
    if (!G.removed.count(i)) *kept.add_node() = graph.node(i);
  graph.mutable_node()->Swap(kept.mutable_node());
  return fused;
}

} // namespace mpc::frontend::onnx
