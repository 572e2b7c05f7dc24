"""Tuning a fusion group alone climbs one knob at a time from the generator's defaults:
algorithm choices first, and never a knob that is dead under the algorithm in use."""
import random

import pytest

from kernels.codegen import program
from kernels.engine.tune import _climb
from kernels.graph.ir import Graph, Node, Tensor
from kernels.spec import Constraint, DesignSpace, Param, SpecError

SPACE = DesignSpace((
    Param("THREADS", "choice", choices=(1, 2), default=2),
    Param("ALGO", "choice", choices=(0, 1, 3), default=3),
    Param("MR", "choice", choices=(2, 4, 6), default=6, when="ALGO == 1"),
    Param("MR3", "choice", choices=(1, 2, 4, 8), default=4, when="ALGO == 3"),
), (Constraint("MR3 * 2 <= 8", "too many rows"),))


def test_a_knob_s_condition_is_parsed_with_the_space():
    with pytest.raises(SpecError, match="not a valid expression"):
        Param("MR", "choice", choices=(2, 4), when="ALGO ==")
    assert Param("MR", "choice", choices=(2,), when="ALGO == 1").to_json()["when"] == "ALGO == 1"


def test_neighbours_try_the_algorithm_first_and_skip_dead_knobs_and_illegal_points():
    start = SPACE.default()
    moves = SPACE.neighbours(start, rng=random.Random(0))
    changed = [next(k for k in m if m[k] != start[k]) for m in moves]
    assert changed[:2] == ["ALGO", "ALGO"]                 # ALGO decides which knobs live
    assert "MR" not in changed                             # dead under ALGO 3
    assert {m["MR3"] for m in moves if changed[moves.index(m)] == "MR3"} == {1, 2}   # 8 breaks the constraint
    assert all(not SPACE.violations(m) for m in moves)
    packed = {**start, "ALGO": 1}
    assert {next(k for k in m if m[k] != packed[k]) for m in SPACE.neighbours(packed)} == {"THREADS", "ALGO", "MR"}
    assert all(m["THREADS"] == 2 for m in SPACE.neighbours(start, frozen={"THREADS"}))


def test_the_climb_moves_to_each_faster_point_and_goes_on_from_there():
    # a landscape where the packed algorithm wins, and wins more with 4 rows
    def measure(p):
        ms = {0: 9.0, 1: 5.0, 3: 6.0}[p["ALGO"]] - (1.0 if p["ALGO"] == 1 and p["MR"] == 4 else 0.0)
        return ms / p["THREADS"], "ok"
    tried = _climb(measure, SPACE.default(), SPACE, None, 6, random.Random(1), set())
    points = [p for _, p, _ in tried]
    assert points[0] == SPACE.default() and len(points) == len(set(map(lambda p: tuple(sorted(p.items())), points)))
    assert len(tried) == 6
    best = min(tried, key=lambda t: t[0])[1]
    assert best["ALGO"] == 1 and best["MR"] == 4 and best["THREADS"] == 2
    # after the climb moved to ALGO 1 it never tried a knob of ALGO 3's
    after = points[points.index(next(p for p in points if p["ALGO"] == 1)) + 1:]
    assert all(p["MR3"] == 4 for p in after)


def test_a_failed_point_is_not_climbed_from_and_the_budget_is_kept():
    def measure(p):
        return (None, "incorrect") if p["ALGO"] == 0 else (4.0 if p["ALGO"] == 1 else 5.0, "ok")
    tried = _climb(measure, SPACE.default(), SPACE, None, 3, random.Random(0), set())
    assert [p["ALGO"] for _, p, _ in tried] == [3, 0, 1]
    assert tried[1][0] is None and tried[2][0] == 4.0


def test_a_generated_gemm_marks_the_knobs_of_the_algorithms_it_does_not_run_as_dead():
    g = Graph((Tensor("x", (64, 128), "input"),), (Tensor("w", (128, 96), "param"),),
              (Node("mm", "matmul", ("x", "w"), (64, 96)),), ("mm",))
    g.validate()
    space = program.generate(g).space
    start = space.default()
    assert start["G0_ALGO"] == 1
    live = {p.name for p in space.params if p.live(start)}
    assert {"G0_MR", "G0_NV", "G0_KC", "G0_ALGO"} <= live and "G0_JB" not in live
    assert not space.param("G0_JB").live({**start, "G0_ALGO": 1}) and space.param("G0_JB").live({**start, "G0_ALGO": 2})
    first = space.neighbours(start, rng=random.Random(0))[:2]
    assert sorted(p["G0_ALGO"] for p in first) == [0, 2]


def test_the_swarm_s_mutator_never_moves_a_dead_knob(tmp_path):
    from swarm.agents.base import Context
    from swarm.agents.mutator import Mutator
    from swarm.types import Candidate, Goal, Result, candidate_key
    from kernels.spec import Template
    (tmp_path / "k.c").write_text("void kernel(void) {}\n")
    tpl = Template("cpu", {"main": "k.c"}, SPACE, folder=tmp_path)
    src = tpl.source()
    elite = Candidate(id=1, run_id=1, generation=0, key=candidate_key(src, SPACE.default()), params=SPACE.default(),
                      agent="explorer", rationale="", source=src, result=Result(status="ok", reason="", score=2.0))
    ctx = Context(goal=Goal(workload="toy"), workload=None, template=tpl, space=SPACE, shapes=[], history=[elite],
                  elites=[elite], lessons=[], rng=random.Random(3), generation=1, seen={elite.key})
    moved = set()
    for _ in range(10):
        for d in Mutator().propose(ctx, 4):
            assert d.params["MR"] == SPACE.default()["MR"], d.params   # dead at the elite's ALGO 3
            moved.update(k for k in d.params if d.params[k] != SPACE.default()[k])
    assert {"ALGO", "MR3", "THREADS"} <= moved


def test_the_mutator_moves_a_groups_knob_alone_or_with_every_group_whose_knob_has_that_value(tmp_path):
    """In a generated program a move of ``G<i>_GR`` sometimes carries the other groups' GR
    along: those live and at the same value, never a group at another value or whose GR is
    dead; the rationale says how many groups moved. A hand workload's knobs move alone."""
    from swarm.agents.base import Context
    from swarm.agents.mutator import Mutator
    from swarm.types import Candidate, Goal, Result, candidate_key
    from kernels.spec import Template
    space = DesignSpace(tuple(
        [Param(f"G{i}_ALGO", "choice", choices=(1, 2), default=1 if i == 4 else 2) for i in range(5)]
        + [Param(f"G{i}_GR", "choice", choices=(1, 2, 4), default=2 if i == 3 else 4, when=f"G{i}_ALGO == 2")
           for i in range(5)]))
    (tmp_path / "k.c").write_text("void kernel(void) {}\n")
    tpl = Template("cpu", {"main": "k.c"}, space, folder=tmp_path)
    start = space.default()
    elite = Candidate(id=1, run_id=1, generation=0, key=candidate_key(tpl.source(), start), params=start,
                      agent="explorer", rationale="", source=tpl.source(), result=Result(status="ok", reason="", score=2.0))
    ctx = Context(goal=Goal(workload="toy"), workload=None, template=tpl, space=space, shapes=[], history=[elite],
                  elites=[elite], lessons=[], rng=random.Random(5), generation=1, seen={elite.key})
    tied = alone = 0
    for _ in range(40):
        for d in Mutator().propose(ctx, 4):
            moved = {k for k in d.params if d.params[k] != start[k]}
            assert "G4_GR" not in moved or d.params["G4_ALGO"] == 2        # dead while G4 packs
            if "in 3 groups" in d.rationale and len(moved) == 3:         # a tied move, nothing else
                tied += 1
                assert moved == {"G0_GR", "G1_GR", "G2_GR"}               # G3 held another value
                assert len({d.params[k] for k in moved}) == 1 and "GR → " in d.rationale
            elif len(moved) == 1:
                alone += 1
                assert "groups" not in d.rationale
    assert tied and alone
