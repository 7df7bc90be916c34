//===- ir/RefTensor.cpp - float64 reference tensors ---------------------===//
#include "ir/RefTensor.h"

#include "ops/Float16.h"

namespace mpc::ir {

void roundToType(RefTensor &t, DType dtype) {
  if (!ops::isLowPrecision(dtype)) return;
  for (double &v : t.data) v = double(ops::roundTo(dtype, float(v)));
}

RefTensor::RefTensor(Shape s, double fill) : shape(std::move(s)) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  data.assign(size_t(n), fill);
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t broadcastIndex(const std::vector<int64_t> &outIndex, const Shape &in) {
  size_t offset = outIndex.size() - in.size();
  int64_t flat = 0;
  for (size_t i = 0; i < in.size(); ++i)
    flat = flat * in[i] + (in[i] == 1 ? 0 : outIndex[offset + i]);
  return flat;
}

bool nextIndex(std::vector<int64_t> &index, const Shape &shape) {
  for (size_t i = shape.size(); i-- > 0;) {
    if (++index[i] < shape[i]) return true;
    index[i] = 0;
  }
  return false;
}

} // namespace mpc::ir
