//===- ops/Pool.cpp - max, average and global average pooling ------------===//
//
// 2-d pooling over NCHW f32 tensors as torch.nn.functional.max_pool2d and
// avg_pool2d: a kernel window moved by stride over the input with symmetric
// padding (which max pooling never picks and average pooling counts as zeros
// or leaves out, as count_include_pad says). The output size is PyTorch's,
// with ceil_mode the windows that would start beyond the input and its left
// padding dropped (MXNet's pooling_convention "full" is ceil_mode wherever no
// window starts there; import-mxnet refuses the rest); the
// geometry is ops/Window.cpp's. max_pool2d's gradient routes dy to the first
// maximum of each window in row-major order (PyTorch's tie rule), recomputed
// by max_pool2d_grad from x; avg_pool2d's spreads dy / divisor over each
// window (avg_pool2d_grad, which needs only dy and the input size).
// global_avg_pool2d is the mean over H and W. The gradient rules and
// reference kernels are in ir/ops/Pool.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"
#include "ops/Window.h"

namespace mpc::ops {

using namespace helpers;

namespace {

/// The operand types as the geometry takes them.
std::vector<TensorType> types(TypeOps o) { return std::vector<TensorType>(o.begin(), o.end()); }

std::vector<AttrSpec> poolAttrs(bool avg) {
  std::vector<AttrSpec> a = {
      attr("kernel", AttrType::Ints, std::nullopt, "[kh, kw]: the window, positive"),
      attr("stride", AttrType::Ints, std::vector<int64_t>{},
           "[sh, sw]: the step between windows, positive; [] is the kernel"),
      attr("padding", AttrType::Ints, std::vector<int64_t>{0, 0},
           "[ph, pw]: added on both sides of H and W, at most half the kernel"),
      attr("ceil_mode", AttrType::Bool, false,
           "round the output size up (a partial last window; MXNet's "
           "pooling_convention \"full\")")};
  if (avg)
    a.push_back(attr("count_include_pad", AttrType::Bool, true,
                     "divide by the window size including padding (else by the input "
                     "elements it covers)"));
  return a;
}

double windowFlops(TypeOps, const TensorType &result, const AttrMap &a) {
  const std::vector<int64_t> &k = getInts(a, "kernel");
  return elems(result) * double(k.size() == 2 ? k[0] * k[1] : 1);
}

} // namespace

void addPoolSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::MaxPool2d, "max_pool2d", "Pool",
                            "the maximum of each kernel window of x [N,C,H,W] "
                            "(torch.nn.functional.max_pool2d; padding never wins)",
                            {"x"});
    r.precision = Precision::Follow;
    r.attrs = poolAttrs(false);
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, poolGeom(OpKind::MaxPool2d, types(o), a).yShape()};
    };
    r.flops = windowFlops;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::MaxPool2dGrad, "max_pool2d_grad", "Pool",
                            "dx of max_pool2d: zeros with each dy added at the first maximum of "
                            "its window of x (not differentiable)",
                            {"x", "dy"});
    r.precision = Precision::Follow;
    r.attrs = poolAttrs(false);
    r.infer = [](TypeOps o, const AttrMap &a) {
      poolGeom(OpKind::MaxPool2dGrad, types(o), a);
      return o[0];
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return windowFlops(o, o[1], a);
    };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::AvgPool2d, "avg_pool2d", "Pool",
                            "the mean of each kernel window of x [N,C,H,W] "
                            "(torch.nn.functional.avg_pool2d)",
                            {"x"});
    r.precision = Precision::Follow;
    r.attrs = poolAttrs(true);
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, poolGeom(OpKind::AvgPool2d, types(o), a).yShape()};
    };
    r.flops = windowFlops;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::AvgPool2dGrad, "avg_pool2d_grad", "Pool",
                            "dx of avg_pool2d: zeros f32[N,C,input_size] with each dy / divisor "
                            "added over its window (not differentiable)",
                            {"dy"});
    r.precision = Precision::Follow;
    r.attrs = poolAttrs(true);
    r.attrs.push_back(attr("input_size", AttrType::Ints, std::nullopt,
                           "[H, W]: the spatial size of the forward input x"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, poolGeom(OpKind::AvgPool2dGrad, types(o), a).xShape()};
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return windowFlops(o, o[0], a);
    };
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::GlobalAvgPool2d, "global_avg_pool2d", "Pool",
                            "the mean over H and W of x [N,C,H,W]: f32[N,C,1,1] "
                            "(torch.nn.functional.adaptive_avg_pool2d(x, 1))",
                            {"x"});
    r.infer = [](TypeOps o, const AttrMap &) {
      const TensorType &x = o[0];
      requireDType(x, DType::F32, "global_avg_pool2d", "x");
      if (x.rank() != 4 || x.shape[2] < 1 || x.shape[3] < 1)
        throw RuleError("global_avg_pool2d operand 'x' must be f32 of rank 4 (N,C,H,W) with "
                        "H, W >= 1, got " +
                        x.str());
      return TensorType{DType::F32, {x.shape[0], x.shape[1], 1, 1}};
    };
    r.flops = flopsPerInput<1>;
    r.batch = rowwiseBatchRule;
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
