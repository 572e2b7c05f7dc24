"""Every test problem is captured in the sandbox, and our float64 interpreter of the
captured graph matches the model's own float32 outputs on the seeded inputs."""
import json

import pytest

from tests.ownops.problem_files import problem_names


@pytest.mark.parametrize("name", problem_names())
def test_it_imports_the_problem_and_the_interpreter_matches_the_model(name, imported):
    result = imported(name)
    assert result.ok, result.failure and f"{result.failure.kind}: {result.failure.reason}"
    from kernels.graph import store
    meta = store.read_meta(store.lookup(name))
    reports = [r for s in meta["shapes"] for r in s["check"]]
    assert reports and all(r["passed"] for r in reports)
    assert meta["isolation"][:1] == ["no_new_privs"] and "seccomp" in meta["isolation"]
    json.dumps(result.to_json())   # the summary is JSON


def test_the_problems_cover_every_family(imported):
    from kernels.codegen import registry
    seen = set()
    for name in problem_names():
        seen |= {g["family"] for g in imported(name).summary["groups"]}
    assert set(registry.names()) <= seen


def test_the_problems_cover_the_opset(imported):
    ops = set()
    for name in problem_names():
        ops |= set(imported(name).summary["graph"]["ops"])
    for op in ("matmul", "attention", "cat", "slice", "flip", "window", "permute", "reshape", "expand", "sum", "mean", "amax", "amin",
               "var", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "gelu_tanh", "where", "clamp",
               "maximum", "minimum", "pow", "leaky_relu", "elu", "log1p"):
        assert op in ops, op
