//===- frontend/onnx/Constant.h - values known at import -------------------===//
//
// Initializers, Constant nodes, and what the import folds from them: the
// shape computations an exporter leaves in a graph (Shape, Gather, Concat,
// Unsqueeze, Reshape's target; ConstantOfShape, Expand, Range, Where, Trilu
// making a causal mask). A value known at import is held in doubles, which
// hold every float32 and every integer below 2^53 exactly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mpc::frontend::onnx {

/// The most elements a value folded at import may have.
inline constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

/// A value read as an integer (a shape, an axis, an index); throws
/// RuleError beyond 2^53 or for NaN.
int64_t toInt(double v);

/// A shape's element count; a negative dimension or an overflow of int64
/// throws RuleError.
int64_t shapeProduct(const std::vector<int64_t> &shape, size_t from = 0, size_t to = SIZE_MAX);

struct Const {
  enum Kind { Float, Int, Bool } kind = Float;
  std::vector<int64_t> shape;
  std::vector<double> values; ///< row-major
  int64_t numel() const { return int64_t(values.size()); }
  bool scalarLike() const { return values.size() == 1; }
  /// Every element the same (a fill).
  bool uniform() const;
};

/// A TensorProto's values. Throws RuleError for external data, strings and
/// types mpc cannot hold.
Const readTensor(const ::onnx::TensorProto &t);

/// The ONNX element type of a kind (for Cast checks).
Const::Kind kindOfElementType(int32_t type);

/// Attribute access of one node.
class Attrs {
public:
  explicit Attrs(const ::onnx::NodeProto &n) : node_(n) {}
  bool has(const std::string &name) const { return find(name) != nullptr; }
  int64_t getInt(const std::string &name, int64_t dflt) const;
  /// An int attribute that is a flag: 0 or 1, anything else an error (ONNX's
  /// own rules disagree on other values).
  bool getBool(const std::string &name, bool dflt) const;
  double getFloat(const std::string &name, double dflt) const;
  std::string getString(const std::string &name, const std::string &dflt) const;
  std::vector<int64_t> getInts(const std::string &name, const std::vector<int64_t> &dflt) const;
  std::optional<Const> getTensor(const std::string &name) const;
  const ::onnx::AttributeProto *find(const std::string &name) const;

private:
  const ::onnx::NodeProto &node_;
};

/// Folds node `n` (op type `op`, opset `opset`) over inputs all known
/// (`inputs[i]` null for an omitted optional input), or returns nullopt when
/// mpc does not fold this op. Throws RuleError for inputs the op refuses.
std::optional<std::vector<Const>> fold(const ::onnx::NodeProto &n, int64_t opset,
                                       const std::vector<const Const *> &inputs);

/// The ops fold() evaluates; the importer also folds Constant, Shape and
/// Size (from their inputs' shapes).
const std::set<std::string> &foldableOps();
inline bool foldable(const std::string &op) { return foldableOps().count(op) > 0; }

} // namespace mpc::frontend::onnx
