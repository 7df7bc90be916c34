//===- test/unit/ir/OpCases.h - the table of op test cases --------------===//
//
// One list of cases per op: operand types (with broadcasting and size-1
// dimensions), attributes, the range of input values (with points to keep
// away from, such as relu's kink) and tolerances. The shape-rule, gradient
// and reference tests iterate over it, and backend kernel tests reuse it to
// compare a kernel with the op's float64 reference kernel on the same inputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Attribute.h"
#include "ir/OpInfo.h"
#include "ir/RefTensor.h"
#include "ir/Type.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpc::ir::opcases {

/// How to draw the values of one operand.
struct InputSpec {
  double lo = -2.0; ///< inclusive
  double hi = 2.0;  ///< exclusive for reals, inclusive for integers
  bool integer = false; ///< draw integers in [lo, hi] (labels, step counters)
  std::vector<double> avoid; ///< keep values at least `margin` away from these
  double margin = 0.05;
};

struct OpCase {
  OpKind kind;
  std::string label; ///< short, unique within the op: "bcast_row"
  std::vector<TensorType> operands;
  AttrMap attrs; ///< may omit attributes that have defaults
  std::vector<InputSpec> inputs; ///< per operand; missing entries use InputSpec{}
  /// A float32 kernel may differ from the float64 reference by this much
  /// (min of absolute and relative error).
  double tol = 1e-5;
  /// Finite-difference tolerance of the gradient check (float64 throughout).
  double gradTol = 1e-6;

  /// "add_bcast_row": op name and label, usable as a test name.
  std::string name() const;
  const InputSpec &input(size_t i) const;
};

/// Every case of every op, in OpList.def order.
const std::vector<OpCase> &allOpCases();

/// Every case of an op that takes bf16 and f16 (ops::Precision Low and
/// Follow), once in each: its f32 operands in the low type (matmul's
/// accumulator stays f32), its tolerance that of one rounding of the
/// result. The kernel and shape-rule tests run them; gradients are checked
/// in f32 only (rounding has no finite difference worth taking).
const std::vector<OpCase> &lowPrecisionCases();

/// The cases of one op.
std::vector<const OpCase *> casesFor(OpKind kind);

/// Deterministic random operand values for `c`, each exactly representable in
/// float32 (so a float32 kernel and the float64 reference see equal inputs).
std::vector<RefTensor> makeInputs(const OpCase &c, uint64_t seed = 0);

/// The attributes of `c` with the op's defaults filled in.
AttrMap fullAttrs(const OpCase &c);

/// The result type of `c` by the op's shape rule.
TensorType resultType(const OpCase &c);

/// Runs the op's reference kernel on `inputs` (which optimizer ops update in
/// place) and returns the result.
RefTensor runReference(const OpCase &c, std::vector<RefTensor> &inputs);

/// A case run in place: the result written into operand `operand`'s buffer.
struct AliasCase {
  const OpCase *c = nullptr;
  int operand = 0;
  /// "tanh_basic_in0": the case's name and the aliased operand.
  std::string name() const;
};

/// The in-place runs of `cases`: for each case of an op with inPlaceOperands,
/// one per listed operand that has exactly the result's type (the only
/// operands the compiler lets the result take over).
std::vector<AliasCase> aliasCases(const std::vector<const OpCase *> &cases);

/// min(|got - want|, |got - want| / |want|): Glow's error measure.
double errorOf(double got, double want);

/// Deterministic uniform doubles in [lo, hi), float32-representable.
RefTensor randomTensor(const Shape &shape, uint64_t seed, double lo = -1.0, double hi = 1.0);

} // namespace mpc::ir::opcases
