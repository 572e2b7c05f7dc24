"""The design space of a generated program: each constraint once, whatever emits it twice
(a fusable matmul's fused and unfused forms, the same group at several shapes)."""
from kernels.codegen import program
from kernels.graph.ir import Graph, Node, Tensor


def gemm_bias_relu(m: int) -> Graph:
    g = Graph((Tensor("x", (m, 16), "input"),), (Tensor("w", (16, 32), "param"), Tensor("b", (32,), "param")),
              (Node("mm", "matmul", ("x", "w"), (m, 32)), Node("add", "add", ("mm", "b"), (m, 32)),
               Node("act", "relu", ("add",), (m, 32))), ("act",))
    g.validate()
    return g


def test_a_fusable_matmul_puts_each_of_its_constraints_in_the_space_once():
    prog = program.generate(gemm_bias_relu(8))
    assert "FUSE_0" in prog.space.names           # both forms are emitted, so both brought the matmul's rules
    exprs = [c.expr for c in prog.space.constraints]
    assert exprs and len(exprs) == len(set(exprs)), exprs
    assert any("G0_MR" in e for e in exprs)


def test_the_same_program_at_several_shapes_shares_one_set_of_constraints():
    one = program.generate(gemm_bias_relu(8))
    multi = program.generate_multi([gemm_bias_relu(8), gemm_bias_relu(5)], [(8,), (5,)], ["M"])
    assert [c.expr for c in multi.space.constraints] == [c.expr for c in one.space.constraints]
