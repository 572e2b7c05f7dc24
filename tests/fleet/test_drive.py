"""services.run_drive under its lease, with the swarm's fake executor: a resume that races the
driver's exit is not lost; a drive hands over after its slice; a second drive of a run being
driven does nothing."""
import pytest

from int21web.runs import lease as lease_module
from int21web.runs import models as m
from int21web.runs import services, tasks
from swarm.types import Budget, Goal
from tests.swarm.fakes import FakeExecutor

pytestmark = pytest.mark.django_db


def start():
    goal = Goal(workload="softmax", shapes=["512x4096"], population=2, seed=3,
                budget=Budget(evaluations=6, stagnation_generations=None))
    return services.run_start(goal=goal, executor=FakeExecutor())


class PausingExecutor(FakeExecutor):
    """Pauses the run while its first generation is being evaluated."""

    def evaluate(self, goal, candidates):
        if not self.evaluated:
            services.run_pause(run_id=candidates[0].run_id)
        yield from super().evaluate(goal, candidates)


def test_a_resume_that_races_the_drivers_exit_is_not_lost(monkeypatch):
    run_id = start()
    release = lease_module.Lease.release
    resumed = []

    def release_then_resume(self):
        release(self)
        if not resumed:   # the resume arrives as the driver leaves; its own drive_run found the lease taken
            resumed.append(True)
            services.run_resume(run_id=run_id)

    monkeypatch.setattr(lease_module.Lease, "release", release_then_resume)
    record = services.run_drive(run_id=run_id, executor=PausingExecutor())
    assert record.state == "finished" and resumed
    assert m.Candidate.objects.filter(run_id=run_id, result__isnull=False).count() == 6
    kinds = list(m.Event.objects.filter(run_id=run_id).values_list("kind", flat=True))
    assert kinds.count("run_paused") == 1 and kinds.count("run_resumed") == 1
    assert kinds.count("generation_started") == 3 == kinds.count("generation_finished")


def test_a_drive_hands_over_to_a_fresh_task_after_its_slice(monkeypatch):
    run_id = start()
    queued = []
    monkeypatch.setattr(tasks.drive_run, "delay_on_commit", lambda rid: queued.append(rid))
    record = services.run_drive(run_id=run_id, executor=FakeExecutor(), slice_seconds=0)
    assert record.state == "running" and record.generation == 1 and queued == [run_id]
    assert m.Run.objects.get(pk=run_id).lease_holder == "", "the lease is released for the next driver"
    record = services.run_drive(run_id=run_id, executor=FakeExecutor())
    assert record.state == "finished" and record.generation == 3
