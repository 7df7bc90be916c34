//===- frontend/onnx/OnnxFile.cpp - an ONNX model, read and checked --------===//
#include "frontend/onnx/OnnxFile.h"

#include "support/Error.h"
#include "support/StringUtil.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <set>
#include <sstream>

namespace mpc::frontend::onnx {

std::string elementTypeName(int32_t type) {
  using T = ::onnx::TensorProto;
  switch (type) {
  case T::FLOAT: return "float";
  case T::UINT8: return "uint8";
  case T::INT8: return "int8";
  case T::UINT16: return "uint16";
  case T::INT16: return "int16";
  case T::INT32: return "int32";
  case T::INT64: return "int64";
  case T::STRING: return "string";
  case T::BOOL: return "bool";
  case T::FLOAT16: return "float16";
  case T::DOUBLE: return "double";
  case T::UINT32: return "uint32";
  case T::UINT64: return "uint64";
  case T::BFLOAT16: return "bfloat16";
  default: return "type " + std::to_string(type);
  }
}

namespace {

std::vector<int64_t> shapeOf(const ::onnx::TypeProto &t) {
  std::vector<int64_t> s;
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return s;
  for (const auto &d : t.tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return s;
}

} // namespace

OnnxFile readOnnxFile(const std::string &file, const std::vector<InputSpec> &inputs,
                      const BeforeCheck &beforeCheck) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(file, "", "cannot open file");
  std::stringstream bytes;
  bytes << in.rdbuf();
  return parseOnnxFile(bytes.str(), file, inputs, beforeCheck);
}

OnnxFile parseOnnxFile(const std::string &bytes, const std::string &file,
                       const std::vector<InputSpec> &inputs, const BeforeCheck &beforeCheck) {
  OnnxFile f;
  f.file = file;
  if (!f.model.ParseFromString(bytes))
    throw UserError(file, "", "not an ONNX model (the protobuf does not parse as a ModelProto)");
  bool found = false;
  for (const auto &o : f.model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      if (found)
        throw UserError(file, "opset_import", "the default domain is imported twice (opsets " +
                                                  std::to_string(f.opset) + " and " +
                                                  std::to_string(o.version()) + ")");
      f.opset = o.version();
      found = true;
    } else {
      throw UserError(file, "opset_import",
                      "the model uses operator domain " + quoteName(o.domain()) +
                          "; mpc imports the default domain only");
    }
  if (!found) throw UserError(file, "opset_import", "the model names no default-domain opset");
  if (f.opset < kMinOpset || f.opset > kMaxOpset)
    throw UserError(file, "opset_import",
                    "opset " + std::to_string(f.opset) + " is not supported: mpc imports opsets " +
                        std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                        " (re-export with torch.onnx.export(..., opset_version=17))");
  if (beforeCheck) beforeCheck(f);
  // Fix the dimensions --input gives.
  ::onnx::GraphProto *g = f.model.mutable_graph();
  std::set<std::string> initializers;
  for (const auto &t : g->initializer()) initializers.insert(t.name());
  for (const InputSpec &spec : inputs) {
    ::onnx::ValueInfoProto *vi = nullptr;
    for (auto &i : *g->mutable_input())
      if (i.name() == spec.name && !initializers.count(i.name())) vi = &i;
    if (!vi) {
      std::string names;
      for (const auto &i : g->input())
        if (!initializers.count(i.name())) names += (names.empty() ? "" : ", ") + i.name();
      throw UserError("", "--input " + spec.name,
                      "the model has no input " + quoteName(spec.name) + " (its inputs: " +
                          (names.empty() ? "none" : names) + ")");
    }
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    int32_t et = tt->elem_type();
    bool isInt = et == ::onnx::TensorProto::INT64 || et == ::onnx::TensorProto::INT32;
    if (spec.i32 != isInt)
      throw UserError("", "--input " + spec.name,
                      "input " + quoteName(spec.name) + " is " + elementTypeName(et) +
                          (isInt ? ": add :i32" : ": drop :i32"));
    auto *shape = tt->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != int(spec.shape.size()))
      throw UserError("", "--input " + spec.name,
                      "input " + quoteName(spec.name) + " has rank " +
                          std::to_string(shape->dim_size()) + ", not " +
                          std::to_string(spec.shape.size()));
    for (size_t k = 0; k < spec.shape.size(); ++k) {
      if (int(k) < shape->dim_size() && shape->dim(int(k)).has_dim_value() &&
          shape->dim(int(k)).dim_value() != spec.shape[k])
        throw UserError("", "--input " + spec.name,
                        "dimension " + std::to_string(k) + " of input " + quoteName(spec.name) +
                            " is " + std::to_string(shape->dim(int(k)).dim_value()) +
                            " in the model, not " + std::to_string(spec.shape[k]));
    }
    shape->clear_dim();
    for (int64_t d : spec.shape) shape->add_dim()->set_dim_value(d);
  }
  // A value declared twice must be declared alike (ONNX's inference takes
  // one of them on trust).
  std::map<std::string, std::vector<int64_t>> declaredShape;
  for (const auto *list : {&g->input(), &g->output(), &g->value_info()})
    for (const auto &v : *list) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> s = shapeOf(v.type());
      auto [it, fresh] = declaredShape.emplace(v.name(), s);
      auto differ = [](const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
        if (a.size() != b.size()) return true;
        for (size_t k = 0; k < a.size(); ++k)
          if (a[k] >= 0 && b[k] >= 0 && a[k] != b[k]) return true; // -1: symbolic
        return false;
      };
      if (!fresh && differ(it->second, s))
        throw UserError(file, "value " + v.name(),
                        "value " + quoteName(v.name()) + " is declared twice, with different shapes");
      if (list != &g->input()) f.declared.insert(v.name());
    }
  try {
    ::onnx::checker::check_model(f.model);
  } catch (const std::exception &e) {
    throw UserError(file, "", std::string("the ONNX checker rejects the model: ") + e.what());
  }
  try {
    ::onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict=*/1, /*data_prop=*/true);
    ::onnx::shape_inference::InferShapes(f.model, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    throw UserError(file, "", std::string("ONNX shape inference fails: ") + e.what());
  }
  for (const auto &v : g->input()) f.shapes[v.name()] = shapeOf(v.type());
  for (const auto &v : g->value_info()) f.shapes[v.name()] = shapeOf(v.type());
  for (const auto &v : g->output()) f.shapes[v.name()] = shapeOf(v.type());
  return f;
}

} // namespace mpc::frontend::onnx
