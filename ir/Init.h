//===- ir/Init.h - initial values of parameters and state ---------------===//
//
// Initial values are a pure function of (InitSpec, shape, tensor name, seed):
// the random stream of each tensor is seeded from a hash of its name and the
// global seed, so a model compiled for one device or for three starts from the
// same parameters, and the interpreter and the runtimes agree bit for bit.
// Codegen stores the values in plan.bin; the interpreter computes them here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace mpc::ir {

/// Default global seed used by `mpc compile` unless --seed is given.
constexpr uint64_t kDefaultSeed = 0;

/// float32 initial values, row-major.
/// xavier(magnitude): MXNet's Xavier(rnd_type='uniform', factor_type='avg'):
/// U(-s, s) with s = sqrt(magnitude / ((fan_in + fan_out) / 2)), where for a
/// shape [d0, d1, ...] fan_in = d1 * rest and fan_out = d0 * rest (MXNet's
/// convention; a rank-1 tensor uses fan_in = fan_out = d0).
std::vector<float> initialValues(const InitSpec &init, const Shape &shape,
                                 const std::string &name, uint64_t seed);

} // namespace mpc::ir
