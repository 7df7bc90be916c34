//===- ir/ModelChecksum.h - what a model computes, whatever its layout ---===//
//
// Two plans of one model that differ only in where and when work runs
// (--map, --devices, --microbatches, --schedule, --data-parallel, --zero,
// --bucket-size) compute the same training, so a checkpoint of one resumes
// in the other (runtime/train/Resume.cpp). The checksum that tells them
// apart from another model is taken of the model as compile reads it,
// before any pass, with its layout left out.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>

namespace mpc::ir {

/// FNV-1a 64 of the model's JSON (writeModelJson) without devices, the
/// pipeline, data parallelism and the optimizer (which resume compares on
/// its own), mixed with `seed` (initial values and dropout masks); never 0.
uint64_t modelChecksum(const Graph &graph, uint64_t seed);

} // namespace mpc::ir
