"""The engine through the Django adapters (PostgreSQL in CI), with the fake executor."""
import pytest

from int21web.runs import models as m
from int21web.runs import services
from swarm.guidance import GuidanceError
from swarm.types import Budget, Goal
from tests.swarm.fakes import FakeExecutor

pytestmark = pytest.mark.django_db


def goal(**kw):
    return Goal(workload="softmax", shapes=["512x4096"], population=6, seed=5,
                budget=Budget(evaluations=18, stagnation_generations=None), **kw)


def test_a_run_through_the_django_store_is_complete_and_its_events_are_sequenced():
    rid = services.run_start(goal=goal(), executor=FakeExecutor())
    services.run_drive(run_id=rid, executor=FakeExecutor())
    run = m.Run.objects.get(pk=rid)
    assert run.state == "finished" and run.best is not None
    assert m.Candidate.objects.filter(run=run).count() == 18
    assert m.Candidate.objects.filter(run=run, result__isnull=True).count() == 0
    seqs = list(m.Event.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1)) and run.event_seq == len(seqs)
    assert m.Generation.objects.filter(run=run).count() == 3
    assert m.Lesson.objects.filter(run=run, kind="best_config").exists()


def test_a_candidate_records_its_diff_against_its_parent():
    rid = services.run_start(goal=goal(), executor=FakeExecutor())
    services.run_drive(run_id=rid, executor=FakeExecutor())
    child = m.Candidate.objects.filter(run_id=rid).exclude(parents=[]).first()
    assert child is not None and child.diff.startswith("--- #")


def test_guidance_is_validated_against_the_runs_space():
    rid = services.run_start(goal=goal(), executor=FakeExecutor())
    with pytest.raises(GuidanceError, match="value"):
        services.guidance_post(run_id=rid, directive={"op": "pin", "param": "VEC", "value": 5}, author_name="a")
    g = services.guidance_post(run_id=rid, directive={"op": "pin", "param": "VEC", "value": 8}, author_name="alice")
    services.run_drive(run_id=rid, executor=FakeExecutor())
    assert set(m.Candidate.objects.filter(run_id=rid).values_list("params__VEC", flat=True)) == {8}
    assert m.Event.objects.filter(run_id=rid, kind="guidance_applied", data__guidance_id=g.id).exists()


def test_a_second_result_for_a_candidate_is_ignored():
    from int21web.runs.store import DjangoStore
    from swarm.types import Result
    rid = services.run_start(goal=goal(), executor=FakeExecutor())
    services.run_drive(run_id=rid, executor=FakeExecutor(), max_generations=1)
    c = m.Candidate.objects.filter(run_id=rid).first()
    assert DjangoStore().record_result(c.id, Result(status="wrong", reason="late duplicate"), None) is False
    c.refresh_from_db()
    assert c.result["reason"] != "late duplicate"


def test_the_guide_command_records_directives_and_refuses_bad_ones(capsys):
    from django.core.management import CommandError, call_command
    rid = services.run_start(goal=goal(), executor=FakeExecutor())
    call_command("guide", str(rid), "--pin", "VEC=16", "--mute", "explorer", "--author", "carol")
    assert list(m.Guidance.objects.filter(run_id=rid).values_list("author_name", flat=True)) == ["carol", "carol"]
    with pytest.raises(CommandError, match="pin: value"):
        call_command("guide", str(rid), "--pin", "VEC=3")
    call_command("guide", str(rid), "--pause")
    assert m.Run.objects.get(pk=rid).state == "paused"
