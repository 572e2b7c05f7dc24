"""The goal editor: a custom design space with constraints, live validation with messages
next to their fields, roles, cloning and starting a run."""
import pytest

from int21web.runs import models as m

pytestmark = pytest.mark.django_db

BASE = {"name": "softmax rows", "workload": "softmax", "target": "cpu", "shapes": "256x1024", "held_out": "97x1000",
        "metric": "speedup", "evaluations": "20", "stagnation": "5", "population": "4", "seed": "0",
        "required_approvals": "1", "team": ["explorer", "mutator", "tuner"], "space-used": "1",
        "space-p-0-name": "VEC", "space-p-0-kind": "choice", "space-p-0-choices": "8, 16",
        "space-p-1-name": "THREADS", "space-p-1-kind": "int", "space-p-1-low": "1", "space-p-1-high": "2",
        "space-p-1-step": "1",
        "space-c-0-expr": "cols % VEC == 0", "space-c-0-message": "whole vectors per row"}


def post(client, **changes):
    data = {**BASE, **changes}
    return client.post("/goals/new/", {k: v for k, v in data.items() if v is not None})


def test_an_engineer_saves_a_goal_with_a_custom_space_and_a_constraint(as_role):
    resp = post(as_role("engineer"))
    assert resp.status_code == 302, resp.content.decode()[:2000]
    goal = m.Goal.objects.get(name="softmax rows")
    space = goal.spec["space"]
    assert [p["name"] for p in space["params"]] == ["VEC", "THREADS"]
    assert space["constraints"] == [{"expr": "cols % VEC == 0", "message": "whole vectors per row"}]
    assert goal.spec["held_out"] == ["97x1000"] and goal.spec["team"] == ["explorer", "mutator", "tuner"]
    page = as_role("viewer").get(f"/goals/{goal.id}/")
    assert b"cols % VEC == 0" in page.content


@pytest.mark.parametrize("changes, field, words", [
    ({"space-c-0-expr": "cols %% VEC =="}, "space-c-0-expr", "not a valid expression"),
    ({"space-c-0-expr": "__import__('os')"}, "space-c-0-expr", "only min(), max() and abs()"),
    ({"space-c-0-expr": "cols % WIDTH == 0"}, "space-c-0-expr", "unknown name(s) WIDTH"),
    ({"space-c-0-expr": "VEC > 64"}, "space-c-0-expr", "impossible"),
    ({"space-p-0-name": "UNROLL"}, "space-p-0-name", "unknown param 'UNROLL'"),
    ({"space-p-1-low": "4", "space-p-1-high": "2"}, "space-p-1-high", "empty range"),
    ({"space-p-0-choices": "3"}, "space-p-0-choices", "VEC must be one of"),
    ({"shapes": "banana"}, "shapes", "banana"),
    ({"evaluations": "0"}, "evaluations", "greater than or equal to 1"),
    ({"team": []}, "team", "required"),
])
def test_a_bad_goal_is_refused_with_a_message_next_to_its_field(as_role, changes, field, words):
    client = as_role("engineer")
    resp = post(client, **changes)
    assert resp.status_code == 400
    errors = resp.context["errors"]
    assert field in errors and words in errors[field], errors
    assert not m.Goal.objects.exists()
    # live validation says the same, by field (goal_editor.js puts it in the slot next to the field)
    live = client.post("/goals/validate/", {**BASE, **changes})
    assert live.status_code == 200
    assert words in live.context["errors"][field]
    assert 'id="validation-errors"' in live.content.decode() and "hx-swap-oob" not in live.content.decode()


def test_live_validation_reports_the_size_of_a_good_space(as_role):
    live = as_role("engineer").post("/goals/validate/", BASE)
    html = live.content.decode()
    assert "This goal can run" in html and "design space: 4 combinations" in html


def test_a_viewer_cannot_reach_engineer_actions(as_role):
    client = as_role("viewer")
    goal = m.Goal.objects.create(name="g", spec={"workload": "softmax", "target": "cpu"})
    for url in ("/goals/new/", f"/goals/{goal.id}/edit/"):
        resp = client.get(url)
        assert resp.status_code == 403 and b"needs the <strong>engineer</strong> role" in resp.content
    for url in (f"/goals/{goal.id}/start/", f"/goals/{goal.id}/clone/", "/goals/validate/"):
        assert client.post(url).status_code == 403
    assert not m.Run.objects.exists() and m.Goal.objects.count() == 1


def test_anonymous_users_are_sent_to_sign_in(client, db):
    resp = client.get("/goals/")
    assert resp.status_code == 302 and resp.url.startswith("/accounts/login/")


def test_clone_and_start(as_role, django_capture_on_commit_callbacks, monkeypatch):
    from int21web.runs import tasks
    queued = []
    monkeypatch.setattr(tasks.drive_run, "delay", lambda *a, **k: queued.append(a))
    monkeypatch.setattr(tasks.drive_run, "apply_async", lambda args=(), **k: queued.append(tuple(args)))
    client = as_role("engineer")
    post(client)
    goal = m.Goal.objects.get()
    resp = client.post(f"/goals/{goal.id}/clone/")
    assert resp.status_code == 302 and m.Goal.objects.filter(name="softmax rows (copy)").exists()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/goals/{goal.id}/start/")
    run = m.Run.objects.get()
    assert resp.status_code == 302 and resp.url == f"/runs/{run.id}/"
    assert run.state == "running" and run.started_by.username == "engineer" and run.spec["space"]
    # the driver is queued once the run is committed, exactly once
    assert queued == [(run.id,)]
    assert m.Event.objects.filter(run=run, kind="run_started").exists()
    page = client.get(f"/runs/{run.id}/")
    assert page.status_code == 200 and b'id="pause-run"' in page.content


def test_the_editor_starts_from_the_templates_space(as_role):
    page = as_role("engineer").get("/goals/new/")
    assert page.status_code == 200
    assert b'name="space-p-0-name" value="' in page.content
    rows = as_role("engineer").get("/goals/space/?workload=matmul&target=cpu")
    assert rows.status_code == 200 and b"space-p-0-name" in rows.content


def test_the_dashboard_shows_active_runs_the_review_queue_and_workers(as_role, settings):
    goal = m.Goal.objects.create(name="g", spec={"workload": "softmax", "target": "cpu"})
    m.Run.objects.create(goal=goal, spec={"workload": "softmax", "target": "cpu", "budget": {"evaluations": 10}},
                         state="running")
    settings.CELERY_EMBEDDED = True
    page = as_role("viewer").get("/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="active-count">1<' in html and 'id="review-count">0<' in html
    assert "embedded workers" in html and "0/10" in html


def test_a_goal_chooses_its_language_model_without_a_key(as_role):
    client = as_role("engineer")
    resp = post(client, llm_provider="ollama", llm_model="qwen2.5-coder:7b", llm_temperature="0.2",
                llm_budget_requests="12", team=["explorer", "llm_coder"])
    assert resp.status_code == 302, resp.context and resp.context["errors"]
    spec = m.Goal.objects.get().spec
    assert spec["llm"] == {"provider": "ollama", "model": "qwen2.5-coder:7b", "temperature": 0.2,
                           "budget": {"requests": 12}}
    assert "llm_coder" in spec["team"] and "key" not in str(spec["llm"]).lower()
    bad = post(client, name="bad model", llm_provider="openai", llm_temperature="9")
    assert bad.status_code == 400 and "llm_temperature" in bad.context["errors"], bad.context["errors"]


@pytest.mark.parametrize("text,words", [('{"isolate": false}', "isolate"), ('{"recheck": false}', "recheck"),
                                        ('{"speedy": 1}', "speedy"), ('{"memory_mb": 1048576}', "memory_mb"),
                                        ("[1, 2]", "JSON object"), ("{seeds: 8}", "not JSON")])
def test_the_editor_refuses_evaluation_settings_a_goal_may_not_hold_naming_the_key(as_role, text, words):
    resp = post(as_role("engineer"), eval_settings=text)
    assert resp.status_code == 400 and words in resp.context["errors"]["eval_settings"], resp.context["errors"]
    assert not m.Goal.objects.exists()


def test_the_editor_keeps_evaluation_settings_that_tighten(as_role):
    resp = post(as_role("engineer"), eval_settings='{"seeds": 8, "min_calls": 40}')
    assert resp.status_code == 302, resp.context and resp.context["errors"]
    assert m.Goal.objects.get().spec["eval_settings"] == {"seeds": 8, "min_calls": 40}
