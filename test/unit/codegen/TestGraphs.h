//===- test/unit/codegen/TestGraphs.h - graphs for the codegen tests -----===//
//
// Graphs in the state lowering expects (placed, copies explicit and, for
// training, differentiated and optimized), built with ir::Builder so the
// tests do not depend on the passes: the seed regression model on three
// devices with its backward graph and Adam updates, a forward-only variant,
// and random multi-device graphs for the memory-plan property tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Builder.h"
#include "ir/Graph.h"

#include <map>
#include <memory>
#include <random>
#include <string>

namespace mpc::test {

/// The seed model (three dense layers on cpu:0, cpu:1, cpu:2) as a training
/// graph: forward, copies both ways, hand-written gradients and one
/// adam_update per parameter with m, v and step states.
inline std::unique_ptr<ir::Graph> seedTrainingGraph(bool training = true) {
  using namespace ir;
  auto g = std::make_unique<Graph>();
  g->name = "regression3";
  g->sourceFile = "model.json";
  Builder b(*g);
  auto f32 = [](Shape s) { return TensorType{DType::F32, std::move(s)}; };
  InitSpec xavier{InitSpec::Xavier, 2.24, 0.0};
  InitSpec half{InitSpec::Constant, 0.5, 0.0};

  Node *x = g->addInput("x", f32({100, 2}));
  Node *y = g->addInput("y", f32({100, 1}));
  x->device = "cpu:0";
  y->device = "cpu:2";
  Node *w[3], *bias[3];
  const int64_t out[3] = {2, 2, 1};
  for (int i = 0; i < 3; ++i) {
    std::string dev = "cpu:" + std::to_string(i);
    w[i] = g->addParam("w" + std::to_string(i), f32({2, out[i]}), xavier);
    bias[i] = g->addParam("b" + std::to_string(i), f32({out[i]}), half);
    w[i]->device = bias[i]->device = dev;
  }
  Node *in = x, *fwdIn[3], *z[3];
  for (int i = 0; i < 3; ++i) {
    b.device = "cpu:" + std::to_string(i);
    if (i > 0) in = b.copyTo(z[i - 1], b.device, z[i - 1]->name + ".to.cpu" + std::to_string(i));
    fwdIn[i] = in;
    Node *h = b.create(OpKind::MatMul, {in, w[i]}, {}, "h" + std::to_string(i));
    z[i] = b.create(OpKind::Add, {h, bias[i]}, {}, "z" + std::to_string(i));
  }
  Node *loss = b.create(OpKind::MseLoss, {z[2], y}, {}, "loss");
  g->outputs = {"z2"};
  g->loss = "loss";
  g->stages = kShaped | kPlaced | kCopiesExplicit;
  if (!training) {
    g->loss = "";
    g->erase(loss);
    return g;
  }

  // Backward, by hand: shapes and structure as autodiff makes them.
  b.backward = true;
  Node *dz = b.create(OpKind::Fill, {}, {{"value", 1.0}, {"shape", Shape{}}}, "loss.grad");
  dz = b.create(OpKind::Mul, {b.create(OpKind::Sub, {z[2], y}, {}, "loss.diff"), dz}, {}, "z2.grad");
  Node *grads[3][2];
  for (int i = 2; i >= 0; --i) {
    b.device = "cpu:" + std::to_string(i);
    if (i < 2) dz = b.copyTo(dz, b.device, "z" + std::to_string(i) + ".grad");
    grads[i][1] = b.create(OpKind::Sum, {dz}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", false}},
                           "b" + std::to_string(i) + ".grad");
    grads[i][0] = b.create(OpKind::MatMul, {fwdIn[i], dz}, {{"transpose_a", true}},
                           "w" + std::to_string(i) + ".grad");
    if (i > 0) dz = b.create(OpKind::MatMul, {dz, w[i]}, {{"transpose_b", true}},
                             fwdIn[i]->name + ".grad");
  }
  g->stages |= kDifferentiated;

  // Adam updates with their state, on the parameter's device.
  g->optimizer = OptimizerSpec{};
  g->optimizer->kind = "adam";
  g->optimizer->lr = 0.001;
  for (int i = 0; i < 3; ++i) {
    b.device = "cpu:" + std::to_string(i);
    Node *params[2] = {w[i], bias[i]};
    for (int k = 0; k < 2; ++k) {
      Node *p = params[k];
      Node *m = g->addState(p->name + ".m", p->type, InitSpec{}, p->name);
      Node *v = g->addState(p->name + ".v", p->type, InitSpec{}, p->name);
      Node *step = g->addState(p->name + ".step", f32({1}), InitSpec{}, p->name);
      m->device = v->device = step->device = b.device;
      b.create(OpKind::AdamUpdate, {p, grads[i][k], m, v, step}, {{"lr", 0.001}},
               p->name + ".update");
    }
  }
  g->stages |= kOptimized;
  return g;
}

/// A random placed graph with explicit copies: fills of random sizes, relu,
/// add, sum and copies between `devices` devices; some values are outputs.
inline std::unique_ptr<ir::Graph> randomGraph(unsigned seed, int devices, int ops) {
  using namespace ir;
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  auto g = std::make_unique<Graph>();
  g->name = "random" + std::to_string(seed);
  Builder b(*g);
  std::vector<std::vector<Node *>> on(static_cast<size_t>(devices));
  std::map<std::pair<Node *, int>, Node *> copies;
  for (int i = 0; i < ops; ++i) {
    int d = int(pick(size_t(devices)));
    b.device = "cpu:" + std::to_string(d);
    auto &vals = on[size_t(d)];
    unsigned choice = rng() % 10;
    Node *n = nullptr;
    if (vals.empty() || choice < 2) {
      int64_t rows = 1 + int64_t(pick(40));
      n = b.create(OpKind::Fill, {}, {{"value", 1.0}, {"shape", Shape{rows, 4}}}, "f" + std::to_string(i));
    } else if (choice < 4) {
      n = b.create(OpKind::Relu, {vals[pick(vals.size())]}, {}, "r" + std::to_string(i));
    } else if (choice < 6) {
      Node *a = vals[pick(vals.size())];
      std::vector<Node *> same;
      for (Node *v : vals)
        if (v->type == a->type) same.push_back(v);
      n = b.create(OpKind::Add, {a, same[pick(same.size())]}, {}, "a" + std::to_string(i));
    } else if (choice < 7) {
      n = b.create(OpKind::Sum, {vals[pick(vals.size())]},
                   {{"axes", std::vector<int64_t>{1}}, {"keepdims", true}}, "s" + std::to_string(i));
    } else {
      int src = int(pick(size_t(devices)));
      if (src == d || on[size_t(src)].empty()) continue;
      Node *v = on[size_t(src)][pick(on[size_t(src)].size())];
      auto key = std::make_pair(v, d);
      if (copies.count(key)) continue;
      n = copies[key] = b.copyTo(v, b.device, v->name + ".to.cpu" + std::to_string(d));
    }
    vals.push_back(n);
    if (rng() % 8 == 0) g->outputs.push_back(n->name);
  }
  g->stages = kShaped | kPlaced | kCopiesExplicit;
  return g;
}

} // namespace mpc::test
