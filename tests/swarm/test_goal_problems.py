"""swarm.goals.goal_problems: every problem of a goal, each with the dotted path of its field;
check_goal raises the first (what a run's start and a goal's save do)."""
import pytest

from swarm.goals import GoalError, check_goal, goal_problems
from swarm.types import Budget, Goal

SPACE = {"params": [{"name": "VEC", "kind": "choice", "choices": [8, 16]}], "constraints": []}


def test_a_goal_that_can_run_has_no_problems():
    assert goal_problems(Goal(workload="softmax", shapes=["64x1024"], held_out=["97x1000"], space=SPACE)) == []


def test_every_problem_is_listed_with_the_path_of_its_field():
    goal = Goal(workload="softmax", shapes=["64x1024", "banana"], held_out=["1x"], team=["bob"],
                budget=Budget(evaluations=0), population=0, confirm_top=-1, llm={"temperature": 9},
                space={"params": [{"name": "VEC", "kind": "choice", "choices": [3]}]}, tolerance={"atol": 1, "x": 2})
    fields = [field for field, _ in goal_problems(goal)]
    assert fields == ["shapes", "llm.temperature", "team", "budget.evaluations", "population", "confirm_top",
                      "held_out", "space.params.0.choices", "tolerance"]


def test_a_malformed_shape_leaves_the_space_checked_against_the_shapes_that_parse():
    impossible = {**SPACE, "constraints": [{"expr": "cols % VEC == 3"}]}
    problems = dict(goal_problems(Goal(workload="softmax", shapes=["banana", "64x1024"], space=impossible)))
    assert "banana" in problems["shapes"] and "impossible" in problems["space.constraints"]


def test_without_its_workload_or_target_nothing_else_is_checked():
    assert [f for f, _ in goal_problems(Goal(workload="nope", team=[]))] == ["workload"]
    assert [f for f, _ in goal_problems(Goal(workload="softmax", target="tpu", team=[]))] == ["target"]


def test_pins_are_checked_against_the_space_the_run_searches():
    assert goal_problems(Goal(workload="softmax", space=SPACE, pins={"VEC": 16})) == []
    assert goal_problems(Goal(workload="softmax", space=SPACE, pins={"VEC": 4})) == \
        [("pins", "VEC=4 is not a legal value of the design space")]


def test_check_goal_raises_the_first_problem_with_its_field():
    with pytest.raises(GoalError) as exc:
        check_goal(Goal(workload="softmax", team=[], population=0))
    assert (exc.value.field, exc.value.message) == ("team", "a run needs at least one agent")
    assert str(exc.value) == "team: a run needs at least one agent"


def test_a_server_the_factory_may_not_use_is_a_problem_of_the_goal(monkeypatch):
    monkeypatch.setenv("LLM_ALLOWED_BASE_URLS", "http://10.0.0.5:8000/v1")
    goal = Goal(workload="softmax", llm={"provider": "openai", "model": "m", "base_url": "http://evil.example/v1"})
    [(field, message)] = goal_problems(goal)
    assert field == "llm.base_url" and "LLM_ALLOWED_BASE_URLS" in message


def test_a_bad_setting_of_the_servers_own_is_not_a_problem_of_the_goal(monkeypatch):
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_TEMPERATURE", "hot")
    assert goal_problems(Goal(workload="softmax")) == []
