//===- runtime/train/BatchFeed.cpp - each step's batch, device by device -===//
#include "runtime/train/BatchFeed.h"

#include <algorithm>
#include <cstring>

namespace mpc::runtime::train {

BatchFeed::BatchFeed(std::vector<Dataset> &data, int64_t rows, int64_t batchesPerEpoch,
                     bool shuffle, uint64_t seed, int64_t first)
    : data_(data), batchesPerEpoch_(std::max<int64_t>(batchesPerEpoch, 1)), shuffle_(shuffle),
      rng_(seed), staged_(first) {
  perm_.resize(size_t(std::max<int64_t>(rows, 0)));
  for (size_t i = 0; i < perm_.size(); ++i) perm_[i] = int64_t(i);
  // The order in effect after `first` steps: one shuffle per epoch begun.
  for (int64_t s = 0; s < first; s += batchesPerEpoch_) beginEpoch();
  slots_.resize(data_.size());
  for (size_t i = 0; i < data_.size(); ++i)
    if (data_[i].batch > 0 && shuffle_)
      for (auto &slot : slots_[i]) slot.resize(size_t(data_[i].batch) * data_[i].rowBytes);
}

void BatchFeed::beginEpoch() {
  if (shuffle_ && !perm_.empty()) shuffleRows(perm_, rng_);
}

void BatchFeed::stageUpTo(int64_t step) {
  for (; staged_ < step; ++staged_) {
    const int64_t inEpoch = staged_ % batchesPerEpoch_; // staged_ steps come before it
    if (inEpoch == 0) beginEpoch();
    for (size_t i = 0; i < data_.size(); ++i) {
      const Dataset &d = data_[i];
      std::vector<uint8_t> &slot = slots_[i][size_t((staged_ + 1) % 2)];
      for (int64_t r = 0; r < d.batch; ++r)
        std::memcpy(slot.data() + size_t(r) * d.rowBytes,
                    d.array.data.data() + size_t(perm_[size_t(inEpoch * d.batch + r)]) * d.rowBytes,
                    d.rowBytes);
    }
  }
}

std::span<const uint8_t> BatchFeed::bytes(size_t i, int64_t step) {
  const Dataset &d = data_[i];
  if (d.batch == 0) return d.staging;
  if (!shuffle_) {
    // Rows [k * batch, (k + 1) * batch) of the file, k the step's place in
    // its epoch: one block, read where it lies.
    const size_t at = size_t((step - 1) % batchesPerEpoch_) * size_t(d.batch) * d.rowBytes;
    return {d.array.data.data() + at, size_t(d.batch) * d.rowBytes};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stageUpTo(step);
  }
  return slots_[i][size_t(step % 2)];
}

void BatchFeed::write(Executor &ex, uint32_t device, int64_t step) {
  for (size_t i = 0; i < data_.size(); ++i) {
    bool here = false;
    for (const plan::Placement &at : data_[i].ref->placements()) here = here || at.device == device;
    if (!here) continue;
    std::span<const uint8_t> b = bytes(i, step);
    ex.writeTo(device, *data_[i].ref, b.data(), b.size());
  }
}

void BatchFeed::writeAll(Executor &ex, int64_t step) {
  for (size_t i = 0; i < data_.size(); ++i) {
    std::span<const uint8_t> b = bytes(i, step);
    ex.write(*data_[i].ref, b.data(), b.size());
  }
}

} // namespace mpc::runtime::train
