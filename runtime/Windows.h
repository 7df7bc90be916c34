//===- runtime/Windows.h - sliding-window geometry of conv2d and pooling -===//
//
// conv2d, its backward ops and the pools move a kernel window over the
// spatial axes of NCHW tensors. Both backends read that geometry from an
// instruction's attributes and buffer shapes the same way, here, once at
// load: the sizes follow the ops' shape rules (ir/ops/Conv.cpp,
// ir/ops/Pool.cpp), and a buffer that disagrees with them is a RuleError
// naming the shapes (a plan is a file a user can edit).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "plan/Plan.h"

#include <cstdint>
#include <vector>

namespace mpc::runtime {

/// One convolution: x [n,c,h,w], w [o, c/groups, kh, kw], y [n,o,oh,ow].
struct ConvDims {
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t cg() const { return c / groups; }     ///< input channels per group
  int64_t og() const { return o / groups; }     ///< output channels per group
  int64_t kk() const { return cg() * kh * kw; } ///< rows of a group's columns
  int64_t ohw() const { return oh * ow; }
};

/// The geometry of conv2d(x, w) -> y from the instruction's stride,
/// padding, dilation and groups and the three buffers' shapes; throws
/// RuleError unless they agree with conv2d's shape rule.
ConvDims convDims(const plan::AttrMap &attrs, const std::vector<int64_t> &x,
                  const std::vector<int64_t> &w, const std::vector<int64_t> &y);

/// One pooling: x [n,c,h,w] -> y [n,c,oh,ow].
struct PoolDims {
  int64_t n = 0, c = 0, h = 0, w = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;
  bool countPad = true; ///< avg pooling's count_include_pad
};

/// The geometry of a pool of x -> y from kernel, stride ([] = kernel),
/// padding, ceil_mode and count_include_pad; throws RuleError unless the
/// shapes agree with the pools' shape rule.
PoolDims poolDims(const plan::AttrMap &attrs, const std::vector<int64_t> &x,
                  const std::vector<int64_t> &y);

/// The input rows [y0, y1) and columns [x0, x1) the window of output
/// (oy, ox) covers, and its average-pooling divisor (PyTorch's: the window
/// clipped to the padded input, or to the input without count_include_pad).
struct PoolWindow {
  int64_t y0, y1, x0, x1, divisor;
};
PoolWindow poolWindow(const PoolDims &d, int64_t oy, int64_t ox);

} // namespace mpc::runtime
