# make-onnx.py KIND OUT.onnx: small ONNX models for the import-onnx tests,
# built with onnx.helper (Debian's python3-onnx).
#   mlp      x[batch,4] -> Gemm(w1,b1) -> Relu -> Gemm(w2,b2) -> y[batch,3]
#   gelu     x[2,4] -> PyTorch's exact GELU chain (Div, Erf, Add, Mul, Mul)
#   gelutanh x[2,4] -> F.gelu(approximate="tanh")'s chain (x^3 as products)
#   ln       x[2,4] -> opset 14's layer-norm chain with gamma and beta
#   erf      x[2,4] -> Erf (outside a GELU chain)
#   opset18  mlp at opset 18
#   constout x[2,4] -> Shape as the output
#   mask     x[1,3,3] -> Where(causal condition, x, -1e9)
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
F = TensorProto.FLOAT


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, dtype=np.float32), name))


def save(nodes, inputs, outputs, inits=(), opset=14):
    g = helper.make_graph(nodes, kind, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, out)


x = helper.make_tensor_value_info("x", F, [2, 4])
if kind in ("mlp", "opset18"):
    inits = [numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "fc1.weight"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "fc1.bias"),
             numpy_helper.from_array(rng.standard_normal((5, 3)).astype(np.float32), "fc2.weight"),
             numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "fc2.bias")]
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="/fc1/Gemm", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="/Relu"),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"], name="/fc2/Gemm")]
    save(nodes, [helper.make_tensor_value_info("x", F, ["batch", 4])],
         [helper.make_tensor_value_info("y", F, ["batch", 3])], inits, 18 if kind == "opset18" else 14)
elif kind == "gelu":
    nodes = [const("sqrt2", 2 ** 0.5), const("one", 1.0), const("half", 0.5),
             helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/Div"),
             helper.make_node("Erf", ["d"], ["e"], name="/Erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="/Add"),
             helper.make_node("Mul", ["x", "a"], ["m"], name="/Mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="/Mul_1")]
    save(nodes, [x], [helper.make_tensor_value_info("y", F, [2, 4])])
elif kind == "gelutanh":
    nodes = [const("k", 0.044715), const("b", (2 / np.pi) ** 0.5), const("one", 1.0),
             const("half", 0.5),
             helper.make_node("Mul", ["x", "x"], ["sq"], name="/Mul"),
             helper.make_node("Mul", ["x", "sq"], ["cube"], name="/Mul_1"),
             helper.make_node("Mul", ["k", "cube"], ["kc"], name="/Mul_2"),
             helper.make_node("Add", ["x", "kc"], ["in"], name="/Add"),
             helper.make_node("Mul", ["b", "in"], ["arg"], name="/Mul_3"),
             helper.make_node("Tanh", ["arg"], ["t"], name="/Tanh"),
             helper.make_node("Add", ["one", "t"], ["a"], name="/Add_1"),
             helper.make_node("Mul", ["x", "a"], ["m"], name="/Mul_4"),
             helper.make_node("Mul", ["half", "m"], ["y"], name="/Mul_5")]
    save(nodes, [x], [helper.make_tensor_value_info("y", F, [2, 4])])
elif kind == "ln":
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "ln.weight"),
             numpy_helper.from_array(np.zeros(4, np.float32), "ln.bias")]
    nodes = [const("two", 2.0), const("eps", 1e-5),
             helper.make_node("ReduceMean", ["x"], ["mean"], name="/ReduceMean", axes=[-1]),
             helper.make_node("Sub", ["x", "mean"], ["d"], name="/Sub"),
             helper.make_node("Pow", ["d", "two"], ["p"], name="/Pow"),
             helper.make_node("ReduceMean", ["p"], ["var"], name="/ReduceMean_1", axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="/Add"),
             helper.make_node("Sqrt", ["ve"], ["s"], name="/Sqrt"),
             helper.make_node("Div", ["d", "s"], ["n"], name="/Div"),
             helper.make_node("Mul", ["n", "ln.weight"], ["g"], name="/Mul"),
             helper.make_node("Add", ["g", "ln.bias"], ["y"], name="/Add_1")]
    save(nodes, [x], [helper.make_tensor_value_info("y", F, [2, 4])], inits)
elif kind == "erf":
    save([helper.make_node("Erf", ["x"], ["y"], name="/Erf")], [x],
         [helper.make_tensor_value_info("y", F, [2, 4])])
elif kind == "constout":
    save([helper.make_node("Shape", ["x"], ["y"], name="/Shape")], [x],
         [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
elif kind == "mask":
    cond = np.tril(np.ones((3, 3), dtype=bool))
    nodes = [helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(cond, "c")),
             const("inf", -1e9),
             helper.make_node("Where", ["c", "x", "inf"], ["y"], name="/Where")]
    save(nodes, [helper.make_tensor_value_info("x", F, [1, 3, 3])],
         [helper.make_tensor_value_info("y", F, [1, 3, 3])])
else:
    sys.exit("unknown kind " + kind)
