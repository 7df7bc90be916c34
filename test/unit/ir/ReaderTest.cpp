//===- test/unit/ir/ReaderTest.cpp - the JSON model reader --------------===//
//
// The reader accepts the seed model unchanged and produces the expected
// nodes and types; every error class of docs/ir.md is rejected with a
// UserError that names the file, the JSON pointer and the node; and no input,
// however malformed, gets anything but a UserError out of it.
//
//===----------------------------------------------------------------------===//
#include "test/unit/ir/FrontendModels.h"

#include "ir/JsonReader.h"
#include "ir/Verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace mpc;
using namespace mpc::ir;
using mpc::test::seedModelJson;
using mpc::test::readError;
using mpc::test::readModel;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

/// A model with inputs x f32[100,2], y f32[100,1], i i32[100], param w
/// f32[2,2] and the given nodes (a JSON array) and extra top-level members.
std::string model(const std::string &nodes, const std::string &extra = "") {
  return R"({"mpc": 1, "name": "m",
    "inputs": {"x": {"shape": [100, 2]}, "y": {"shape": [100, 1]},
               "i": {"shape": [100], "dtype": "i32"}},
    "params": {"w": {"shape": [2, 2], "init": "zeros"}},
    "nodes": )" +
         nodes + extra + "}";
}

TEST(Reader, AcceptsSeedModel) {
  auto g = readModel(test::seedModelJson());
  EXPECT_EQ(g->name, "regression3");
  EXPECT_EQ(g->sourceFile, "model.json");
  ASSERT_EQ(g->nodes().size(), 15u);
  // Creation order: inputs, params, then nodes in array order.
  std::vector<std::string> names;
  for (const auto &n : g->nodes()) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y", "w0", "b0", "w1", "b1", "w2", "b2", "h0",
                                             "z0", "h1", "z1", "h2", "z2", "loss"}));
  for (size_t i = 0; i < g->nodes().size(); ++i) EXPECT_EQ(g->nodes()[i]->id, int(i));

  const Node *x = g->find("x");
  EXPECT_EQ(x->kind, NodeKind::Input);
  EXPECT_EQ(x->type.str(), "f32[100,2]");
  EXPECT_EQ(x->device, "");
  EXPECT_EQ(x->jsonPath, "/inputs/x");

  const Node *w0 = g->find("w0");
  EXPECT_EQ(w0->kind, NodeKind::Param);
  EXPECT_EQ(w0->type.str(), "f32[2,2]");
  EXPECT_EQ(w0->device, "stage0");
  ASSERT_TRUE(w0->init);
  EXPECT_EQ(w0->init->kind, InitSpec::Xavier);
  EXPECT_DOUBLE_EQ(w0->init->a, 2.24);
  ASSERT_TRUE(g->find("b2")->init);
  EXPECT_EQ(g->find("b2")->init->kind, InitSpec::Constant);
  EXPECT_DOUBLE_EQ(g->find("b2")->init->a, 0.5);

  const Node *h1 = g->find("h1");
  EXPECT_TRUE(h1->isOp(OpKind::MatMul));
  EXPECT_EQ(h1->device, "stage1");
  EXPECT_EQ(h1->jsonPath, "/nodes/2");
  ASSERT_EQ(h1->inputs.size(), 2u);
  EXPECT_EQ(h1->inputs[0], g->find("z0"));
  EXPECT_EQ(h1->inputs[1], g->find("w1"));
  EXPECT_EQ(h1->type.str(), "f32[100,2]");
  // Defaults are filled in from the op's schema.
  EXPECT_EQ(h1->attrs.count("transpose_a"), 1u);
  EXPECT_EQ(h1->attrs.count("transpose_b"), 1u);

  EXPECT_EQ(g->find("z0")->device, ""); // kept as written; the place pass decides
  EXPECT_EQ(g->find("z1")->type.str(), "f32[100,2]");
  EXPECT_EQ(g->find("h2")->type.str(), "f32[100,1]");
  EXPECT_EQ(g->find("z2")->type.str(), "f32[100,1]");
  EXPECT_EQ(g->find("loss")->type.str(), "f32[]");
  EXPECT_TRUE(g->find("loss")->isOp(OpKind::MseLoss));

  EXPECT_EQ(g->loss, "loss");
  EXPECT_EQ(g->outputs, std::vector<std::string>{"z2"});
  ASSERT_TRUE(g->optimizer);
  EXPECT_EQ(g->optimizer->kind, "adam");
  EXPECT_DOUBLE_EQ(g->optimizer->lr, 0.001);
  EXPECT_DOUBLE_EQ(g->optimizer->beta1, 0.9);
  EXPECT_DOUBLE_EQ(g->optimizer->beta2, 0.999);
  EXPECT_DOUBLE_EQ(g->optimizer->eps, 1e-8);
  EXPECT_DOUBLE_EQ(g->optimizer->weightDecay, 0.0);
  EXPECT_EQ(g->stages, unsigned(kShaped));
  EXPECT_TRUE(g->gradients.empty());
  EXPECT_EQ(verifyGraph(*g), std::vector<std::string>{});
}

TEST(Reader, ResolvesOperandsDefinedLaterInTheArray) {
  auto g = readModel(model(R"([
      {"name": "b", "op": "relu", "inputs": ["a"]},
      {"name": "a", "op": "matmul", "inputs": ["x", "w"]}])"));
  EXPECT_EQ(g->find("b")->inputs[0], g->find("a"));
  EXPECT_EQ(g->find("b")->type.str(), "f32[100,2]");
  // Array order is creation order; the topological order puts a first.
  EXPECT_LT(g->find("b")->id, g->find("a")->id);
  auto order = g->topoOrder();
  auto pos = [&](const char *n) {
    return std::find(order.begin(), order.end(), g->find(n)) - order.begin();
  };
  EXPECT_LT(pos("a"), pos("b"));
}

TEST(Reader, DefaultsAndOptionalSections) {
  auto g = readModel(R"({"mpc": 1})");
  EXPECT_EQ(g->name, "model");
  EXPECT_TRUE(g->nodes().empty());
  EXPECT_FALSE(g->optimizer);
  EXPECT_EQ(g->stages, unsigned(kShaped));

  g = readModel(model("[]", R"(, "optimizer": "sgd")"));
  EXPECT_EQ(g->find("i")->type.str(), "i32[100]");
  EXPECT_EQ(g->optimizer->kind, "sgd");
  EXPECT_DOUBLE_EQ(g->optimizer->lr, 0.01);
  g = readModel(model("[]", R"(, "optimizer": {"adamw": {}})"));
  EXPECT_DOUBLE_EQ(g->optimizer->lr, 0.001);
  EXPECT_DOUBLE_EQ(g->optimizer->weightDecay, 0.01);
  g = readModel(model("[]", R"(, "optimizer": {"sgd": {"lr": 0.1, "momentum": 0.9,
      "nesterov": true, "weight_decay": 1}})"));
  EXPECT_DOUBLE_EQ(g->optimizer->momentum, 0.9);
  EXPECT_TRUE(g->optimizer->nesterov);
  EXPECT_DOUBLE_EQ(g->optimizer->weightDecay, 1.0);
}

TEST(Reader, InitForms) {
  auto g = readModel(R"({"mpc": 1, "params": {
      "a": {"shape": [2], "init": "zeros"},
      "b": {"shape": [2], "init": "ones"},
      "c": {"shape": [2], "init": {"constant": -3}},
      "d": {"shape": [2], "init": {"uniform": {"low": -1, "high": 2}}},
      "e": {"shape": [2], "init": "uniform"},
      "f": {"shape": [2], "init": {"normal": {"mean": 1, "std": 0.5}}},
      "g": {"shape": [2], "init": {"normal": {}}},
      "h": {"shape": [2, 3], "init": "xavier"},
      "k": {"shape": [2, 3], "init": {"xavier": {"magnitude": 2}}, "dtype": "f32"}}})");
  auto init = [&](const char *n) { return *g->find(n)->init; };
  EXPECT_EQ(init("a"), (InitSpec{InitSpec::Zeros, 0, 0}));
  EXPECT_EQ(init("b"), (InitSpec{InitSpec::Ones, 0, 0}));
  EXPECT_EQ(init("c"), (InitSpec{InitSpec::Constant, -3, 0}));
  EXPECT_EQ(init("d"), (InitSpec{InitSpec::Uniform, -1, 2}));
  EXPECT_EQ(init("e"), (InitSpec{InitSpec::Uniform, -0.07, 0.07}));
  EXPECT_EQ(init("f"), (InitSpec{InitSpec::Normal, 1, 0.5}));
  EXPECT_EQ(init("g"), (InitSpec{InitSpec::Normal, 0, 0.01}));
  EXPECT_EQ(init("h"), (InitSpec{InitSpec::Xavier, 3, 0}));
  EXPECT_EQ(init("k"), (InitSpec{InitSpec::Xavier, 2, 0}));
}

TEST(Reader, DevicesAreKeptAsWritten) {
  auto g = readModel(model(R"([
      {"name": "a", "op": "relu", "inputs": ["x"], "device": "gpu:3"},
      {"name": "b", "op": "relu", "inputs": ["a"], "device": "cpu:0"},
      {"name": "c", "op": "relu", "inputs": ["b"], "device": "my_group.1-x"}])"));
  EXPECT_EQ(g->find("a")->device, "gpu:3");
  EXPECT_EQ(g->find("b")->device, "cpu:0");
  EXPECT_EQ(g->find("c")->device, "my_group.1-x");
}

// ---- error classes, one test each --------------------------------------

TEST(ReaderError, SyntaxErrorHasLineAndColumn) {
  EXPECT_THAT(readError("{\"mpc\": 1,\n \"name\": }"),
              StartsWith("model.json: error: 2:10: syntax error"));
  EXPECT_THAT(readError("{\"mpc\": 1,\n\n  \"name\": \"m\""),
              StartsWith("model.json: error: 3:14: syntax error"));
  EXPECT_THAT(readError(""), StartsWith("model.json: error: 1:1: syntax error"));
  EXPECT_EQ(readError(std::string("{\"mpc\": 1}\0{", 12)),
            "model.json: error: 1:11: syntax error: NUL byte in the file");
  EXPECT_THAT(readError("{\"mpc\": 1} {\"mpc\": 1}"),
              StartsWith("model.json: error: 1:12: syntax error"));
}

TEST(ReaderError, TopLevelMustBeObject) {
  EXPECT_EQ(readError("[1, 2]"),
            "model.json: error: top level must be a JSON object, got an array");
  EXPECT_EQ(readError("\"m\""), "model.json: error: top level must be a JSON object, got \"m\"");
}

TEST(ReaderError, Version) {
  EXPECT_EQ(readError(R"({"name": "m"})"),
            "model.json: error: missing format version \"mpc\"; supported versions: 1");
  EXPECT_EQ(readError(R"({"mpc": 2})"),
            "model.json: error: /mpc: unsupported format version 2; supported versions: 1");
  EXPECT_EQ(readError(R"({"mpc": "1"})"),
            "model.json: error: /mpc: unsupported format version \"1\"; supported versions: 1");
}

TEST(ReaderError, UnknownTopLevelKey) {
  EXPECT_EQ(readError(R"({"mpc": 1, "nodez": []})"),
            "model.json: error: /nodez: unknown top-level key 'nodez'; did you mean 'nodes'? "
            "(allowed: mpc, name, inputs, params, state, nodes, loss, outputs, optimizer, "
            "stages, gradients, pipeline, data_parallel, groups, precision)");
}

TEST(ReaderError, UnknownKeyInEntries) {
  EXPECT_THAT(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1], "dtyp": "f32"}}})"),
              StartsWith("model.json: error: /inputs/x/dtyp: unknown key 'dtyp' in 'x' "
                         "(input); did you mean 'dtype'?"));
  EXPECT_THAT(readError(model(R"([{"name": "a", "op": "relu", "inputs": ["x"], "atrs": {}}])")),
              StartsWith("model.json: error: /nodes/0/atrs: unknown key 'atrs' in 'a'; did "
                         "you mean 'attrs'?"));
}

TEST(ReaderError, UnknownOpWithSuggestion) {
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "matmull", "inputs": ["x", "w"]}])")),
            "model.json: error: /nodes/0/op: unknown op 'matmull' in 'h'; did you mean "
            "'matmul'?");
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "convolution", "inputs": ["x"]}])")),
            "model.json: error: /nodes/0/op: unknown op 'convolution' in 'h'");
}

TEST(ReaderError, WrongArity) {
  EXPECT_THAT(readError(model(R"([{"name": "z", "op": "add", "inputs": ["x"]}])")),
              StartsWith("model.json: error: /nodes/0/inputs: wrong arity in 'z' (add): takes 2 "
                         "operand(s)"));
  EXPECT_THAT(readError(model(R"([{"name": "z", "op": "relu"}])")),
              StartsWith("model.json: error: /nodes/0: wrong arity in 'z' (relu): takes 1 "
                         "operand(s)"));
  EXPECT_THAT(readError(model(R"([{"name": "z", "op": "relu", "inputs": ["x", "x"]}])")),
              HasSubstr(", got 2"));
}

TEST(ReaderError, UnknownAttribute) {
  EXPECT_THAT(
      readError(model(R"([{"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axiz": 1}}])")),
      StartsWith("model.json: error: /nodes/0/attrs/axiz: unknown attribute 'axiz' in 's' "
                 "(softmax); did you mean 'axis'?"));
  EXPECT_THAT(
      readError(model(R"([{"name": "s", "op": "relu", "inputs": ["x"], "attrs": {"axis": 1}}])")),
      StartsWith("model.json: error: /nodes/0/attrs/axis: unknown attribute 'axis' in 's' "
                 "(relu)"));
}

TEST(ReaderError, WrongAttributeType) {
  EXPECT_EQ(readError(model(
                R"([{"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axis": "last"}}])")),
            "model.json: error: /nodes/0/attrs/axis: attribute 'axis' of 's' (softmax) must be "
            "int, got \"last\"");
  EXPECT_EQ(readError(model(
                R"([{"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axis": 1.5}}])")),
            "model.json: error: /nodes/0/attrs/axis: attribute 'axis' of 's' (softmax) must be "
            "int, got 1.5");
  EXPECT_EQ(readError(model(
                R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axes": [0, "1"]}}])")),
            "model.json: error: /nodes/0/attrs/axes/1: attribute 'axes' of 's' (sum) must be "
            "int list, got element \"1\"");
  EXPECT_EQ(readError(model(
                R"([{"name": "h", "op": "matmul", "inputs": ["x", "w"],
                     "attrs": {"transpose_a": 1}}])")),
            "model.json: error: /nodes/0/attrs/transpose_a: attribute 'transpose_a' of 'h' "
            "(matmul) must be bool, got 1");
  EXPECT_THAT(readError(model(R"([{"name": "s", "op": "relu", "inputs": ["x"], "attrs": []}])")),
              StartsWith("model.json: error: /nodes/0/attrs: \"attrs\" of 's' (relu) must be an "
                         "object"));
}

TEST(ReaderError, MissingRequiredAttribute) {
  EXPECT_EQ(readError(model(R"([{"name": "r", "op": "reshape", "inputs": ["x"]}])")),
            "model.json: error: /nodes/0: missing required attribute 'shape' in 'r' (reshape)");
  EXPECT_EQ(readError(model(R"([{"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {}}])")),
            "model.json: error: /nodes/0/attrs: missing required attribute 'shape' in 'r' "
            "(reshape)");
}

TEST(ReaderError, UnknownValue) {
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "matmul", "inputs": ["x", "w"]},
                                 {"name": "z0", "op": "add", "inputs": ["h9", "w"]}])")),
            "model.json: error: /nodes/1/inputs/0: unknown value 'h9' in 'z0' (add)");
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "relu", "inputs": ["xx"]}])")),
            "model.json: error: /nodes/0/inputs/0: unknown value 'xx' in 'h' (relu)");
  EXPECT_EQ(readError(model(R"([{"name": "hidden", "op": "relu", "inputs": ["x"]},
                                 {"name": "out", "op": "relu", "inputs": ["hiden"]}])")),
            "model.json: error: /nodes/1/inputs/0: unknown value 'hiden' in 'out' (relu); did "
            "you mean 'hidden'?");
  EXPECT_THAT(readError(model(R"([{"name": "h", "op": "relu", "inputs": [3]}])")),
              StartsWith("model.json: error: /nodes/0/inputs/0: operand of 'h' (relu) must be a "
                         "string, got 3"));
}

TEST(ReaderError, DuplicateName) {
  EXPECT_EQ(readError(model(R"([{"name": "x", "op": "relu", "inputs": ["y"]}])")),
            "model.json: error: /nodes/0/name: duplicate name 'x' (already defined at "
            "/inputs/x)");
  EXPECT_EQ(readError(model(R"([{"name": "a", "op": "relu", "inputs": ["y"]},
                                 {"name": "a", "op": "relu", "inputs": ["y"]}])")),
            "model.json: error: /nodes/1/name: duplicate name 'a' (already defined at "
            "/nodes/0)");
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"w": {"shape": [1]}},
                          "params": {"w": {"shape": [1], "init": "zeros"}}})"),
            "model.json: error: /params/w: duplicate name 'w' (already defined at /inputs/w)");
  // The same key twice in one object is caught while parsing.
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1]}, "x": {"shape": [2]}}})"),
            "model.json: error: /inputs/x: duplicate key 'x'");
  EXPECT_EQ(readError(R"({"mpc": 1, "nodes": [{"name": "a", "name": "b"}]})"),
            "model.json: error: /nodes/0/name: duplicate key 'name'");
  // Large objects are checked through a set of their keys (the reader
  // switches at 16 keys): a repeat of an early key, and of one after the
  // switch, are both caught.
  for (int repeat : {3, 20}) {
    std::string inputs;
    for (int i = 0; i < 24; ++i)
      inputs += "\"x" + std::to_string(i) + "\": {\"shape\": [1]}, ";
    inputs += "\"x" + std::to_string(repeat) + "\": {\"shape\": [2]}";
    EXPECT_EQ(readError("{\"mpc\": 1, \"inputs\": {" + inputs + "}}"),
              "model.json: error: /inputs/x" + std::to_string(repeat) + ": duplicate key 'x" +
                  std::to_string(repeat) + "'")
        << repeat;
  }
}

TEST(ReaderError, Cycle) {
  EXPECT_EQ(readError(model(R"([{"name": "p", "op": "relu", "inputs": ["x"]},
                                 {"name": "a", "op": "add", "inputs": ["p", "b"]},
                                 {"name": "b", "op": "relu", "inputs": ["a"]}])")),
            "model.json: error: /nodes/1: cycle through 'a' (add): 'a' uses 'b', 'b' uses 'a'");
  EXPECT_EQ(readError(model(R"([{"name": "s", "op": "relu", "inputs": ["s"]}])")),
            "model.json: error: /nodes/0: cycle through 's' (relu): 's' uses 's'");
}

TEST(ReaderError, ShapeMismatchNamesBothShapes) {
  std::string e = readError(R"({"mpc": 1, "inputs": {"x": {"shape": [100, 2]}},
      "params": {"w": {"shape": [3, 1], "init": "zeros"}},
      "nodes": [{"name": "h", "op": "relu", "inputs": ["x"]},
                {"name": "h1", "op": "matmul", "inputs": ["h", "w"]}]})");
  EXPECT_THAT(e, StartsWith("model.json: error: /nodes/1: shape mismatch in 'h1' (matmul): "));
  EXPECT_THAT(e, HasSubstr("f32[100,2]"));
  EXPECT_THAT(e, HasSubstr("f32[3,1]"));
  EXPECT_THAT(readError(model(R"([{"name": "z", "op": "add", "inputs": ["x", "y"]},
                                   {"name": "q", "op": "add", "inputs": ["x", "i"]}])")),
              StartsWith("model.json: error: /nodes/1: shape mismatch in 'q' (add): "));
}

TEST(ReaderError, UnknownDevice) {
  const std::string expected = "; expected cpu:N, gpu:N (N < 1024) or a group name "
                               "([A-Za-z_][A-Za-z0-9_.-]*)";
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "relu", "inputs": ["x"], "device": "tpu:0"}])")),
            "model.json: error: /nodes/0/device: unknown device 'tpu:0' for 'h' (relu)" + expected);
  EXPECT_EQ(readError(model(R"([{"name": "h", "op": "relu", "inputs": ["x"], "device": "gpu:4096"}])")),
            "model.json: error: /nodes/0/device: unknown device 'gpu:4096' for 'h' (relu)" +
                expected);
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1], "device": "0stage"}}})"),
            "model.json: error: /inputs/x/device: unknown device '0stage' for 'x' (input)" +
                expected);
  EXPECT_THAT(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1], "device": 3}}})"),
              StartsWith("model.json: error: /inputs/x/device: unknown device 3 for 'x' (input)"));
}

TEST(ReaderError, OverflowingShape) {
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1048576, 1048576, 2]}}})"),
            "model.json: error: /inputs/x/shape: overflowing shape of 'x' (input): "
            "[1048576,1048576,2] has more than 2^40 elements");
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [18446744073709551615]}}})"),
            "model.json: error: /inputs/x/shape: overflowing shape of 'x' (input): dimension "
            "18446744073709551615 is out of range");
  EXPECT_THAT(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [1e30]}}})"),
              StartsWith("model.json: error: /inputs/x/shape/0: dimension of 'x' (input) must "
                         "be an integer"));
  // Overflow in a result shape, computed by the op's rule.
  EXPECT_THAT(readError(R"({"mpc": 1,
      "inputs": {"a": {"shape": [1048576, 1]}, "b": {"shape": [1, 2097152]}},
      "nodes": [{"name": "c", "op": "add", "inputs": ["a", "b"]}]})"),
              StartsWith("model.json: error: /nodes/0: "));
}

TEST(ReaderError, NegativeDimension) {
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [2, -3]}}})"),
            "model.json: error: /inputs/x/shape/1: negative dimension -3 in shape of 'x' "
            "(input)");
  EXPECT_EQ(readError(R"({"mpc": 1, "params": {"w": {"shape": [-1], "init": "ones"}}})"),
            "model.json: error: /params/w/shape/0: negative dimension -1 in shape of 'w' "
            "(param)");
}

TEST(ReaderError, BadDType) {
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": [2], "dtype": "f64"}}})"),
            "model.json: error: /inputs/x/dtype: bad dtype 'f64' for 'x' (input); expected "
            "\"f32\", \"i32\", \"bf16\" or \"f16\"");
  EXPECT_EQ(readError(R"({"mpc": 1, "params": {"w": {"shape": [2], "dtype": "i32",
                                                      "init": "zeros"}}})"),
            "model.json: error: /params/w/dtype: bad dtype 'i32' for 'w' (param); parameters "
            "and state are f32 (master weights: --precision=bf16 or fp16 runs their uses in the "
            "low type)");
}

TEST(ReaderError, BadInit) {
  auto param = [](const std::string &init) {
    return R"({"mpc": 1, "params": {"w": {"shape": [2], "init": )" + init + "}}}";
  };
  EXPECT_THAT(readError(param(R"({"gaussian": {}})")),
              StartsWith("model.json: error: /params/w/init/gaussian: bad init of 'w' (param): "
                         "unknown initialiser 'gaussian'"));
  EXPECT_THAT(readError(param(R"("xavir")")),
              StartsWith("model.json: error: /params/w/init: bad init of 'w' (param): unknown "
                         "initialiser 'xavir'; did you mean 'xavier'?"));
  EXPECT_EQ(readError(param(R"({"constant": "1"})")),
            "model.json: error: /params/w/init/constant: bad init of 'w' (param): constant "
            "needs a number, as {\"constant\": 0.5}");
  EXPECT_EQ(readError(param(R"({"uniform": {"low": 1, "high": 0}})")),
            "model.json: error: /params/w/init/uniform: bad init of 'w' (param): uniform needs "
            "low <= high");
  EXPECT_EQ(readError(param(R"({"normal": {"std": -1}})")),
            "model.json: error: /params/w/init/normal/std: bad init of 'w' (param): std must be "
            ">= 0");
  EXPECT_EQ(readError(param(R"({"xavier": {"magnitude": "big"}})")),
            "model.json: error: /params/w/init/xavier/magnitude: bad init of 'w' (param): "
            "magnitude must be a number, got \"big\"");
  EXPECT_THAT(readError(param(R"({"zeros": {}, "ones": {}})")),
              StartsWith("model.json: error: /params/w/init: bad init of 'w' (param): an object"));
  EXPECT_EQ(readError(R"({"mpc": 1, "params": {"w": {"shape": [2]}}})"),
            "model.json: error: /params/w: 'w' (param) has no \"init\"");
}

TEST(ReaderError, BadOptimizer) {
  EXPECT_EQ(readError(model("[]", R"(, "optimizer": {"rmsprop": {}})")),
            "model.json: error: /optimizer/rmsprop: bad optimizer: unknown optimizer 'rmsprop' "
            "(expected sgd, adam or adamw)");
  EXPECT_EQ(readError(model("[]", R"(, "optimizer": {"adam": {"beta1": 1.5}})")),
            "model.json: error: /optimizer/adam/beta1: bad optimizer: beta1 must be in [0, 1), "
            "got 1.5");
  EXPECT_EQ(readError(model("[]", R"(, "optimizer": {"sgd": {"lr": -1}})")),
            "model.json: error: /optimizer/sgd/lr: bad optimizer: lr must be in [0, inf), got -1");
  EXPECT_THAT(readError(model("[]", R"(, "optimizer": {"adam": {"momentum": 0.9}})")),
              StartsWith("model.json: error: /optimizer/adam/momentum: unknown setting of adam "
                         "'momentum' (allowed: lr, beta1, beta2, eps, weight_decay)"));
  EXPECT_EQ(readError(model("[]", R"(, "optimizer": {"sgd": {"nesterov": true}})")),
            "model.json: error: /optimizer/sgd/nesterov: bad optimizer: nesterov momentum "
            "requires a momentum and zero dampening");
  EXPECT_THAT(readError(model("[]", R"(, "optimizer": 3)")),
              StartsWith("model.json: error: /optimizer: bad optimizer 3"));
}

TEST(ReaderError, Loss) {
  EXPECT_EQ(readError(model(R"([{"name": "z", "op": "relu", "inputs": ["x"]}])",
                            R"(, "loss": "l9")")),
            "model.json: error: /loss: loss 'l9' not found");
  EXPECT_EQ(readError(model(R"([{"name": "z", "op": "relu", "inputs": ["x"]}])",
                            R"(, "loss": "z")")),
            "model.json: error: /loss: loss 'z' (relu) must be a scalar f32, got f32[100,2]");
}

TEST(ReaderError, Outputs) {
  EXPECT_EQ(readError(model(R"([{"name": "z", "op": "relu", "inputs": ["x"]}])",
                            R"(, "outputs": ["z", "q"])")),
            "model.json: error: /outputs/1: output 'q' not found");
  EXPECT_EQ(readError(model("[]", R"(, "outputs": "x")")),
            "model.json: error: /outputs: \"outputs\" must be an array of names, got \"x\"");
}

TEST(ReaderError, StagesAndGradients) {
  EXPECT_THAT(readError(model("[]", R"(, "stages": ["placed", "plaed"])")),
              StartsWith("model.json: error: /stages/1: unknown stage 'plaed'; did you mean "
                         "'placed'?"));
  EXPECT_EQ(readError(model("[]", R"(, "gradients": {"x": "w"})")),
            "model.json: error: /gradients/x: gradient of unknown param 'x'");
  EXPECT_EQ(readError(model("[]", R"(, "gradients": {"w": "w.grad"})")),
            "model.json: error: /gradients/w: gradient 'w.grad' of 'w' (param) not found");
}

TEST(ReaderError, StateNamesItsParam) {
  EXPECT_EQ(readError(R"({"mpc": 1, "state": {"m": {"shape": [2], "init": "zeros",
                                                     "param": "w"}}})"),
            "model.json: error: /state/m/param: unknown param 'w' for 'm' (state)");
}

TEST(ReaderError, BadNames) {
  EXPECT_THAT(readError(R"({"mpc": 1, "inputs": {"a b": {"shape": [2]}}})"),
              StartsWith("model.json: error: /inputs/a b: invalid input name 'a b'"));
  EXPECT_THAT(readError(model(R"([{"name": "", "op": "relu", "inputs": ["x"]}])")),
              StartsWith("model.json: error: /nodes/0/name: invalid node name ''"));
  // JSON pointer tokens are escaped.
  EXPECT_THAT(readError(R"({"mpc": 1, "inputs": {"a/b~": {"shape": [-1]}}})"),
              StartsWith("model.json: error: /inputs/a~1b~0/shape/0: negative dimension"));
}

TEST(ReaderError, WrongJsonTypes) {
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": []})"),
            "model.json: error: /inputs: \"inputs\" must be an object, got an array");
  EXPECT_EQ(readError(R"({"mpc": 1, "nodes": {}})"),
            "model.json: error: /nodes: \"nodes\" must be an array, got an object");
  EXPECT_EQ(readError(R"({"mpc": 1, "nodes": [3]})"),
            "model.json: error: /nodes/0: node must be an object, got 3");
  EXPECT_EQ(readError(R"({"mpc": 1, "nodes": [{"name": "a", "op": 3}]})"),
            "model.json: error: /nodes/0/op: \"op\" of 'a' must be a string, got 3");
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {"shape": 3}}})"),
            "model.json: error: /inputs/x/shape: shape of 'x' (input) must be an array of "
            "integers, got 3");
  EXPECT_EQ(readError(R"({"mpc": 1, "inputs": {"x": {}}})"),
            "model.json: error: /inputs/x: 'x' (input) has no \"shape\"");
}

TEST(ReaderError, DeepNestingIsRejectedWithoutCrash) {
  std::string deep(100000, '[');
  EXPECT_THAT(readError(deep), HasSubstr("model.json: error: "));
  std::string nested = R"({"mpc": 1, "name": )" + std::string(1000, '[') + std::string(1000, ']') + "}";
  EXPECT_THAT(readError(nested), HasSubstr("nesting deeper than 64 levels"));
}

TEST(ReaderError, HugeNumbers) {
  EXPECT_EQ(readError("{\"mpc\": 1,\n \"name\": -1e400}"),
            "model.json: error: 2:10: number -1e400 is out of range");
  EXPECT_THAT(readError(R"({"mpc": 99999999999999999999999})"),
              StartsWith("model.json: error: /mpc: unsupported format version"));
  EXPECT_THAT(readError(model(
                  R"([{"name": "s", "op": "softmax", "inputs": ["x"],
                       "attrs": {"axis": 9223372036854775808}}])")),
              StartsWith("model.json: error: /nodes/0/attrs/axis: "));
}

/// Every value in the seed model replaced, one at a time, by values of every
/// JSON type: the reader either accepts the result or throws a UserError.
TEST(ReaderRobustness, AnyValueReplacedGivesUserErrorOrGraph) {
  using json = nlohmann::ordered_json;
  json seed = json::parse(test::seedModelJson());
  std::vector<json::json_pointer> pointers;
  json flat = seed.flatten();
  // Every leaf and every container on the way to it.
  std::set<std::string> seen;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    json::json_pointer p(it.key());
    while (!p.empty()) {
      if (seen.insert(p.to_string()).second) pointers.push_back(p);
      p = p.parent_pointer();
    }
  }
  const std::vector<json> replacements = {
      nullptr,     true, -1, 0, 1.5, 18446744073709551615ull, "", "x", "gpu:0",
      json::array(), json::object(), json::array({1, "a"}), json::object({{"k", 1}})};
  int accepted = 0, rejected = 0;
  for (const auto &p : pointers) {
    for (const json &r : replacements) {
      json m = seed;
      m[p] = r;
      std::string text = m.dump();
      try {
        mpc::ir::readModelJson(text, "model.json");
        ++accepted;
      } catch (const UserError &) {
        ++rejected;
      } catch (const std::exception &e) {
        ADD_FAILURE() << "non-user error for " << p.to_string() << " = " << r.dump() << ": "
                      << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(accepted, 0);
}

/// Every prefix of the seed model is rejected with a UserError.
TEST(ReaderRobustness, TruncatedFilesGiveUserErrors) {
  std::string text = test::seedModelJson();
  for (size_t n = 0; n + 2 < text.size(); n += 7) {
    try {
      mpc::ir::readModelJson(text.substr(0, n), "model.json");
      ADD_FAILURE() << "accepted a prefix of " << n << " bytes";
    } catch (const UserError &e) {
      EXPECT_THAT(std::string(e.what()), StartsWith("model.json: error: "));
    }
  }
}

} // namespace
