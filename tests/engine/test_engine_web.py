"""Engines through the web app: ``manage.py engine`` (import, show, check, run, list with
``--json``), and the engine page (graph by fusion group, arena plan, validation, links)."""
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from int21web.ops import models as om
from tests.web.ops_world import client_for, people  # noqa: F401 (a fixture)

PROBLEM = Path(__file__).resolve().parents[1] / "ownops" / "problems" / "linear3d_relu_residual.py"


@pytest.fixture(autouse=True)
def _readable(engine_ops):
    engine_ops.chmod(0o755)   # the timing child (another uid) reads the stored problem
    engine_ops.parent.chmod(0o755)


def run_json(capsys, *args) -> dict:
    call_command("engine", *args, stdout=io.StringIO())
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out          # exactly one JSON object
    return json.loads(out)


@pytest.mark.django_db(transaction=True)
def test_a_module_file_becomes_an_engine_and_a_run_prints_the_names_scripts_rely_on(people, capsys, settings):
    settings.CELERY_EMBEDDED = True
    shown = run_json(capsys, "import", "--module", str(PROBLEM), "--name", "resid", "--json", "--as", "erin")
    assert shown["name"] == "resid" and list(shown["phases"]) == ["forward"]
    phase = shown["phases"]["forward"]
    assert phase["groups"] >= 1 and phase["arena"]["bytes_no_reuse"] >= phase["arena"]["bytes"]
    assert om.ImportedOp.objects.filter(name="resid_forward").exists()
    # its final session is timed against the peers it has: no trusted ONNX export of user code
    from int21web.ops.engines import peers_of
    assert peers_of("resid_forward") == ["torch", "torch_compile"]
    with pytest.raises(CommandError) as err:      # the same name again: refused, nothing redone
        call_command("engine", "import", "--module", str(PROBLEM), "--name", "resid", stdout=io.StringIO())
    assert err.value.returncode == 2 and "exists" in str(err.value)

    # the one-shot form (the model is imported already under that name, so it only runs)
    report = run_json(capsys, "--model", str(PROBLEM), "--name", "resid", "--budget", "1", "--no-peers", "--json",
                      "--as", "erin")
    assert set(report) >= {"correct", "status", "reason", "median_ms", "speedup", "groups", "evaluations",
                           "engine_id", "phases"}
    assert report["correct"] and report["status"] == "ok" and report["evaluations"] >= 1
    assert report["speedup"]["torch"] > 0 and report["median_ms"] > 0
    assert report["engine_id"] == om.Engine.objects.get(name="resid").id
    shown = run_json(capsys, "show", "resid", "--json")
    assert shown["phases"]["forward"]["best"]["run_id"] == report["phases"]["forward"]["run_id"]
    assert run_json(capsys, "list", "--json")["engines"][0]["name"] == "resid"


@pytest.mark.django_db
def test_a_bad_model_is_refused_with_a_reason(people):
    with pytest.raises(CommandError) as err:
        call_command("engine", "import", "--family", "hidden=64,heads=4", "--name", "bad", stdout=io.StringIO())
    assert err.value.returncode == 2 and "missing key" in str(err.value)
    with pytest.raises(CommandError) as err:
        call_command("engine", "show", "nothing", stdout=io.StringIO())
    assert "no engine named" in str(err.value)
    with pytest.raises(CommandError) as err:
        call_command("engine", "run", "nothing", "--tune-groups", "99", stdout=io.StringIO())
    assert err.value.returncode == 2 and "--tune-groups must be from 0 (off) to 64" in str(err.value)


@pytest.mark.django_db
def test_the_engine_page_draws_the_graph_and_the_arena_and_links_the_phases(people, tiny_checked, tiny_engine):
    from kernels.engine import store
    om.Engine.objects.create(name="tiny", record=store.load("tiny"), created_by=people["erin"],
                             results={"decode": {"phase": "decode", "correct": True, "median_ms": 0.5,
                                                 "speedup": {"torch": 3.0, "onnxruntime": 1.5}, "run_id": None}})
    from int21web.ops.engines import peers_of
    assert peers_of("tiny_decode") == ["torch", "torch_compile", "onnxruntime", "openvino"]
    page = client_for(people["vic"]).get("/engines/tiny/")
    assert page.status_code == 200
    html = page.content.decode()
    for phase in ("prefill", "decode"):
        assert f'href="/ops/tiny_{phase}/"' in html
        assert f'id="graph-data-{phase}"' in html and f'id="arena-data-{phase}"' in html
        assert f'id="cost-data-{phase}"' in html
    assert "Validation: ok" in html
    assert "runs at every past in <code>3..8</code>" in html
    assert "1.50x onnxruntime" in html and 'id="speed-data"' in html
    graph = json.loads(html.split('id="graph-data-decode" type="application/json">')[1].split("</script>")[0])
    assert any(t["name"].startswith("group ") for t in graph["data"][1:])      # drawn by fusion group
    listing = client_for(people["vic"]).get("/engines/")
    assert listing.status_code == 200 and 'href="/engines/tiny/"' in listing.content.decode()
    assert client_for(people["vic"]).get("/engines/nothing/").status_code == 404
    assert Client().get("/engines/tiny/").status_code == 302          # sign in first
    api = client_for(people["vic"]).get("/api/engines/tiny")
    assert api.status_code == 200
    body = api.json()
    assert sorted(body["phases"]["decode"]["shapes"]) == [1, 2, 3, 7, 8]
    assert body["phases"]["decode"]["ranges"] == [{"dim": "PAST", "lo": 3, "hi": 8}]
    assert body["phases"]["decode"]["best"]["speedup"]["onnxruntime"] == 1.5
    assert body["phases"]["prefill"]["validation"]["status"] == "ok"
    assert [e["name"] for e in client_for(people["vic"]).get("/api/engines").json()] == ["tiny"]
    assert client_for(people["vic"]).get("/api/engines/nothing").status_code == 404
    paths = client_for(people["vic"]).get("/api/openapi.json").json()["paths"]
    assert {"/api/engines", "/api/engines/{name}"} <= set(paths)


@pytest.mark.django_db
def test_the_api_refuses_a_bad_family_and_a_viewer(people):
    post = lambda who, body: client_for(people[who]).post("/api/engines", json.dumps(body),  # noqa: E731
                                                          content_type="application/json")
    bad = post("erin", {"name": "bad", "family": "hidden=64,heads=4"})
    assert bad.status_code == 400 and bad.json()["field"] == "family" and "missing key" in bad.json()["error"]
    assert post("vic", {"name": "x", "family": "hidden=64"}).status_code == 403
    assert not om.Engine.objects.exists()


@pytest.mark.django_db
def test_the_engine_page_starts_jobs_for_an_engineer_and_shows_a_refusal_where_they_acted(people, mini_engine):
    from kernels.engine import store
    om.Engine.objects.create(name="mini", record=store.load("mini"), created_by=people["erin"])
    erin, vic = client_for(people["erin"]), client_for(people["vic"])
    page = erin.get("/engines/mini/").content.decode()
    assert 'id="job-check"' in page and 'id="job-run"' in page and "No jobs yet" in page
    assert 'id="job-greedy"' not in page                       # imported without greedy lengths
    resp = erin.post("/engines/mini/jobs/", {"action": "run", "budget": "abc"}, follow=True)
    assert resp.status_code == 200 and "run not started: budget must be a whole number" in resp.content.decode()
    resp = erin.post("/engines/mini/jobs/", {"action": "breakdown", "seeds": "99"}, follow=True)
    assert "seeds must be a whole number from 1 to 8" in resp.content.decode()
    assert not om.EngineJob.objects.exists()
    resp = erin.post("/engines/mini/jobs/", {"action": "check", "seeds": "1"}, follow=True)
    job = om.EngineJob.objects.get()
    html = resp.content.decode()
    assert f"Job #{job.id} (check) queued" in html and f'id="job-{job.id}"' in html and "queued" in html
    assert job.options["seeds"] == 1 and job.created_by == people["erin"]
    again = erin.post("/engines/mini/jobs/", {"action": "check"}, follow=True).content.decode()
    assert f"already has a check job (#{job.id}, queued)" in again           # one at a time
    assert 'id="job-check"' not in vic.get("/engines/mini/").content.decode()   # a viewer sees the list only
    assert vic.post("/engines/mini/jobs/", {"action": "check"}).status_code == 403
    assert erin.post("/engines/nothing/jobs/", {"action": "check"}).status_code == 404
    assert erin.get("/engines/mini/jobs/").status_code == 405
