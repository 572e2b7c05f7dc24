"""Embedded mode restarts its worker: a run on the embedded workers whose target worker dies
mid-run is shown as waiting for a worker (not as progressing) while it is down, and completes
once the supervisor has started the worker again. The workers, broker, delivery and driver are
the real ones; the judging inside each evaluation task is a quick stand-in (the harness is
tested on its own, and costs ~15 s an evaluation on a busy 2-core host)."""
import time

import pytest

from int21web.fleet.selectors import live_worker_for
from int21web.runs import models as m
from int21web.runs import services
from int21web.runs.embedded import embedded_worker
from swarm.types import Result
from tests.web import embedded_mode

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

SPEC = {"workload": "softmax", "target": "cpu", "shapes": ["64x256"], "population": 1, "confirm_top": 0,
        "team": ["explorer"], "budget": {"evaluations": 5, "stagnation_generations": None}}


def quick_judge(goal, source, params, **_):
    time.sleep(0.4)     # long enough that the run is mid-way when its worker is killed
    result = Result(status="ok", reason="", score=1.5, median_ms=0.1, speedup={"numpy": 1.5})
    return result, {"status": "ok", "reason": "", "result": result.to_json()}


def wait_for(what, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {seconds} s for {what.__doc__ or what}")


def test_a_killed_embedded_worker_is_shown_down_then_restarted_and_the_run_completes(settings, users, client,
                                                                                    monkeypatch):
    from django.db import connection

    if embedded_mode.elsewhere():
        # Embedded mode is the in-process broker (`make run`); with a broker set (CI's Redis) a
        # killed worker's message would wait out the broker's visibility timeout.
        return embedded_mode.rerun(__file__, test_a_killed_embedded_worker_is_shown_down_then_restarted_and_the_run_completes.__name__,
                                   "embedded_restart", 220)
    if connection.vendor == "sqlite":   # worker threads and the test share one in-memory database: it locks
        pytest.skip("needs a database that serves threads (PostgreSQL, as in CI)")
    monkeypatch.setattr(services, "judge", quick_judge)
    settings.CELERY_EMBEDDED = True
    settings.INT21_EMBEDDED_CHECK_SECONDS = 0.2
    goal = m.Goal.objects.create(name="small", spec=SPEC)
    with embedded_worker(orchestrate=True) as sup:
        run_id = services.run_launch(goal_row=goal, started_by=users["engineer"])

        def one_judged():
            """the first candidate judged"""
            return m.Candidate.objects.filter(run_id=run_id, result__isnull=False).exists()
        wait_for(one_judged)
        sup.hold.set()                       # look at the dead worker before it is started again
        sup.kill("target.cpu")
        wait_for(lambda: not live_worker_for("cpu"))
        why = live_worker_for("cpu").reason
        assert "the embedded worker of target.cpu" in why and "stopped" in why

        client.force_login(users["viewer"])
        page = client.get(f"/runs/{run_id}/").content.decode()
        assert '<p class="error" id="no-worker">' in page and "No live worker serves target.cpu" in page
        # nothing moves: no evaluation finishes while no worker serves the queue (the driver may
        # still record the one that finished as the worker shut down: that is why evaluations are
        # counted here, not judged candidates, which lag them by a driver's poll)
        def finished():
            return m.Evaluation.objects.filter(candidate__run_id=run_id, finished_at__isnull=False).count()
        before = finished()
        time.sleep(0.5)
        assert finished() == before
        assert m.Run.objects.get(pk=run_id).state == "running"

        sup.hold.clear()                     # the supervisor's next check starts it again
        wait_for(lambda: live_worker_for("cpu"))
        wait_for(lambda: m.Run.objects.get(pk=run_id).state == "finished")
        assert sup.slots[0].restarts == 1
    run = m.Run.objects.get(pk=run_id)
    assert m.Candidate.objects.filter(run_id=run_id, result__isnull=False).count() == 5
    assert "budget of 5" in run.finish_reason
    assert '<p class="error" id="no-worker" hidden>' in client.get(f"/runs/{run_id}/").content.decode()
