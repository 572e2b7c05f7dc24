"""The API's commands (`goals`, `runs`, `reviews`): the same services, selectors, roles and
error messages as the API, at the command line. Personas as in test_api: erin the engineer,
rita the reviewer, vic the viewer."""
import io
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from int21web.runs import models as m
from int21web.runs import services

pytestmark = pytest.mark.django_db

GOAL = {"name": "softmax rows", "workload": "softmax", "shapes": ["256x1024"], "budget": {"evaluations": 8},
        "population": 2, "team": ["explorer", "mutator"],
        "space": {"params": [{"name": "VEC", "kind": "choice", "choices": [8, 16]}],
                  "constraints": [{"expr": "cols % VEC == 0", "message": "whole vectors"}]}}


@pytest.fixture
def people(db):
    made = {}
    for name, role in (("erin", "engineer"), ("rita", "reviewer"), ("vic", "viewer")):
        made[name] = User.objects.create_user(name)
        made[name].groups.add(Group.objects.get_or_create(name=role)[0])
    return made


def run_cmd(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def refused(*args) -> str:
    with pytest.raises(CommandError) as err:
        run_cmd(*args)
    assert err.value.returncode == 2
    return str(err.value)


@pytest.fixture
def goal_file(tmp_path):
    def write(**changes):
        path = tmp_path / "goal.json"
        path.write_text(json.dumps({**GOAL, **changes}))
        return str(path)
    return write


def test_goals_are_created_checked_listed_and_cloned_from_the_command_line(people, goal_file):
    assert "ok: 2 points" in run_cmd("goals", "validate", goal_file())
    assert "saved" in run_cmd("goals", "create", goal_file(), "--as", "erin")
    row = m.Goal.objects.get()
    assert row.created_by == people["erin"] and row.spec["space"]["constraints"][0]["expr"] == "cols % VEC == 0"
    assert "softmax rows" in run_cmd("goals", "list")
    assert json.loads(run_cmd("goals", "show", str(row.id)))["spec"]["population"] == 2
    run_cmd("goals", "clone", str(row.id), "--as", "erin")
    assert m.Goal.objects.filter(name="softmax rows (copy)").exists()


def test_the_command_line_gives_the_apis_field_named_errors_and_roles(people, goal_file):
    bad = goal_file(space={"constraints": ["cols % WIDTH == 0"]})
    assert refused("goals", "create", bad, "--as", "erin").startswith("space.constraints.0.expr: ")
    assert refused("goals", "create", goal_file(budget={"evaluations": 0}), "--as", "erin").startswith(
        "budget.evaluations: ")
    assert "engineer role" in refused("goals", "create", goal_file(), "--as", "vic")
    assert "--as" in refused("goals", "create", goal_file())
    assert "no goal 99" in refused("goals", "show", "99")
    assert not m.Goal.objects.exists()


def test_runs_are_paused_resumed_stopped_and_exported(people, goal_file, tmp_path):
    run_cmd("goals", "create", goal_file(), "--as", "erin")
    rid = services.run_launch(goal_row=m.Goal.objects.get(), started_by=people["erin"])
    assert f"run {rid}: paused" in run_cmd("runs", "pause", str(rid), "--as", "erin")
    assert refused("runs", "pause", str(rid), "--as", "erin").startswith("state: ")
    assert "engineer role" in refused("runs", "resume", str(rid), "--as", "vic")
    assert f"run {rid}: running" in run_cmd("runs", "resume", str(rid), "--as", "erin")
    assert f"run {rid}: finished" in run_cmd("runs", "stop", str(rid), "--as", "erin")   # nobody drives it
    assert m.Guidance.objects.get(run_id=rid).directive == {"op": "stop"}
    events = [json.loads(line) for line in run_cmd("runs", "events", str(rid)).splitlines()]
    assert [e["kind"] for e in events] == ["run_started", "run_paused", "run_resumed", "run_finished"]
    assert [e["seq"] for e in (json.loads(x) for x in run_cmd("runs", "events", str(rid), "--after", "1")
                               .splitlines())] == [e["seq"] for e in events[1:]]
    assert "finished" in run_cmd("runs", "list")
    assert json.loads(run_cmd("runs", "show", str(rid)))["progress"]["budget"] == 8
    out = tmp_path / "c.csv"
    run_cmd("runs", "candidates", str(rid), "--csv", str(out))
    assert out.read_text().startswith("id,generation,agent,state,status,score,median_ms")


def test_reviews_from_the_command_line(people, goal_file):
    run_cmd("goals", "create", goal_file(), "--as", "erin")
    rid = services.run_launch(goal_row=m.Goal.objects.get(), started_by=people["erin"])
    cand = m.Candidate.objects.create(run_id=rid, generation=0, key="k" * 32, params={"VEC": 8}, agent="explorer",
                                      rationale="r", source="void kernel(){}", state="evaluated", status="ok",
                                      score=1.5, result={"status": "ok", "score": 1.5, "speedup": {"numpy": 1.5}})
    assert "review queue" in run_cmd("reviews", "propose", str(cand.id), "--as", "erin")
    pid = json.loads(run_cmd("reviews", "show", str(m.Candidate.objects.get().proposals.get().id)))["id"]
    assert "reviewer role" in refused("reviews", "approve", str(pid), "--as", "erin")
    assert "changes requested" in run_cmd("reviews", "request-changes", str(pid), "--as", "rita",
                                          "--comment", "test the tail")
    assert "changes_requested" in run_cmd("reviews", "list")
    assert "review queue" in run_cmd("reviews", "propose", str(cand.id), "--as", "erin")    # proposed again
    assert "already proposed" in refused("reviews", "propose", str(cand.id), "--as", "erin")
    assert run_cmd("reviews", "kernels") == "" and "no kernel 5" in refused("reviews", "download", "5")


@pytest.mark.parametrize("settings,key", [({"isolate": False}, "eval_settings.isolate"),
                                          ({"repeats": 3}, "eval_settings.repeats"),
                                          ({"memory_mb": 1 << 20}, "eval_settings.memory_mb"),
                                          ({"recheck": False}, "eval_settings.recheck")])
def test_the_command_line_refuses_evaluation_settings_a_goal_may_not_hold(people, goal_file, settings, key):
    line = refused("goals", "create", goal_file(eval_settings=settings), "--as", "erin")
    assert line.startswith(f"{key}: "), line
    assert not m.Goal.objects.exists()
