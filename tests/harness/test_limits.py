"""The largest shape a host takes is refused with its size before anything is allocated."""
import pytest

from kernels import workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.limits import shape_problem
from kernels.spec import SpecError
from swarm.generation import GoalError, check_goal
from swarm.types import Goal


def test_a_huge_shape_is_refused_with_the_memory_it_would_need():
    wl = workloads.get("softmax")
    problem = shape_problem(wl, wl.shape_from_text("99999999x99999999"))
    assert problem and "GiB" in problem and "too large" in problem
    assert shape_problem(wl, wl.shape_from_text("4096x4096")) is None


def test_the_cap_is_the_hosts_to_set(monkeypatch):
    wl = workloads.get("softmax")
    monkeypatch.setenv("INT21_MAX_SHAPE_MB", "16")
    assert shape_problem(wl, wl.shape_from_text("4096x4096"))


def test_a_goal_with_a_huge_shape_is_refused_naming_the_field():
    with pytest.raises(GoalError, match="^shapes: .*too large"):
        check_goal(Goal(workload="softmax", shapes=["99999999x99999999"]))
    with pytest.raises(GoalError, match="^held_out: .*too large"):
        check_goal(Goal(workload="matmul", held_out=["100000x100000x100000"]))


def test_the_evaluator_refuses_it_before_allocating_anything():
    wl = workloads.get("softmax")
    src, params = wl.template("cpu").seeds()[0]
    with pytest.raises(SpecError, match="too large"):
        Evaluator(EvalSettings(timing_shape=wl.shape_from_text("99999999x99999999"))).evaluate(src, params, wl)
