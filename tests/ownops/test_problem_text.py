"""A problem's module constants are found without running it, and overrides rewrite only
their literals (every other byte, and so every line number, stays)."""
import pytest

from kernels.graph import problem

SRC = '''"""doc"""
import torch
batch_size = 128   # rows
dim = -4
scale = 0.5
name = "x"
batch_size = 64
'''


def test_it_lists_the_numeric_constants_the_module_ends_with():
    consts = problem.constants(SRC)
    assert {k: c.value for k, c in consts.items()} == {"batch_size": 64, "dim": -4, "scale": 0.5}


def test_an_override_changes_only_the_literal():
    out = problem.with_overrides(SRC, {"batch_size": 7, "scale": 2})
    assert out.splitlines()[2] == "batch_size = 128   # rows"   # the earlier assignment is left alone
    assert out.splitlines()[6] == "batch_size = 7"
    assert "scale = 2" in out and len(out.splitlines()) == len(SRC.splitlines())


@pytest.mark.parametrize("overrides, words", [({"rows": 3}, "no module constant"), ({"dim": 1.5}, "not an integer"),
                                              ({"dim": "3"}, "a number")])
def test_a_bad_override_is_refused(overrides, words):
    with pytest.raises(problem.ProblemError, match=words):
        problem.with_overrides(SRC, overrides)


def test_overrides_parse_from_the_command_line():
    assert problem.parse_overrides(["batch_size=64", "eps=1e-3"]) == {"batch_size": 64, "eps": 0.001}
    with pytest.raises(problem.ProblemError):
        problem.parse_overrides(["batch_size"])
