//===- ops/Conv.cpp - conv2d and its backward ops ------------------------===//
//
// conv2d is torch.nn.functional.conv2d on NCHW f32 tensors: x [N,C,H,W],
// weights w [O, C/groups, KH, KW] (OIHW), an optional bias b [O], with
// stride, symmetric zero padding, dilation and groups. Its gradient uses two
// backward ops, conv2d_grad_input (dx, a transposed convolution of dy) and
// conv2d_grad_weight (dw, the correlation of x with dy); db is a plain sum of
// dy over N, OH, OW. Each backward op carries the forward attributes plus the
// one spatial size it cannot infer from its operands (input_size for dx,
// kernel_size for dw), so neither keeps a forward tensor alive only for its
// shape. The geometry is ops/Window.cpp's; the gradient rules and reference
// kernels are in ir/ops/Conv.cpp.
//
//===----------------------------------------------------------------------===//
#include "ops/SchemaHelpers.h"
#include "ops/Window.h"

namespace mpc::ops {

using namespace helpers;

namespace {

/// The operand types as the geometry takes them.
std::vector<TensorType> types(TypeOps o) { return std::vector<TensorType>(o.begin(), o.end()); }

/// 2 multiply-adds per tap of every result element (padding included).
double convFlops(const ConvGeom &g) {
  return 2.0 * double(g.n) * double(g.o) * double(g.oh) * double(g.ow) * double(g.cg()) *
         double(g.kh) * double(g.kw);
}

std::vector<AttrSpec> convAttrs() {
  return {attr("stride", AttrType::Ints, std::vector<int64_t>{1, 1},
               "[sh, sw]: the step between windows, positive"),
          attr("padding", AttrType::Ints, std::vector<int64_t>{0, 0},
               "[ph, pw]: zeros added on both sides of H and W"),
          attr("dilation", AttrType::Ints, std::vector<int64_t>{1, 1},
               "[dh, dw]: the step between kernel taps, positive"),
          attr("groups", AttrType::Int, int64_t(1),
               "channel groups: C and O split into this many independent convolutions")};
}

/// Throws unless operand `i` is unbatched (weights are shared by micro-batches).
void requireShared(const BatchQuery &q, size_t i, const char *name) {
  if (q.classes.size() > i && q.classes[i] == BatchClass::Batched)
    throw RuleError(std::string("operand '") + name + "' " + q.operands[i].str() +
                    " is batched, but conv2d shares its weights across the batch");
}

} // namespace

void addConvSchemas(std::vector<OpSchema> &t) {
  {
    OpSchema r = makeSchema(OpKind::Conv2d, "conv2d", "Conv",
                            "2-d convolution (cross-correlation, torch.nn.functional.conv2d) of "
                            "x [N,C,H,W] with w [O,C/groups,KH,KW], plus b [O] when given: "
                            "f32[N,O,OH,OW]",
                            {"x", "w", "b"});
    r.precision = Precision::Low;
    r.minArity = 2;
    r.attrs = convAttrs();
    r.infer = [](TypeOps o, const AttrMap &a) {
      ConvGeom g = convGeom(OpKind::Conv2d, types(o), a);
      if (o.size() == 3) {
        requireDType(o[2], DType::F32, "conv2d", "b");
        if (o[2].shape != Shape{g.o})
          throw RuleError("conv2d operand 'b' must be f32[" + std::to_string(g.o) +
                          "] (the output channels of w " + o[1].str() + "), got " + o[2].str());
      }
      return TensorType{DType::F32, g.yShape()};
    };
    r.flops = [](TypeOps o, const TensorType &res, const AttrMap &a) {
      return convFlops(convGeom(OpKind::Conv2d, types(o), a)) + (o.size() == 3 ? elems(res) : 0.0);
    };
    r.batch = [](const BatchQuery &q) {
      requireShared(q, 1, "w");
      requireShared(q, 2, "b");
      return BatchResult{};
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Conv2dGradInput, "conv2d_grad_input", "Conv",
                            "dx of conv2d: the transposed convolution of dy [N,O,OH,OW] with "
                            "w [O,C/groups,KH,KW] onto f32[N,C,input_size] (not differentiable)",
                            {"dy", "w"});
    r.precision = Precision::Low;
    r.attrs = convAttrs();
    r.attrs.push_back(attr("input_size", AttrType::Ints, std::nullopt,
                           "[H, W]: the spatial size of the forward input x"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, convGeom(OpKind::Conv2dGradInput, types(o), a).xShape()};
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return convFlops(convGeom(OpKind::Conv2dGradInput, types(o), a));
    };
    r.batch = [](const BatchQuery &q) {
      requireShared(q, 1, "w");
      return BatchResult{};
    };
    t.push_back(std::move(r));
  }
  {
    OpSchema r = makeSchema(OpKind::Conv2dGradWeight, "conv2d_grad_weight", "Conv",
                            "dw of conv2d: the correlation of x [N,C,H,W] with dy [N,O,OH,OW] "
                            "summed over N, f32[O,C/groups,kernel_size] (not differentiable)",
                            {"x", "dy"});
    r.precision = Precision::Low;
    r.attrs = convAttrs();
    r.attrs.push_back(attr("kernel_size", AttrType::Ints, std::nullopt,
                           "[KH, KW]: the spatial size of the forward weights w"));
    r.infer = [](TypeOps o, const AttrMap &a) {
      return TensorType{DType::F32, convGeom(OpKind::Conv2dGradWeight, types(o), a).wShape()};
    };
    r.flops = [](TypeOps o, const TensorType &, const AttrMap &a) {
      return convFlops(convGeom(OpKind::Conv2dGradWeight, types(o), a));
    };
    // A sum over the images, so over the batch: the full-batch dw is the sum
    // of the micro-batch ones.
    r.batch = [](const BatchQuery &q) -> BatchResult {
      for (size_t i = 0; i < 2; ++i)
        if (q.classes[i] != BatchClass::Batched)
          throw RuleError(std::string("operand '") + (i == 0 ? "x" : "dy") + "' " +
                          q.operands[i].str() + " is not batched, but the other one is");
      return {BatchClass::Reduced, BatchCombine::Sum, {}};
    };
    t.push_back(std::move(r));
  }
}

} // namespace mpc::ops
