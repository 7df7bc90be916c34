//===- ir/Type.h - tensor types, as the IR names them -------------------===//
//
// Every value in the IR is a dense tensor with a static shape: the op
// contract's TensorType (ops/Type.h), under the IR's names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Type.h"

namespace mpc::ir {

using ops::broadcastShapes;
using ops::checkedNumElements;
using ops::DType;
using ops::dtypeName;
using ops::kMaxElements;
using ops::kMaxRank;
using ops::normalizeAxis;
using ops::parseDType;
using ops::rankLimitText;
using ops::Shape;
using ops::TensorType;
using mpc::shapeText;

} // namespace mpc::ir
