"""Every pointwise op of the opset, as the generated C computes it (the vectorisable math
library in kernels/codegen/cmath.py), agrees with the float64 interpreter — judged by the
harness like any candidate — over small, ordinary and saturating arguments."""
import pytest

from kernels.codegen import cmath
from kernels.graph import opset
from kernels.graph.ir import Graph, Node, Tensor
from kernels.graph.workload import in_memory
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.spec import Tolerance

POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt"}
SKIP = {"identity", "not", "to_f32", "to_bool", "where", "and", "or", "xor"}


def op_graph(chunk: int | None = None, chunks: int = 4) -> Graph:
    x, y = Tensor("x", (9, 131), "input"), Tensor("y", (131,), "input")
    nodes, outs = [], []

    def add(name, op, args, attrs=None, dtype="f32", shape=(9, 131)):
        nodes.append(Node(name, op, tuple(args), shape, attrs or {}, dtype))
        return name
    add("ax", "abs", ["x"])
    add("pos", "add", ["ax", 0.01])
    add("big", "mul", ["x", 8.0])
    add("ay", "abs", ["y"], shape=(131,))
    add("den", "add", ["ay", 0.5], shape=(131,))
    attrs = {"leaky_relu": {"slope": 0.1}, "elu": {"alpha": 1.3, "scale": 1.1, "input_scale": 0.9},
             "clamp": {"lo": -0.5, "hi": 1.5}}
    for name, op in sorted(opset.OPS.items()):
        if op.family != "pointwise" or name in SKIP:
            continue
        if op.arity == 1:
            src = ["pos"] if name in POSITIVE else ["x"]
            outs.append(add(f"o_{name}", name, src, attrs.get(name)))
            if name not in POSITIVE and name not in ("log1p",):
                outs.append(add(f"o_{name}_big", name, ["big"], attrs.get(name)))
        elif op.out_dtype == "bool":
            add(f"m_{name}", name, ["x", "y"], dtype="bool")
            outs.append(add(f"o_{name}", "where", [f"m_{name}", "x", -1.0]))
        elif name == "pow":
            outs.append(add("o_pow", "pow", ["pos", "y"]))
            outs.append(add("o_pow_sq", "pow", ["x", 2.0]))
            outs.append(add("o_pow_half", "pow", ["pos", 0.5]))
            outs.append(add("o_pow_int", "pow", ["x", 3.0]))
        elif name in ("div", "fmod", "remainder", "floordiv"):
            outs.append(add(f"o_{name}", name, ["x", "den"]))
        else:
            outs.append(add(f"o_{name}", name, ["x", "y"]))
    add("m_all", "gt", ["x", 0.0], dtype="bool")
    add("m_any", "lt", ["y", 0.3], dtype="bool", shape=(131,))
    for lop in ("and", "or", "xor"):
        add(f"m_{lop}", lop, ["m_all", "m_any"], dtype="bool")
        outs.append(add(f"o_{lop}", "where", [f"m_{lop}", "x", "y"]))
    add("m_not", "not", ["m_all"], dtype="bool")
    outs.append(add("o_not", "to_f32", ["m_not"]))
    if chunk is not None:   # the harness opens two files per output and case: keep it well under its cap
        outs = outs[chunk::chunks]
    g = Graph((x, y), (), tuple(nodes), tuple(outs))
    g.validate()
    return g


def test_every_pointwise_op_has_c():
    for name, op in opset.OPS.items():
        if op.family == "pointwise":
            assert name in cmath.C_OPS, name


@pytest.mark.parametrize("chunk", range(4))
def test_the_generated_c_of_every_pointwise_op_matches_the_interpreter(chunk, tmp_path):
    g = op_graph(chunk)
    wl = in_memory("pointwise_ops", g, {}, tmp_path, distributions=("model",),
                   tolerance=Tolerance(atol=2e-5, rtol=2e-5))
    src, params = wl.template("cpu").seeds()[0]
    out = Evaluator(EvalSettings(timing=False, seeds=3)).evaluate(src, params, wl, "cpu")
    assert out.status == "ok", out.reason


def test_two_workloads_of_one_name_are_each_judged_against_their_own_reference(tmp_path):
    """A worker keeps base data sets (and their references) between evaluations; a re-import
    under the same name, or another fusion group in memory, must not meet the old ones."""
    tol = Tolerance(atol=2e-5, rtol=2e-5)
    settings = EvalSettings(timing=False, seeds=2)
    for chunk in (0, 1):
        wl = in_memory("same_name", op_graph(chunk), {}, tmp_path / str(chunk), distributions=("model",), tolerance=tol)
        src, params = wl.template("cpu").seeds()[0]
        out = Evaluator(settings).evaluate(src, params, wl, "cpu")
        assert out.status == "ok", out.reason
