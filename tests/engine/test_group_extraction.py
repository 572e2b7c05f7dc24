"""A fusion group cut out of its program as a graph of its own (kernels.engine.breakdown),
on a small graph, without the sandbox: its members, its reads as inputs (weights too), what
others read of it as outputs, the forms a FUSE bit picks, and its knobs in the isolated
program."""
from kernels.codegen import program
from kernels.engine import breakdown
from kernels.graph.ir import Graph, Node, Tensor
from kernels.graph.workload import in_memory


def softmax(x: str, tag: str, rows: int, cols: int) -> list:
    return [Node(f"{tag}_max", "amax", (x,), (rows, 1), {"dims": [1]}),
            Node(f"{tag}_sub", "sub", (x, f"{tag}_max"), (rows, cols)),
            Node(f"{tag}_exp", "exp", (f"{tag}_sub",), (rows, cols)),
            Node(f"{tag}_sum", "sum", (f"{tag}_exp",), (rows, 1), {"dims": [1]}),
            Node(f"{tag}_out", "div", (f"{tag}_exp", f"{tag}_sum"), (rows, cols))]


def gemm_relu_then_softmaxes() -> Graph:
    """relu(x @ w + b) (returned), then a softmax over its transpose, and the same softmax over
    the transpose of y."""
    nodes = [Node("mm", "matmul", ("x", "w"), (8, 32)), Node("add", "add", ("mm", "b"), (8, 32)),
             Node("act", "relu", ("add",), (8, 32)), Node("t", "permute", ("act",), (32, 8), {"perm": [1, 0]}),
             *softmax("t", "a", 32, 8), Node("u", "permute", ("y",), (32, 8), {"perm": [1, 0]}),
             *softmax("u", "c", 32, 8)]
    g = Graph((Tensor("x", (8, 16), "input"), Tensor("y", (8, 32), "input")),
              (Tensor("w", (16, 32), "param", "lin.weight"), Tensor("b", (32,), "param", "lin.bias")),
              tuple(nodes), ("a_out", "act", "c_out"))
    g.validate()
    return g


def by_form(pieces):
    return {(p.group["family"], p.group.get("form")): p for p in pieces}


def test_a_fused_matmul_is_cut_out_with_its_epilogue_and_its_weights_as_inputs():
    prog = program.generate(gemm_relu_then_softmaxes())
    pieces = breakdown.pieces(prog.planned, prog.groups, {**prog.space.default(), "FUSE_0": 1})
    assert len(pieces) == len(breakdown.active(prog.groups, {"FUSE_0": 1})) == 3
    fused = by_form(pieces)[("matmul", "fused")].graph
    assert [t.name for t in fused.inputs] == ["x", "w", "b"] and not fused.params
    assert [n.name for n in fused.nodes] == ["mm", "add", "act"]
    assert fused.outputs == ("act",)           # read by the softmax group, and returned


def test_with_the_bit_off_the_product_and_the_epilogue_are_two_groups():
    prog = program.generate(gemm_relu_then_softmaxes())
    pieces = by_form(breakdown.pieces(prog.planned, prog.groups, {**prog.space.default(), "FUSE_0": 0}))
    assert set(pieces) == {("matmul", "unfused"), ("pointwise", "split"), ("reduction", None)}
    product = pieces[("matmul", "unfused")].graph
    assert [t.name for t in product.inputs] == ["x", "w"] and [n.name for n in product.nodes] == ["mm"]
    assert product.outputs == ("mm",)          # the epilogue, now another group, reads it
    epilogue = pieces[("pointwise", "split")].graph
    assert [t.name for t in epilogue.inputs] == ["mm", "b"] and epilogue.outputs == ("act",)


def test_a_group_reads_through_a_view_and_the_same_group_elsewhere_has_the_same_key():
    prog = program.generate(gemm_relu_then_softmaxes())
    pieces = [p for p in breakdown.pieces(prog.planned, prog.groups, prog.space.default())
              if p.group["family"] == "reduction"]
    over_act, over_y = sorted(pieces, key=lambda p: p.graph.outputs)
    assert [t.name for t in over_act.graph.inputs] == ["act"]
    assert over_act.graph.nodes[0].name == "t"         # the transpose is followed, not computed
    assert over_act.graph.outputs == ("a_out",) and over_y.graph.outputs == ("c_out",)
    assert over_act.key == over_y.key                 # same structure and sizes: timed once
    plain = Graph((Tensor("y", (32, 8), "input"),), (), tuple(softmax("y", "c", 32, 8)), ("c_out",))
    smaller = Graph((Tensor("y", (16, 8), "input"),), (), tuple(softmax("y", "c", 16, 8)), ("c_out",))
    assert over_act.key not in (breakdown.canonical(plain), breakdown.canonical(smaller))   # layout, sizes


def test_the_engines_knobs_become_the_isolated_programs(tmp_path):
    prog = program.generate(gemm_relu_then_softmaxes())
    params = {**prog.space.default(), "FUSE_0": 0, "G1000_VEC": 8, "G0_UNROLL": 1}
    pieces = by_form(breakdown.pieces(prog.planned, prog.groups, params))
    split = pieces[("pointwise", "split")]
    alone = in_memory("split_alone", split.graph, {}, tmp_path / "split")
    mine, notes = breakdown.own_params(split.group, params, list(alone.groups), alone.template("cpu").space,
                                       alone.shapes.typical[0])
    assert mine["G0_VEC"] == 8 and not notes     # G1000_ in the engine, G0_ alone
    product = pieces[("matmul", "unfused")]
    alone = in_memory("product_alone", product.graph, {}, tmp_path / "product")
    mine, _ = breakdown.own_params(product.group, params, list(alone.groups), alone.template("cpu").space,
                                   alone.shapes.typical[0])
    assert mine["G0_UNROLL"] == 1 and "FUSE_0" not in mine


def test_a_group_the_harness_refuses_is_a_row_not_timed_with_the_reason():
    from kernels.harness.outcome import EvalOutcome
    prog = program.generate(gemm_relu_then_softmaxes())
    piece = breakdown.pieces(prog.planned, prog.groups, prog.space.default())[-1]
    wrong = breakdown._Distinct([piece], outcome=EvalOutcome("wrong", "out0 differs at [3, 1] (NaN where 0.5)"))
    row = breakdown._row(wrong)
    assert row["median_ms"] is None and row["total_ms"] == 0.0 and row["count"] == 1
    assert row["reason"] == "not timed: wrong: out0 differs at [3, 1] (NaN where 0.5)"
