//===- ir/Attribute.h - op attributes, as the IR names them -------------===//
//
// The attribute types and values of ops/Attribute.h, under the IR's names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"

namespace mpc::ir {

using ops::AttrMap;
using ops::AttrSpec;
using ops::AttrType;
using ops::attrTypeName;
using ops::attrTypeOf;
using ops::AttrValue;
using ops::attrValueStr;
using ops::getBool;
using ops::getFloat;
using ops::getInt;
using ops::getInts;
using ops::getString;

} // namespace mpc::ir
