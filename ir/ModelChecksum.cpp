//===- ir/ModelChecksum.cpp - what a model computes, whatever its layout -===//
#include "ir/ModelChecksum.h"

#include "ir/JsonWriter.h"
#include "support/Hash.h"

namespace mpc::ir {

uint64_t modelChecksum(const Graph &graph, uint64_t seed) {
  std::unique_ptr<Graph> g = graph.clone();
  for (const auto &n : g->nodes()) {
    n->device.clear();
    n->shard.reset();
  }
  g->groups.clear();
  g->pipeline = PipelineSpec{};
  g->dataParallel = DataParallelSpec{};
  g->optimizer.reset();
  uint64_t h = fnv1a64(writeModelJson(*g));
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(seed >> (8 * i));
  h = fnv1a64(le, sizeof le, h);
  return h ? h : 1;
}

} // namespace mpc::ir
