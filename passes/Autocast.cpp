//===- passes/Autocast.cpp - mixed precision: the `autocast` pass --------===//
//
// Invariant established (under --precision=bf16|fp16, T the low type):
//   * every op whose record says Precision::Low (matmul, conv) computes in
//     T: its float operands are T (matmul's f32 accumulator excepted);
//   * every Precision::F32Only op (reductions, softmax, norms and their
//     statistics, losses, optimizer updates, collectives) sees f32;
//   * a Precision::Follow op (elementwise, shape, copy, dropout) runs in the
//     type of its activations: f32 when any is f32, else T. Parameters,
//     state and constants are "weak": they take the activations' type, as
//     a bias does inside PyTorch's autocast linear;
//   * each parameter's gradient is summed in f32 and is f32 (master
//     weights: parameters and optimizer state stay f32);
//   * a value crossing devices crosses in the type its consumer wants: a
//     cast before a copy rather than after it (half the bytes on the wire).
// Every change of type is an explicit `cast` node, one per (value, type,
// device), like copies. The pass runs once the whole forward and backward
// exist (after autodiff, insert-copies and recompute) and before the
// gradients are reduced and applied; fp32 and tf32 never run it.
//
// Algorithm:
//   1. The gradient sums: from each parameter's gradient, follow Autodiff's
//      accumulation chain (an add's first operand, a fused matmul's
//      accumulator c). These nodes sum in f32.
//   2. Visit the op nodes in topological order. For each, the type each
//      float operand must have (the rules above); an operand of another
//      type is replaced by its cast (step 3). The node's type is then
//      re-derived by its op's rule (ops::OpSchema::resultType), which its
//      users, visited later, see.
//   3. A cast of v to type t for a node on device d: when v is a copy of u
//      from another device, u is cast on its own device and the cast copied
//      to d (the old copy is erased when nothing else reads it); else v is
//      cast on d. Casts and copies are reused.
//   4. A parameter gradient still in T (a single contribution, never
//      summed) gets its cast to f32, and Graph::gradients names it.
//   5. A model output in T is cast back to its declared f32 under its own
//      name (the low value is renamed `<output>.bf16`): the interface of a
//      model does not change with its precision.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "support/Error.h"

#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>

namespace mpc::passes {

using ir::DType;
using ir::Graph;
using ir::Node;
using ops::Precision;

namespace {

class Autocast {
public:
  Autocast(Graph &g, PassContext &ctx, DType low) : g_(g), ctx_(ctx), low_(low) {}

  void run() {
    markGradientSums();
    for (Node *n : g_.topoOrder())
      if (n->isOp()) visit(n);
    castGradientsToF32();
    keepOutputTypes();
    if (!orphans_.empty()) {
      std::unordered_set<const Node *> dead;
      for (Node *c : orphans_)
        if (g_.users(c).empty()) dead.insert(c);
      g_.eraseAll(dead);
    }
  }

private:
  // Step 1.
  void markGradientSums() {
    for (const auto &[param, grad] : g_.gradients) {
      Node *n = g_.find(grad);
      while (n && n->isOp() && n->backward) {
        if (n->isOp(ir::OpKind::Add) && n->inputs.size() == 2) {
          sums_.insert(n);
          n = n->inputs[0];
        } else if (n->isOp(ir::OpKind::MatMul) && n->inputs.size() == 3) {
          sums_.insert(n);
          n = n->inputs[2];
        } else {
          break;
        }
      }
    }
  }

  /// A parameter, state or constant (or a copy of one): it takes the type
  /// of the activations it meets.
  static bool weak(const Node *v) {
    while (v->isOp(ir::OpKind::Copy)) v = v->inputs[0];
    return v->kind == ir::NodeKind::Param || v->kind == ir::NodeKind::State ||
           v->isOp(ir::OpKind::Fill);
  }

  // Step 2.
  void visit(Node *n) {
    const ir::OpInfo &info = n->info();
    if (info.precision == Precision::Any) return;
    std::vector<DType> want(n->inputs.size(), DType::F32);
    bool sum = sums_.count(n) > 0;
    switch (info.precision) {
    case Precision::F32Only: break;
    case Precision::Low:
      for (size_t i = 0; i < want.size(); ++i)
        want[i] = int(i) == info.f32Accumulator && (sum || n->inputs[i]->type.dtype == DType::F32)
                      ? DType::F32
                      : low_;
      break;
    case Precision::Follow: {
      if (sum) break; // a gradient sum: f32
      bool anyF32 = false, anyLow = false;
      for (const Node *in : n->inputs) {
        if (!ops::isFloat(in->type.dtype) || weak(in)) continue;
        anyF32 |= in->type.dtype == DType::F32;
        anyLow |= in->type.dtype == low_;
      }
      DType t = anyLow && !anyF32 ? low_ : DType::F32;
      for (DType &w : want) w = t;
      break;
    }
    case Precision::Any: return;
    }
    bool changed = false;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Node *in = n->inputs[i];
      if (!ops::isFloat(in->type.dtype) || in->type.dtype == want[i]) continue;
      n->inputs[i] = castFor(in, want[i], *n);
      changed = true;
    }
    if (!changed && !anyLowOperand(n)) return;
    try {
      n->type = info.resultType(operandTypes(n), n->attrs);
    } catch (const RuleError &e) {
      throw InternalError("autocast left " + n->describe() + " with operands it rejects: " +
                          e.what());
    }
  }

  static bool anyLowOperand(const Node *n) {
    for (const Node *in : n->inputs)
      if (ops::isLowPrecision(in->type.dtype)) return true;
    return false;
  }

  static std::vector<ir::TensorType> operandTypes(const Node *n) {
    std::vector<ir::TensorType> t;
    for (const Node *in : n->inputs) t.push_back(in->type);
    return t;
  }

  // Step 3.
  Node *castFor(Node *v, DType to, const Node &user) {
    // Down to the low type before the wire; up to f32 after it.
    if (ops::dtypeSize(to) < ops::dtypeSize(v->type.dtype) && v->isOp(ir::OpKind::Copy) &&
        v->inputs.size() == 1 && !v->inputs[0]->device.empty() &&
        v->inputs[0]->device != user.device && v->device == user.device) {
      Node *source = v->inputs[0];
      Node *cast = castOn(source, to, source->device, *v);
      auto key = std::make_tuple(cast, user.device);
      auto it = copies_.find(key);
      if (it != copies_.end()) return it->second;
      ir::Builder b(g_);
      b.device = user.device;
      b.backward = v->backward;
      b.origin = v->origin;
      Node *copy = b.copyTo(cast, user.device);
      copy->microbatch = v->microbatch;
      ctx_.count("autocast", "copies-in-low-precision");
      copies_[key] = copy;
      orphans_.push_back(v);
      return copy;
    }
    return castOn(v, to, user.device, user);
  }

  /// The cast of `v` to `to` on `device`, made for `user` (whose place in
  /// forward or backward, and micro-batch, it takes).
  Node *castOn(Node *v, DType to, const std::string &device, const Node &user) {
    auto key = std::make_tuple(v, to, device);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    ir::Builder b(g_);
    b.device = device;
    b.backward = user.backward;
    b.origin = user.backward ? user.origin : std::string();
    Node *c = b.create(ir::OpKind::Cast, {v}, {{"to", std::string(ops::dtypeName(to))}},
                       v->name + "." + ops::dtypeName(to));
    c->microbatch = v->microbatch >= 0 ? v->microbatch : -1;
    ctx_.count("autocast", "casts");
    casts_[key] = c;
    return c;
  }

  // Step 4.
  void castGradientsToF32() {
    std::vector<std::pair<std::string, std::string>> updates;
    for (const auto &[param, grad] : g_.gradients) {
      Node *n = g_.find(grad);
      if (!n || n->type.dtype == DType::F32) continue;
      Node *c = castOn(n, DType::F32, n->device, *n);
      updates.emplace_back(param, c->name);
    }
    for (const auto &[param, cast] : updates) g_.gradients.set(param, cast);
  }

  /// A model output keeps its declared type: the low-typed value takes the
  /// name `<output>.<type>`, and its cast back to f32 the output's name.
  void keepOutputTypes() {
    const std::vector<std::string> outputs = g_.outputs;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string &name = outputs[i];
      Node *n = g_.find(name);
      if (!n || !n->isOp() || !ops::isLowPrecision(n->type.dtype)) continue;
      g_.rename(n, g_.uniqueName(name + "." + ops::dtypeName(n->type.dtype)));
      Node *c = castOn(n, DType::F32, n->device, *n); // the loss may have one already
      g_.rename(c, name);
      MPC_ASSERT(c->name == name, "output '" + name + "' could not keep its name");
      g_.outputs[i] = name; // rename pointed it at the low value
    }
  }

  Graph &g_;
  PassContext &ctx_;
  DType low_;
  std::unordered_set<const Node *> sums_;
  std::map<std::tuple<Node *, DType, std::string>, Node *> casts_;
  std::map<std::tuple<Node *, std::string>, Node *> copies_;
  std::vector<Node *> orphans_;
};

class AutocastPass : public Pass {
public:
  bool run(Graph &g, PassContext &ctx) override {
    g.precision = effectivePrecision(g, ctx.options);
    std::optional<DType> low = ops::lowTypeOf(g.precision);
    if (!low || g.has(ir::kAutocast)) return false;
    Autocast(g, ctx, *low).run();
    g.stages |= ir::kAutocast;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createAutocastPass() { return std::make_unique<AutocastPass>(); }

} // namespace mpc::passes
