"""The API's engine operations (check, greedy, run, breakdown) as jobs: each answers 202 with a
job that the real workers run step by step (the embedded workers on this test's broker), and
GET /api/engine-jobs/<id> shows its progress and, at the end, what ``engine … --json`` prints.
Bad requests are 4xx with the field named; a second job on a busy engine is a 409; a step
that fails ends the job ``failed`` with its reason, never a traceback."""
import json
import time

import pytest

from int21web.ops import models as om
from int21web.runs.embedded import embedded_worker
from tests.web import embedded_mode
from tests.web.ops_world import client_for, people  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


@pytest.fixture(autouse=True)
def _readable(engine_ops):
    engine_ops.chmod(0o755)   # the harness's children (another uid) read the stored problems
    engine_ops.parent.chmod(0o755)


@pytest.fixture
def mini_row(mini_engine, people):
    from kernels.engine import store
    return om.Engine.objects.create(name="mini", record=store.load("mini"), created_by=people["erin"])


def post(client, path, body=None):
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def wait_done(client, job_id, seconds=400):
    deadline, seen = time.monotonic() + seconds, []
    while time.monotonic() < deadline:
        job = client.get(f"/api/engine-jobs/{job_id}").json()
        seen.append(job["progress"].get("what"))
        if job["state"] in ("done", "failed"):
            return job, seen
        time.sleep(0.2)
    from int21web.runs import models as rm
    runs = [(r.id, r.state, r.finish_reason, [(c.id, c.state, c.status) for c in r.candidates.all()])
            for r in rm.Run.objects.all()]
    raise AssertionError(f"job {job_id} still {job['state']} after {seconds} s: {job['progress']}; runs {runs}")


def test_a_check_and_a_run_are_jobs_that_the_workers_run_and_the_api_shows(people, mini_row, settings):
    if embedded_mode.elsewhere():    # the embedded workers on their own broker, as `make run` has them
        return embedded_mode.rerun(__file__, test_a_check_and_a_run_are_jobs_that_the_workers_run_and_the_api_shows.__name__,
                                   "engine_jobs", 560)
    settings.CELERY_EMBEDDED = True
    settings.INT21_JOB_POLL_SECONDS = 0.5
    erin, vic = client_for(people["erin"]), client_for(people["vic"])
    with embedded_worker(orchestrate=True):
        resp = post(erin, "/api/engines/mini/check", {"seeds": 1})
        assert resp.status_code == 202, resp.content
        job = resp.json()
        assert job["action"] == "check" and job["steps"] == ["check:prefill", "check:decode"]
        busy = post(erin, "/api/engines/mini/run", {"budget": 1})       # one active job per engine
        assert busy.status_code == 409 and f"#{job['id']}" in busy.json()["error"]
        done, seen = wait_done(vic, job["id"])
        assert done["state"] == "done", done["reason"]
        assert {p: v["status"] for p, v in done["result"].items()} == {"prefill": "ok", "decode": "ok"}
        assert done["result"]["decode"]["seeds"] == 1 and done["finished_at"]
        assert "decode: judging at every shape" in seen
        assert vic.get("/api/engines/mini").json()["phases"]["decode"]["validation"]["status"] == "ok"

        # a run of one phase: each fusion group tuned alone first (2 points each), then a search
        # run queued for the drivers, waited on, then its report
        resp = post(erin, "/api/engines/mini/run", {"phase": "decode", "budget": 1, "population": 2, "confirm": 0,
                                                     "peers": False, "tune": 2})
        assert resp.status_code == 202, resp.content
        assert resp.json()["steps"] == ["tune:decode", "start", "wait", "settle:decode", "report"]
        done, seen = wait_done(vic, resp.json()["id"], seconds=300)
    assert done["state"] == "done", done["reason"]
    report = done["result"]
    assert {"correct", "status", "reason", "median_ms", "speedup", "groups", "evaluations", "engine_id"} <= set(report)
    assert report["correct"] and report["engine_id"] == mini_row.id
    run_id = done["runs"]["decode"]
    assert report["phases"]["decode"]["run_id"] == run_id
    assert "decode: tuning each fusion group alone" in seen

    # the tuning: every distinct group judged and timed alone at its default and one more point;
    # the winners written back onto every group of their structure as one legal point of the phase
    from kernels import workloads
    from kernels.engine import store
    tuned = store.load("mini")["tuned"]["decode"]
    rows = tuned["groups"]
    assert rows and any(r["family"] == "matmul" for r in rows)
    assert tuned["evaluations"] == sum(r["points"] for r in rows) and all(1 <= r["points"] <= 2 for r in rows)
    timed = [r for r in rows if r["best_ms"] is not None]
    assert timed and all(r["best_ms"] <= r["default_ms"] for r in timed)    # the default is one of the points
    wl = workloads.get(tuned["workload"])
    point = {**wl.template("cpu").seeds()[0][1], **tuned["params"]}
    assert not wl.template("cpu").space.violations(point, [wl.shapes.typical[0]])
    for r in rows:
        for k in r["knobs"]:
            assert k.split("_", 1)[0] in {f"G{i}" for i in r["ids"]} and point[k] == r["knobs"][k]
    phase = report["phases"]["decode"]
    assert phase["tuned"]["evaluations"] == tuned["evaluations"]
    assert phase["evaluations"] == tuned["evaluations"] + 1        # the run's one evaluation, counted with them
    # the search started from the composed point: its seeded agent's first candidate, judged correct
    from int21web.runs import models as rm
    if tuned["params"]:
        first = rm.Candidate.objects.filter(run_id=run_id).order_by("id").first()
        assert first.agent == "seeded" and first.params == point and first.status == "ok", first.status
    assert any(w.startswith("searching") for w in seen if w)
    assert vic.get("/api/engines/mini").json()["phases"]["decode"]["best"]["run_id"] == run_id
    assert [j["id"] for j in vic.get("/api/engines/mini/jobs").json()] == [done["id"], job["id"]]


def test_bad_engine_requests_are_4xx_with_a_reason_and_a_failed_step_says_why(people, mini_row, settings,
                                                                              monkeypatch):
    erin, vic = client_for(people["erin"]), client_for(people["vic"])
    assert post(vic, "/api/engines/mini/check").status_code == 403
    assert post(erin, "/api/engines/nothing/check").status_code == 404
    bad = post(erin, "/api/engines/mini/check", {"phase": "forward"})
    assert bad.status_code == 400 and bad.json()["field"] == "phase" and "prefill, decode" in bad.json()["error"]
    bad = post(erin, "/api/engines/mini/run", {"budget": 0})
    assert bad.status_code == 400 and bad.json()["field"] == "budget"
    bad = post(erin, "/api/engines/mini/breakdown", {"seeds": 99})
    assert bad.status_code == 400 and bad.json()["field"] == "seeds"
    bad = post(erin, "/api/engines/mini/greedy")        # imported without greedy lengths
    assert bad.status_code == 400 and "--greedy" in bad.json()["error"]
    assert vic.get("/api/engine-jobs/999999").status_code == 404
    assert not om.EngineJob.objects.exists()

    # a step that breaks: the job ends failed with a sentence, the traceback stays in the log
    from kernels.engine import service

    def broken(*a, **k):
        raise KeyError("the secret internals")
    monkeypatch.setattr(service, "engine_check", broken)
    settings.CELERY_EMBEDDED = True
    with embedded_worker(orchestrate=False):
        job = post(erin, "/api/engines/mini/check", {"phase": "decode"}).json()
        done, _ = wait_done(vic, job["id"], seconds=60)
        again = post(erin, "/api/engines/mini/check", {"phase": "decode"})    # a failed job frees the engine
        assert again.status_code == 202
        wait_done(vic, again.json()["id"], seconds=60)
    assert done["state"] == "failed" and "judging at every shape failed: KeyError" in done["reason"]
    assert "secret" not in json.dumps(done)
