"""The IR: JSON round trips exactly, the digest follows the content, and a stored graph
that does not check out is refused with a sentence (not loaded half-way)."""
import json

import pytest

from kernels.graph.ir import Graph, IRError, Node, Tensor


def small() -> Graph:
    return Graph((Tensor("x", (3, 4), "input", "get_inputs()[0]"),),
                 (Tensor("w", (4,), "param", "lin.weight"),),
                 (Node("a_1", "mul", ("x", "w"), (3, 4)),
                  Node("b_2", "clamp", ("a_1",), (3, 4), {"lo": float("-inf"), "hi": 2.0}),
                  Node("m_3", "gt", ("b_2", 0.0), (3, 4), dtype="bool"),
                  Node("c_4", "where", ("m_3", "b_2", 0.5), (3, 4)),
                  Node("s_5", "sum", ("c_4",), (3, 1), {"dims": [1]})),
                 ("c_4", "s_5"))


def test_it_round_trips_through_strict_json():
    g = small()
    text = g.dumps()
    json.loads(text)   # strict JSON: -inf is spelled as a string
    assert "Infinity" not in text
    back = Graph.loads(text)
    assert back.dumps() == text and back.digest() == g.digest()


def test_the_digest_changes_with_the_content():
    g = small()
    other = Graph(g.inputs, g.params, g.nodes[:-1] + (Node("s_5", "sum", ("c_4",), (1, 4), {"dims": [0]}),),
                  g.outputs)
    assert other.digest() != g.digest()


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d["nodes"][0].update(op="conv"), "unknown op"),
    (lambda d: d["nodes"][0].update(shape=[3, 5]), "declared"),
    (lambda d: d["nodes"][1]["args"].__setitem__(0, {"ref": "nope"}), "not defined before it"),
    (lambda d: d["nodes"][0].update(name="bad name"), "not a valid value name"),
    (lambda d: d.update(outputs=["m_3"]), "not float32"),
    (lambda d: d["inputs"][0].update(shape=[3, -4]), "positive integers"),
    (lambda d: d["nodes"][4]["attrs"].update(dims=[2]), "dims"),
])
def test_it_refuses_a_graph_that_does_not_check_out(mutate, words):
    data = json.loads(small().dumps())
    mutate(data)
    with pytest.raises(IRError, match=words):
        Graph.from_json(data)
