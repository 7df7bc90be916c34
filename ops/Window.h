//===- ops/Window.h - sliding-window geometry of conv2d and pooling ------===//
//
// conv2d, its backward ops and the pools move a kernel window over the
// spatial axes of NCHW tensors. Their shape rules (ops/Conv.cpp,
// ops/Pool.cpp), the reference kernels (ir/ops/) and both backends read that
// geometry here, from the operand types and the attributes, one way. The
// functions check what they read and throw RuleError naming the shapes; once
// the plan verifier has run an instruction's shape rule, a backend's call
// cannot fail. C++17: the CUDA kernel files include it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"
#include "ops/OpKind.h"
#include "ops/Type.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace mpc::ops {

/// Window attributes (kernel, stride, padding, dilation, sizes, groups)
/// beyond this are surely mistakes; bounding them keeps size arithmetic far
/// from int64 overflow.
constexpr int64_t kMaxWindowAttr = int64_t(1) << 20;

/// A two-value (height, width) attribute `v` named `name`, each value in
/// [lo, kMaxWindowAttr]; `what` words the lower bound for the message
/// ("positive").
std::pair<int64_t, int64_t> heightWidth(const char *op, const std::vector<int64_t> &v,
                                        const char *name, int64_t lo, const char *what);

/// One convolution: x [n,c,h,w], w [o, c/groups, kh, kw], y [n,o,oh,ow].
struct ConvGeom {
  int64_t n = 0, c = 0, h = 0, w = 0; ///< x
  int64_t o = 0, kh = 0, kw = 0;      ///< w (its input channels are c / groups)
  int64_t oh = 0, ow = 0;             ///< the result's spatial size
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t cg() const { return c / groups; }     ///< input channels per group
  int64_t og() const { return o / groups; }     ///< output channels per group
  int64_t kk() const { return cg() * kh * kw; } ///< rows of a group's im2col columns
  int64_t ohw() const { return oh * ow; }
  Shape xShape() const { return {n, c, h, w}; }
  Shape wShape() const { return {o, c / groups, kh, kw}; }
  Shape yShape() const { return {n, o, oh, ow}; }
};

/// The geometry of the forward conv2d behind an instruction of `kind`
/// (conv2d, conv2d_grad_input or conv2d_grad_weight) with these operand
/// types and attributes; checks the operands (dy against the forward result)
/// and throws RuleError naming the op and the shapes.
ConvGeom convGeom(OpKind kind, const std::vector<TensorType> &operands, const AttrMap &attrs);

/// One pooling: x [n,c,h,w] -> y [n,c,oh,ow].
struct PoolGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t oh = 0, ow = 0;
  /// avg pooling's count_include_pad (attributes without it: max pooling,
  /// which has no divisor).
  bool countPad = true;
  Shape xShape() const { return {n, c, h, w}; }
  Shape yShape() const { return {n, c, oh, ow}; }
};

/// The geometry of the pool behind an instruction of `kind` (max_pool2d,
/// max_pool2d_grad, avg_pool2d or avg_pool2d_grad) with these operand types
/// and attributes (kernel, stride, [] = kernel, padding, ceil_mode,
/// count_include_pad, input_size); checks dy against the forward result.
PoolGeom poolGeom(OpKind kind, const std::vector<TensorType> &operands, const AttrMap &attrs);

/// The input rows [y0, y1) and columns [x0, x1) the window of output
/// (oy, ox) covers, and its average-pooling divisor (PyTorch's: the window
/// clipped to the padded input, or to the input without count_include_pad).
struct PoolWindow {
  int64_t y0, y1, x0, x1, divisor;
};
PoolWindow poolWindow(const PoolGeom &g, int64_t oy, int64_t ox);

} // namespace mpc::ops
