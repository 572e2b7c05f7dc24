"""Runs that fail say so, and a stop always ends a run: a driver that raises ends its run
``failed`` with a one-line reason (the traceback goes to the log, never to a page or the
API), a failed run is not driven again, and Stop ends a run nobody drives at once."""
import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from int21web.runs import models as m
from int21web.runs import services
from int21web.runs.celery_executor import CeleryExecutor
from swarm.generation import Engine
from swarm.types import Budget, Goal
from tests.swarm.fakes import FakeExecutor

pytestmark = pytest.mark.django_db


def start(users=None):
    goal = Goal(workload="softmax", shapes=["512x4096"], population=2, seed=3,
                budget=Budget(evaluations=6, stagnation_generations=None))
    return services.run_start(goal=goal, executor=FakeExecutor(), started_by=(users or {}).get("engineer"))


def test_a_driver_that_raises_ends_the_run_failed_with_its_reason_and_the_traceback_only_in_the_log(
        users, as_role, monkeypatch, caplog):
    run_id = start(users)
    calls = []

    def broken(self, *a, **k):
        calls.append(1)
        raise TypeError("unsupported format string passed to NoneType.__format__")

    monkeypatch.setattr(Engine, "_plan", broken)
    with caplog.at_level(logging.ERROR, logger="int21web.runs.services"):
        record = services.run_drive(run_id=run_id, executor=FakeExecutor())
    run = m.Run.objects.get(pk=run_id)
    assert record.state == run.state == "failed"
    assert run.finish_reason == "the driver failed: TypeError: unsupported format string passed to NoneType.__format__"
    assert run.lease_holder == "" and run.lease_until is None
    assert "Traceback" in caplog.text and "broken" in caplog.text
    assert list(m.Event.objects.filter(run_id=run_id, kind="run_failed").values_list("data", flat=True)) == \
        [{"reason": run.finish_reason}]

    # the page and the API say so, without the traceback
    client = as_role("viewer")
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert 'class="badge failed" id="run-state">failed<' in page and "TypeError: unsupported format" in page
    api = client.get(f"/api/runs/{run_id}")
    assert api.json()["state"] == "failed" and "Traceback" not in api.content.decode()
    assert [r["id"] for r in client.get("/api/runs?state=failed").json()] == [run_id]
    recent = client.get("/").content.decode().split("Recently ended")[1]
    assert f"#{run_id}<" in recent and 'class="badge failed">failed<' in recent

    # a restart does not drive it into the same crash again
    assert services.run_recover(grace_seconds=0) == []
    assert services.run_drive(run_id=run_id, executor=FakeExecutor()).state == "failed"
    assert len(calls) == 1


def test_a_fault_of_the_machinery_is_not_a_failed_run(monkeypatch):
    from django.db import OperationalError
    run_id = start()
    monkeypatch.setattr(Engine, "_plan", lambda self, *a, **k: (_ for _ in ()).throw(OperationalError("gone")))
    with pytest.raises(OperationalError):
        services.run_drive(run_id=run_id, executor=FakeExecutor())
    assert m.Run.objects.get(pk=run_id).state == "running"   # driven again by recovery


def test_stop_ends_a_run_nobody_drives_at_once(users):
    run_id = start(users)
    services.run_control(run_id=run_id, action="stop", user=users["engineer"])
    run = m.Run.objects.get(pk=run_id)
    assert run.state == "finished" and run.finish_reason == "stopped by engineer"
    assert m.Event.objects.filter(run_id=run_id, kind="run_finished").count() == 1
    with pytest.raises(services.RunStateError, match="only a created or running or paused run can be stopped"):
        services.run_control(run_id=run_id, action="stop", user=users["engineer"])


def test_a_driven_run_stops_after_its_generation_and_at_once_when_asked_again(users):
    run_id = start(users)
    m.Run.objects.filter(pk=run_id).update(lease_holder="elsewhere:1:ab", lease_until=timezone.now() + timedelta(minutes=1))
    services.run_control(run_id=run_id, action="stop", user=users["engineer"])
    assert m.Run.objects.get(pk=run_id).state == "running"          # its driver applies it next generation
    services.run_control(run_id=run_id, action="stop", user=users["engineer"])
    assert m.Run.objects.get(pk=run_id).state == "finished"         # asked again: it does not wait


def test_a_driver_waiting_on_evaluations_leaves_when_its_run_is_stopped(users):
    run_id = start(users)
    cand = m.Candidate.objects.create(run_id=run_id, generation=0, key="k" * 32, params={"VEC": 8}, agent="explorer",
                                      rationale="r", source="void kernel(){}")
    m.Run.objects.filter(pk=run_id).update(state="finished")
    ex = CeleryExecutor()
    ex.check_seconds = 0.05
    goal = Goal(workload="softmax", shapes=["512x4096"])
    from int21web.runs.store import candidate_from
    assert list(ex.evaluate(goal, [candidate_from(cand)])) == []     # no worker will ever answer


def test_pause_resume_and_guidance_on_a_finished_run_are_refused_on_the_page_as_in_the_api(users, as_role):
    run_id = start(users)
    m.Run.objects.filter(pk=run_id).update(state="finished", finish_reason="evaluation budget of 6 spent")
    client = as_role("engineer")
    page = client.get(f"/runs/{run_id}/").content.decode()
    for button in ("pause-run", "resume-run", "stop-run"):
        assert f'id="{button}" data-when' in page and page.split(f'id="{button}"')[1].split(">")[0].endswith(" hidden")
    assert 'id="live-status" class="muted">ended<' in page
    assert 'id="guidance-form" data-when="created running paused" hidden' in page

    for action in ("pause", "resume", "stop"):
        resp = client.post(f"/runs/{run_id}/{action}/", HTTP_HX_REQUEST="true")
        assert resp.status_code == 409 and f"run {run_id} is finished" in resp.content.decode()
        assert client.post(f"/api/runs/{run_id}/{action}", content_type="application/json").status_code == 409
    resp = client.post(f"/runs/{run_id}/guidance/", {"op": "pin", "param": "VEC", "value": "8"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 409 and "guidance would never apply" in resp.content.decode()
    api = client.post(f"/api/runs/{run_id}/guidance", {"op": "pin", "param": "VEC", "value": 8},
                      content_type="application/json")
    assert api.status_code == 409 and api.json()["field"] == "state"
    assert not m.Guidance.objects.filter(run_id=run_id).exists()
    # without htmx: back to the page, with the message there
    resp = client.post(f"/runs/{run_id}/pause/", follow=True)
    assert "only a running run can be paused" in resp.content.decode()


def test_refused_guidance_is_shown_where_it_was_posted_and_accepted_guidance_joins_the_history(users, as_role):
    run_id = start(users)
    client = as_role("engineer")
    bad = client.post(f"/runs/{run_id}/guidance/", {"op": "pin", "param": "NOPE", "value": "3"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400
    assert 'id="guidance-error"' in bad.content.decode() and "NOPE" in bad.content.decode()
    good = client.post(f"/runs/{run_id}/guidance/", {"op": "pin", "param": "VEC", "value": "8"}, HTTP_HX_REQUEST="true")
    html = good.content.decode()
    row = m.Guidance.objects.get(run_id=run_id)
    item = f'<li data-guidance="{row.id}"><strong>engineer</strong>: <code>{escape(row.text)}</code></li>'
    assert good.status_code == 200 and 'hx-swap-oob="beforeend:#guidance-history"' in html and item in html
    assert item in client.get(f"/runs/{run_id}/").content.decode()     # the same after a reload
    assert row.text == '{"op":"pin","param":"VEC","value":8}'        # JSON.stringify's spelling


def test_a_viewer_is_not_offered_what_only_an_engineer_may_do(users, as_role):
    run_id = start(users)
    goal = m.Goal.objects.create(name="g", spec={"workload": "softmax", "target": "cpu"})
    viewer = as_role("viewer")
    for url in ("/goals/", f"/goals/{goal.id}/", f"/runs/{run_id}/"):
        html = viewer.get(url).content.decode()
        for word in ("New goal", "Start run", "Start a run", ">Edit<", ">Clone<", 'id="pause-run"', 'id="guidance-form"'):
            assert word not in html, (url, word)
    # an htmx action refused for the role is a short message where the user acted, not a page
    refused = viewer.post(f"/runs/{run_id}/pause/", HTTP_HX_REQUEST="true")
    assert refused.status_code == 403 and "<html" not in refused.content.decode()
    engineer = as_role("engineer")
    assert "New goal" in engineer.get("/goals/").content.decode()
    assert ">Clone<" in engineer.get(f"/goals/{goal.id}/").content.decode()


class Killed(BaseException):
    """A crash that takes the driver's process with it (nothing of it runs after)."""


def test_a_driver_that_keeps_dying_in_the_same_generation_is_not_resumed_a_fourth_time(settings):
    from int21web.runs.lease import HOST
    settings.INT21_DRIVE_MAX_DEATHS = 3
    run_id = start()
    evaluated = []

    class Dying(FakeExecutor):
        def evaluate(self, goal, candidates):
            evaluated.append(len(candidates))
            raise Killed()

    def crash_leaving_the_lease():   # as kill -9 would: the lease stays with a process that is gone
        m.Run.objects.filter(pk=run_id).update(lease_holder=f"{HOST}:999999999:ab", lease_until=timezone.now())

    with pytest.raises(Killed):
        services.run_drive(run_id=run_id, executor=Dying())          # the first driver, killed
    for _ in range(2):
        crash_leaving_the_lease()
        with pytest.raises(Killed):
            services.run_drive(run_id=run_id, executor=Dying())      # resumed after a restart, killed again
    crash_leaving_the_lease()
    record = services.run_drive(run_id=run_id, executor=Dying())
    run = m.Run.objects.get(pk=run_id)
    assert record.state == run.state == "failed" and len(evaluated) == 3
    assert run.finish_reason == "its driver died 3 times in a row during generation 0 (see the server log); not resumed again"
