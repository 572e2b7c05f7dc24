import random

import pytest

from kernels.spec import Constraint, DesignSpace, Param, Shape, SpecError


def space():
    return DesignSpace(
        params=(Param("VEC", "choice", choices=(1, 8, 16)), Param("THREADS", "int", low=1, high=4),
                Param("ALGO", "variant", choices=("a", "b"))),
        constraints=(Constraint("cols % VEC == 0 or VEC == 1", "cols must be a multiple of VEC"),),
    )


def test_a_legal_point_has_no_violations():
    assert space().violations({"VEC": 8, "THREADS": 2, "ALGO": "a"}, [Shape.of(rows=4, cols=64)]) == []


def test_a_constraint_violation_names_the_shape():
    problems = space().violations({"VEC": 16, "THREADS": 2, "ALGO": "a"}, [Shape.of(rows=4, cols=33)])
    assert problems == ["cols must be a multiple of VEC at shape 4x33"]


def test_out_of_range_and_unknown_params_are_reported():
    problems = space().violations({"VEC": 3, "THREADS": 9, "ALGO": "z", "NOPE": 1})
    assert "unknown param(s): NOPE" in problems


@pytest.mark.parametrize("expr", ["__import__('os').system('x')", "open('f')", "x.y", "[i for i in x]",
                                  "lambda: 1", "2 ** VEC", "a[0]"])
def test_constraints_refuse_anything_but_arithmetic(expr):
    with pytest.raises(SpecError):
        Constraint(expr)


def test_a_malformed_constraint_says_so():
    with pytest.raises(SpecError, match="not a valid expression"):
        Constraint("VEC <")


def test_a_constraint_with_an_unknown_name_says_which():
    with pytest.raises(SpecError, match="unknown name"):
        Constraint("FOO > 1").evaluate({"VEC": 1})


def test_sampling_respects_constraints():
    rng = random.Random(1)
    shape = Shape.of(rows=4, cols=24)
    for _ in range(50):
        point = space().sample(rng, [shape])
        assert point is not None and not space().violations(point, [shape])


def test_params_must_be_macro_names():
    with pytest.raises(SpecError):
        Param("vec", "int", low=1, high=2)


def test_constraints_over_shape_dims_wait_for_shapes():
    assert space().violations({"VEC": 16, "THREADS": 2, "ALGO": "a"}) == []
    assert space().sample(random.Random(2)) is not None


@pytest.mark.parametrize("expr", ["'a' * 10 ** 18 == 'b'", "'a' * 10 ** 8 == 'b'", "'x' + 'y' == 'xy'"])
def test_a_constraint_cannot_repeat_or_build_strings(expr):
    with pytest.raises(SpecError, match="numbers only"):
        Constraint(expr)


def test_a_constraint_that_builds_a_huge_number_is_refused_not_computed():
    import time
    started = time.monotonic()
    with pytest.raises(SpecError, match="2\\^256"):
        Constraint("((10 ** 64) ** 64) ** 64 > VEC").evaluate({"VEC": 1})
    assert time.monotonic() - started < 0.5


def test_a_string_param_in_arithmetic_is_an_error_with_the_expression():
    with pytest.raises(SpecError, match="numbers only"):
        Constraint("ALGO * 3 == 'xxx'").evaluate({"ALGO": "x"})


def test_a_very_long_constraint_is_refused():
    with pytest.raises(SpecError, match="2000 characters"):
        Constraint(" + ".join(["VEC"] * 1000) + " > 0")
def test_a_goal_without_shapes_searches_the_typical_one():
    from kernels import workloads
    wl = workloads.get("softmax")
    assert wl.goal_shapes([]) == [wl.shapes.typical[0]]
    assert wl.goal_shapes(["64x256", "32x128"]) == [Shape.of(rows=64, cols=256), Shape.of(rows=32, cols=128)]


def many_groups(n: int) -> DesignSpace:
    """A generated program's shape of space: ``n`` groups whose knobs only their own group's
    constraints link (an engine has hundreds of knobs in dozens of groups)."""
    params, constraints = [], []
    for g in range(n):
        params += [Param(f"G{g}_MR", "choice", choices=(2, 4, 6, 8)), Param(f"G{g}_MC", "choice", choices=(24, 48, 96)),
                   Param(f"G{g}_T", "int", low=1, high=2)]
        constraints += [Constraint(f"G{g}_MC % G{g}_MR == 0", "MC is whole MR panels"),
                        Constraint(f"G{g}_MC <= rows", "MC within the rows")]
    return DesignSpace(params=tuple(params), constraints=tuple(constraints))


def test_a_space_of_many_groups_samples_each_group_alone():
    # all 60 groups legal at once by whole-point rejection: (3/4 * 2/3)^60 ~ 1e-18 per draw
    sp, shape = many_groups(60), Shape.of(rows=48)
    rng = random.Random(3)
    points = [sp.sample(rng, [shape]) for _ in range(30)]
    assert all(p is not None and not sp.violations(p, [shape]) for p in points)
    assert len({tuple(sorted(p.items())) for p in points}) == 30
    # a group's legal pairs are drawn at random (8 of them at 48 rows), not one fixed repair
    pairs = {(p["G7_MR"], p["G7_MC"]) for p in points}
    assert len(pairs) >= 5 and all(mc <= 48 for _, mc in pairs)


def test_repair_keeps_the_legal_groups_and_redraws_the_rest():
    sp, shape = many_groups(3), Shape.of(rows=48)
    point = {**sp.default(), "G0_MR": 8, "G0_MC": 96, "G1_MR": 4, "G1_MC": 48, "G2_MR": 6, "G2_MC": 48}
    fixed = sp.repair(point, random.Random(0), [shape])
    assert not sp.violations(fixed, [shape])
    assert (fixed["G1_MR"], fixed["G1_MC"]) == (4, 48)          # legal: kept
    assert (fixed["G0_MR"], fixed["G0_MC"]) != (8, 96)          # 96 > rows: redrawn
    assert (fixed["G2_MR"], fixed["G2_MC"]) == (6, 48)          # legal: kept


def test_a_constraint_over_shape_dims_alone_cannot_be_sampled_around():
    sp = DesignSpace(params=(Param("VEC", "choice", choices=(1, 8)),),
                     constraints=(Constraint("rows <= 64", "at most 64 rows"),))
    assert sp.sample(random.Random(0), [Shape.of(rows=128)]) is None
    assert sp.sample(random.Random(0), [Shape.of(rows=32)]) is not None
