//===- test/unit/ir/PrinterTest.cpp - the text form ---------------------===//
//
// The printed form is checked verbatim: it is what --print-after shows and
// what every lit test matches, so any change to it is a visible decision.
//
//===----------------------------------------------------------------------===//
#include "test/unit/ir/FrontendModels.h"

#include "ir/Builder.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace mpc;
using namespace mpc::ir;
using mpc::test::seedModelJson;
using mpc::test::readModel;

namespace {

TEST(Printer, SmallGraphExactly) {
  auto g = readModel(R"({"mpc": 1, "name": "tiny",
    "inputs": {"x": {"shape": [4, 2], "device": "cpu:0"},
               "lab": {"shape": [4], "dtype": "i32"}},
    "params": {"w0": {"shape": [2, 2], "init": {"xavier": {"magnitude": 2.24}}},
               "b": {"shape": [2], "init": {"uniform": {"low": -0.5, "high": 0.5}},
                     "device": "stage1"}},
    "state": {"w0.adam.m": {"shape": [2, 2], "init": "zeros", "param": "w0"}},
    "nodes": [
      {"name": "h", "op": "matmul", "inputs": ["x", "w0"], "device": "gpu:1"},
      {"name": "s", "op": "sum", "inputs": ["h"], "attrs": {"axes": [0, 1]}},
      {"name": "l", "op": "scale", "inputs": ["s"], "attrs": {"value": 0.5}},
      {"name": "r", "op": "relu", "inputs": ["h"]}
    ],
    "loss": "l", "outputs": ["h", "r"]})");
  EXPECT_EQ(printGraph(*g),
            "graph @tiny {\n"
            "  %x = input : f32[4,2] @cpu:0\n"
            "  %lab = input : i32[4]\n"
            "  %w0 = param {init=xavier(2.24)} : f32[2,2]\n"
            "  %b = param {init=uniform(-0.5,0.5)} : f32[2] @stage1\n"
            "  %w0.adam.m = state {init=zeros, param=w0} : f32[2,2]\n"
            "  %h = matmul(%x, %w0) {transpose_a=false, transpose_b=false} : f32[4,2] @gpu:1\n"
            "  %s = sum(%h) {axes=[0,1], keepdims=false} : f32[]\n"
            "  %l = scale(%s) {value=0.5} : f32[]\n"
            "  %r = relu(%h) : f32[4,2]\n"
            "  loss %l\n"
            "  outputs %h, %r\n"
            "}\n");
}

TEST(Printer, SeedModelHeaderAndFirstNodes) {
  auto g = readModel(test::seedModelJson());
  std::string text = printGraph(*g);
  EXPECT_EQ(text.substr(0, text.find("%h0")),
            "graph @regression3 {\n"
            "  %x = input : f32[100,2]\n"
            "  %y = input : f32[100,1]\n"
            "  %w0 = param {init=xavier(2.24)} : f32[2,2] @stage0\n"
            "  %b0 = param {init=constant(0.5)} : f32[2] @stage0\n"
            "  %w1 = param {init=xavier(2.24)} : f32[2,2] @stage1\n"
            "  %b1 = param {init=constant(0.5)} : f32[2] @stage1\n"
            "  %w2 = param {init=xavier(2.24)} : f32[2,1] @stage2\n"
            "  %b2 = param {init=constant(0.5)} : f32[1] @stage2\n"
            "  ");
  EXPECT_NE(text.find("  %z0 = add(%h0, %b0) : f32[100,2]\n"), std::string::npos);
  EXPECT_NE(text.find("  %loss = mse_loss(%z2, %y) : f32[]\n  loss %loss\n  outputs %z2\n}\n"),
            std::string::npos);
  // The stream and string forms agree, and printing is deterministic.
  std::ostringstream os;
  printGraph(*g, os);
  EXPECT_EQ(os.str(), text);
  EXPECT_EQ(printGraph(*readModel(test::seedModelJson())), text);
}

TEST(Printer, NodesInTopologicalOrderWithCreationTieBreak) {
  auto g = readModel(R"({"mpc": 1, "name": "order", "inputs": {"x": {"shape": [2]}},
    "nodes": [{"name": "c", "op": "add", "inputs": ["a", "b"]},
              {"name": "b", "op": "exp", "inputs": ["x"]},
              {"name": "a", "op": "neg", "inputs": ["x"]}]})");
  EXPECT_EQ(printGraph(*g), "graph @order {\n"
                            "  %x = input : f32[2]\n"
                            "  %b = exp(%x) : f32[2]\n"
                            "  %a = neg(%x) : f32[2]\n"
                            "  %c = add(%a, %b) : f32[2]\n"
                            "}\n");
}

TEST(Printer, NodeLineForms) {
  auto g = readModel(test::seedModelJson());
  EXPECT_EQ(printNode(*g->find("h0")),
            "%h0 = matmul(%x, %w0) {transpose_a=false, transpose_b=false} : f32[100,2] @stage0");
  Builder b(*g);
  b.device = "gpu:0";
  Node *f = b.fill(1.5, {3});
  EXPECT_EQ(printNode(*f), "%fill = fill() {shape=[3], value=1.5} : f32[3] @gpu:0");
  Node *c = b.copyTo(g->find("z0"), "cpu:1", "z0.to.cpu1");
  EXPECT_EQ(printNode(*c), "%z0.to.cpu1 = copy(%z0) : f32[100,2] @cpu:1");
  Node *m = g->addState("w0.sgd.momentum", g->find("w0")->type, InitSpec{InitSpec::Normal, 0, 0.01},
                        "w0");
  EXPECT_EQ(printNode(*m), "%w0.sgd.momentum = state {init=normal(0,0.01), param=w0} : f32[2,2]");
}

TEST(Printer, BrokenGraphsStillPrint) {
  auto g = readModel(R"({"mpc": 1, "name": "broken", "inputs": {"x": {"shape": [2]}},
    "nodes": [{"name": "a", "op": "exp", "inputs": ["x"]},
              {"name": "b", "op": "neg", "inputs": ["a"]}]})");
  // A cycle: printed in creation order instead.
  g->find("a")->inputs[0] = g->find("b");
  EXPECT_EQ(printGraph(*g), "graph @broken {\n"
                            "  %x = input : f32[2]\n"
                            "  %a = exp(%b) : f32[2]\n"
                            "  %b = neg(%a) : f32[2]\n"
                            "}\n");
  g->find("a")->inputs[0] = nullptr;
  EXPECT_EQ(printNode(*g->find("a")), "%a = exp(%<null>) : f32[2]");
}

} // namespace
