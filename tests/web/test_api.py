"""The REST API at /api/: schema and docs served locally, session and token auth, roles,
goals with custom design spaces, runs started and steered, events, candidates, CSV,
guidance, and bad input answered with a 4xx naming the field (never a 500).

Personas: erin the engineer, rita the reviewer, vic the viewer, nobody (no role)."""
import csv
import io
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from int21web.runs import models as m

pytestmark = pytest.mark.django_db

SPACE = {"params": [{"name": "VEC", "kind": "choice", "choices": [8, 16]},
                    {"name": "THREADS", "kind": "choice", "choices": [1, 2]}],
         "constraints": [{"expr": "cols % VEC == 0", "message": "whole vectors per row"}]}
GOAL = {"name": "softmax rows", "workload": "softmax", "target": "cpu", "shapes": ["256x1024"],
        "held_out": ["97x1000"], "budget": {"evaluations": 8, "stagnation_generations": 3}, "population": 2,
        "team": ["explorer", "mutator"], "space": SPACE}


@pytest.fixture
def people(db):
    made = {}
    for name, role in (("erin", "engineer"), ("rita", "reviewer"), ("vic", "viewer"), ("nobody", None)):
        user = User.objects.create_user(name, password="int21-demo")
        if role:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        made[name] = user
    return made


def client_for(user, **kw):
    c = Client(**kw)
    c.force_login(user)
    return c


@pytest.fixture
def erin(people):
    return client_for(people["erin"])


@pytest.fixture
def vic(people):
    return client_for(people["vic"])


def post(c, url, body, **kw):
    return c.post(url, json.dumps(body) if not isinstance(body, (bytes, str)) else body,
                  content_type="application/json", **kw)


def put(c, url, body):
    return c.put(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def goal(erin):
    resp = post(erin, "/api/goals", GOAL)
    assert resp.status_code == 201, resp.content
    return resp.json()


@pytest.fixture
def run(erin, goal):
    resp = post(erin, "/api/runs", {"goal_id": goal["id"]})
    assert resp.status_code == 201, resp.content
    return resp.json()


# ------------------------------------------------------------------ schema and docs

def test_the_openapi_schema_is_served_and_lists_the_endpoints(client):
    resp = client.get("/api/openapi.json")
    assert resp.status_code == 200
    paths = resp.json()["paths"]
    for p in ("/api/goals", "/api/goals/{goal_id}/clone", "/api/runs/{run_id}/pause", "/api/runs/{run_id}/events",
              "/api/runs/{run_id}/candidates.csv", "/api/runs/{run_id}/guidance", "/api/candidates/{candidate_id}"):
        assert p in paths
    schemes = resp.json()["components"]["securitySchemes"]
    assert {"TokenAuth", "SessionAuth"} <= set(schemes)


def test_the_docs_page_loads_its_scripts_from_our_own_static_files_not_a_cdn(client):
    resp = client.get("/api/docs")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html and "/static/ninja/swagger-ui.css" in html
    assert "cdn" not in html.lower() and "https://" not in html
    assert '"validatorUrl": null' in html          # no call to validator.swagger.io either
    from django.contrib.staticfiles import finders
    assert all(finders.find(f"ninja/{f}") for f in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-init.js"))


# ------------------------------------------------------------------ auth and roles

def test_an_anonymous_caller_gets_a_401_in_json(client):
    for resp in (client.get("/api/goals"), post(client, "/api/goals", GOAL), client.get("/api/runs/1")):
        assert resp.status_code == 401
        assert resp["Content-Type"].startswith("application/json") and "authentication" in resp.json()["error"]


def test_a_viewer_reads_but_cannot_write_and_the_403_names_the_role(vic, goal, run):
    assert vic.get("/api/goals").status_code == 200
    assert vic.get(f"/api/runs/{run['id']}").status_code == 200
    for url, body in (("/api/goals", GOAL), (f"/api/goals/{goal['id']}/clone", {}),
                      ("/api/runs", {"goal_id": goal["id"]}), (f"/api/runs/{run['id']}/pause", {}),
                      (f"/api/runs/{run['id']}/stop", {}), (f"/api/runs/{run['id']}/guidance", {"op": "stop"})):
        resp = post(vic, url, body)
        assert resp.status_code == 403, url
        assert resp.json()["role"] == "engineer" and "engineer role" in resp.json()["error"]
    assert put(vic, f"/api/goals/{goal['id']}", GOAL).status_code == 403
    assert m.Run.objects.get(pk=run["id"]).state == "running"


def test_a_user_without_any_role_cannot_even_read(people):
    resp = client_for(people["nobody"]).get("/api/goals")
    assert resp.status_code == 403 and resp.json()["role"] == "viewer"


def test_a_token_authenticates_and_only_its_hash_is_stored(people, goal):
    out = io.StringIO()
    call_command("api_token", "vic", "--name", "scripts", stdout=out, stderr=io.StringIO())
    token = out.getvalue().strip()
    assert token.startswith("i21_") and len(token) > 40
    from int21web.api.models import ApiToken
    row = ApiToken.objects.get(user=people["vic"])
    assert token not in (row.key_hash, row.prefix) and len(row.key_hash) == 64
    c = Client()
    resp = c.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 200 and resp.json() == {"username": "vic", "roles": ["viewer"]}
    assert c.get("/api/goals", HTTP_AUTHORIZATION=f"Bearer {token}").json()[0]["id"] == goal["id"]
    # the token's user is a viewer: writes are refused by role, not by CSRF
    assert post(c, "/api/goals", GOAL, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 403
    assert c.get("/api/goals", HTTP_AUTHORIZATION=f"Bearer {token}x").status_code == 401
    call_command("api_token", "vic", "--revoke", str(row.id), stdout=io.StringIO())
    assert c.get("/api/goals", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_an_engineer_token_writes_without_csrf(people):
    from int21web.api.services import token_create
    _, token = token_create(user=people["erin"])
    c = Client(enforce_csrf_checks=True)
    resp = post(c, "/api/goals", GOAL, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert resp.status_code == 201 and resp.json()["created_by"] == "erin"


def test_a_session_write_needs_the_csrf_token(people):
    c = client_for(people["erin"], enforce_csrf_checks=True)
    resp = post(c, "/api/goals", GOAL)
    assert resp.status_code == 403 and "CSRF" in resp.json()["error"]
    secret = "a" * 32
    c.cookies["csrftoken"] = secret
    assert post(c, "/api/goals", GOAL, HTTP_X_CSRFTOKEN=secret).status_code == 201
    assert c.get("/api/goals").status_code == 200      # reads need no token


# ------------------------------------------------------------------ goals

def test_an_engineer_creates_a_goal_with_a_custom_space_and_a_constraint(erin, goal):
    assert goal["name"] == "softmax rows" and goal["created_by"] == "erin"
    spec = m.Goal.objects.get(pk=goal["id"]).spec
    assert spec["space"]["constraints"] == [{"expr": "cols % VEC == 0", "message": "whole vectors per row"}]
    assert [p["name"] for p in spec["space"]["params"]] == ["VEC", "THREADS"]
    assert spec["budget"]["evaluations"] == 8 and spec["team"] == ["explorer", "mutator"]
    space = erin.get(f"/api/goals/{goal['id']}/space").json()
    vec = next(p for p in space["space"]["params"] if p["name"] == "VEC")
    assert vec["choices"] == [8, 16]
    assert any(c["expr"] == "cols % VEC == 0" for c in space["space"]["constraints"])


@pytest.mark.parametrize("space, field, words", [
    ({**SPACE, "constraints": [{"expr": "cols %% VEC =="}]}, "space.constraints.0.expr", "expression"),
    ({**SPACE, "constraints": [{"expr": "cols % WIDTH == 0"}]}, "space.constraints.0.expr", "WIDTH"),
    ({**SPACE, "constraints": [{"expr": "__import__('os')"}]}, "space.constraints.0.expr", ""),
    ({**SPACE, "constraints": [{"expr": "VEC > 64"}]}, "space.constraints", "impossible"),
    ({**SPACE, "params": [{"name": "UNROLL", "kind": "int", "low": 1, "high": 4}]}, "space.params.0.name", "UNROLL"),
    ({**SPACE, "params": [{"name": "VEC", "kind": "choice", "choices": [3]}]}, "space.params.0.choices", "VEC"),
    ({**SPACE, "params": [{"name": "VEC", "kind": "choice", "choices": "x"}]}, "space.params.0.choices", ""),
    ({**SPACE, "params": [{"name": "VEC", "kind": "float"}]}, "space.params.0.kind", ""),
    ({**SPACE, "params": [{"name": "VEC", "lo": 1}]}, "space.params.0.lo", ""),
    ({**SPACE, "constraints": 5}, "space.constraints", ""),
    ({**SPACE, "params": [{"name": "THREADS", "kind": "int", "low": 1, "high": 2**31}]}, "space.params.0.high",
     "at most"),
    ("everything", "space", ""),
])
def test_a_bad_design_space_is_a_400_naming_the_field(erin, space, field, words):
    resp = post(erin, "/api/goals", {**GOAL, "space": space})
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert body["field"] == field, body
    assert words in body["error"]
    assert not m.Goal.objects.exists()


@pytest.mark.parametrize("changes, field", [
    ({"workload": "nope"}, "workload"),
    ({"target": "tpu"}, "target"),
    ({"shapes": ["abc"]}, "shapes"),
    ({"held_out": ["1x"]}, "held_out"),
    ({"team": ["bob"]}, "team"),
    ({"team": []}, "team"),
    ({"pins": {"VEC": 4}}, "pins"),
    ({"budget": {"evaluations": 0}}, "budget.evaluations"),
    ({"budget": {"evals": 3}}, "budget.evals"),
    ({"population": "many"}, "population"),
    ({"metric": "joy"}, "metric"),
    ({"name": ""}, "name"),
    ({"tolerance": {"atol": -1}}, "tolerance.atol"),
    ({"colour": "red"}, "colour"),
    ({"name": "a\u0000b"}, "name"),
])
def test_a_bad_goal_is_a_400_naming_the_field(erin, changes, field):
    resp = post(erin, "/api/goals", {**GOAL, **changes})
    assert resp.status_code == 400, resp.content
    assert resp.json()["field"] == field, resp.json()


def test_nan_infinity_and_nul_are_refused_before_they_reach_the_database(erin):
    body = json.dumps({**GOAL, "eval_settings": {"repeats": float("nan")}})
    resp = post(erin, "/api/goals", body)
    assert resp.status_code == 400 and resp.json()["field"] == "body" and "NaN" in resp.json()["error"]
    resp = post(erin, "/api/goals", json.dumps(GOAL)[:-1] + ', "seed": 1e999}')
    assert resp.status_code == 400 and resp.json()["field"] == "body"
    resp = post(erin, "/api/goals", {**GOAL, "pins": {"VEC": "8\u0000"}})
    assert resp.status_code == 400 and resp.json()["field"] == "pins.VEC"
    assert not m.Goal.objects.exists()


def test_a_goal_is_updated_cloned_and_listed(erin, goal):
    changed = {**GOAL, "name": "softmax wide", "space": {**SPACE, "params": SPACE["params"][:1]},
               "required_approvals": 2}
    resp = put(erin, f"/api/goals/{goal['id']}", changed)
    assert resp.status_code == 200, resp.content
    assert resp.json()["name"] == "softmax wide" and resp.json()["required_approvals"] == 2
    bad = put(erin, f"/api/goals/{goal['id']}", {**changed, "space": {**SPACE, "constraints": ["NOPE > 1"]}})
    assert bad.status_code == 400 and bad.json()["field"] == "space.constraints.0.expr"
    assert erin.get(f"/api/goals/{goal['id']}").json()["name"] == "softmax wide"
    copy = post(erin, f"/api/goals/{goal['id']}/clone", {})
    assert copy.status_code == 201 and copy.json()["name"] == "softmax wide (copy)"
    assert copy.json()["spec"] == erin.get(f"/api/goals/{goal['id']}").json()["spec"]
    assert {g["id"] for g in erin.get("/api/goals?workload=softmax").json()} == {goal["id"], copy.json()["id"]}
    assert erin.get("/api/goals/999999").status_code == 404


def test_a_goal_can_be_checked_without_saving(erin):
    spec = {k: v for k, v in GOAL.items() if k != "name"}
    ok = post(erin, "/api/goals/validate", spec)
    assert ok.status_code == 200 and ok.json()["space_size"] == 2 * 2
    assert post(erin, "/api/goals/validate", GOAL).status_code == 200      # the create body is fine too
    bad = post(erin, "/api/goals/validate", {**spec, "space": {**SPACE, "constraints": ["cols % VEC =="]}})
    assert bad.status_code == 400 and bad.json()["field"] == "space.constraints.0.expr"


# ------------------------------------------------------------------ runs

def _dispatched(callbacks) -> int:
    """How many of the on-commit callbacks queue the run's driver (runs.drive_run)."""
    def says(cb):
        func = getattr(cb, "func", cb)
        return f"{getattr(cb, '__qualname__', '')} {func!r} {getattr(func, '__self__', '')!r}"
    return sum("drive_run" in says(cb) or "run_dispatch" in says(cb) for cb in callbacks)


def test_an_engineer_starts_pauses_resumes_and_stops_a_run(erin, goal, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        resp = post(erin, "/api/runs", {"goal_id": goal["id"]})
    assert resp.status_code == 201, resp.content
    run = resp.json()
    assert run["state"] == "running" and run["goal"] == goal["id"] and run["started_by"] == "erin"
    assert run["progress"]["budget"] == 8 and run["best"] is None
    assert _dispatched(queued) == 1        # its driver goes to the orchestrate queue on commit
    rid = run["id"]

    paused = post(erin, f"/api/runs/{rid}/pause", {})
    assert paused.status_code == 200 and paused.json()["state"] == "paused"
    again = post(erin, f"/api/runs/{rid}/pause", {})
    assert again.status_code == 409 and again.json()["field"] == "state"

    with django_capture_on_commit_callbacks(execute=False) as queued:
        resumed = post(erin, f"/api/runs/{rid}/resume", {})
    assert resumed.status_code == 200 and resumed.json()["state"] == "running" and _dispatched(queued) == 1

    stopped = post(erin, f"/api/runs/{rid}/stop", {})
    assert stopped.status_code == 200
    assert erin.get(f"/api/runs/{rid}/guidance").json()[-1]["directive"] == {"op": "stop"}
    # nobody drives it here (the queued driver never ran): a stop does not wait on one
    assert stopped.json()["state"] == "finished" and stopped.json()["finish_reason"] == "stopped by erin"

    kinds = [e["kind"] for e in erin.get(f"/api/runs/{rid}/events").json()]
    assert kinds == ["run_started", "run_paused", "run_resumed", "run_finished"]
    seqs = [e["seq"] for e in erin.get(f"/api/runs/{rid}/events").json()]
    later = erin.get(f"/api/runs/{rid}/events?after={seqs[0]}").json()
    assert [e["seq"] for e in later] == seqs[1:]
    assert [e["seq"] for e in erin.get(f"/api/runs/{rid}/events?after={seqs[0]}&limit=1").json()] == seqs[1:2]
    assert erin.get("/api/runs?state=finished").json()[0]["id"] == rid


def test_a_paused_run_is_finished_by_stop(erin, run):
    rid = run["id"]
    post(erin, f"/api/runs/{rid}/pause", {})
    resp = post(erin, f"/api/runs/{rid}/stop", {})
    assert resp.status_code == 200
    assert post(erin, f"/api/runs/{rid}/resume", {}).status_code == 409   # already resumed to stop


def test_a_run_with_overrides_and_a_run_of_a_missing_goal(erin, goal):
    resp = post(erin, "/api/runs", {"goal_id": goal["id"], "overrides": {"seed": 7, "population": 3,
                                                                         "budget": {"evaluations": 4}}})
    assert resp.status_code == 201, resp.content
    spec = resp.json()["spec"]
    assert spec["seed"] == 7 and spec["population"] == 3
    assert spec["budget"]["evaluations"] == 4 and spec["budget"]["stagnation_generations"] == 3   # the rest kept
    assert post(erin, "/api/runs", {"goal_id": 987654}).status_code == 404
    bad = post(erin, "/api/runs", {"goal_id": goal["id"], "overrides": {"workload": "matmul"}})
    assert bad.status_code == 400 and bad.json()["field"] == "overrides.workload"
    bad = post(erin, "/api/runs", {"goal_id": goal["id"], "overrides": {"pins": {"VEC": 3}}})
    assert bad.status_code == 400 and bad.json()["field"] == "pins"


def _candidates(run_id):
    """Two candidates as the engine stores them, one judged (no worker needed)."""
    run = m.Run.objects.get(pk=run_id)
    a = m.Candidate.objects.create(run=run, generation=0, key="a" * 32, params={"VEC": 8, "THREADS": 1},
                                   agent="explorer", rationale="=HYPERLINK(\"x\")", source="void kernel(){}",
                                   state="evaluated", status="ok", score=1.5,
                                   result={"status": "ok", "reason": "fast", "score": 1.5, "median_ms": 0.25,
                                           "speedup": {"numpy": 2.0, "torch": 1.5}})
    b = m.Candidate.objects.create(run=run, generation=1, key="b" * 32, params={"VEC": 16, "THREADS": 2},
                                   agent="mutator", rationale="wider vectors", source="void kernel(){ }",
                                   parents=[a.id], diff="-a\n+b\n", state="queued")
    case = {"kind": "typical", "shape": "256x1024", "distribution": "normal", "seed": 0, "passed": True,
            "outputs": {"y": {"max_abs_err": 1e-7, "max_rel_err": 2e-6}}}
    m.Evaluation.objects.create(candidate=a, attempt=1, status="ok", finished_at=timezone.now(),
                                outcome={"status": "ok", "reason": "fast", "speedup": a.result["speedup"],
                                         "result": a.result,
                                         "stages": [{"name": "correctness", "status": "ok",
                                                     "details": {"cases": [case]}}]})
    return a, b


def test_candidates_are_listed_and_one_is_shown_with_its_reports(vic, run):
    a, b = _candidates(run["id"])
    gens = vic.get(f"/api/runs/{run['id']}").json()["generations"]
    assert [(g["index"], g["by_state"]) for g in gens] == [(0, {"evaluated": 1}), (1, {"queued": 1})]
    rows = vic.get(f"/api/runs/{run['id']}/candidates").json()
    assert [r["id"] for r in rows] == [a.id, b.id] and "source" not in rows[0]
    assert [r["id"] for r in vic.get(f"/api/runs/{run['id']}/candidates?state=queued").json()] == [b.id]
    assert vic.get(f"/api/runs/{run['id']}/candidates?order=score").json()[0]["id"] == a.id
    one = vic.get(f"/api/candidates/{b.id}").json()
    assert one["source"] == "void kernel(){ }" and one["diff"] == "-a\n+b\n" and one["parents"] == [a.id]
    judged = vic.get(f"/api/candidates/{a.id}").json()
    assert judged["evaluations"][0]["outcome"]["stages"][0]["name"] == "correctness"
    if "reports" in judged:          # the candidate page's table, where the library app is installed
        row, = judged["reports"]["correctness"]
        assert row["shape"] == "256x1024" and row["passed"] is True and row["max_rel_err"] == 2e-6
    assert judged["speedup"] == {"numpy": 2.0, "torch": 1.5}
    assert vic.get("/api/candidates/424242").status_code == 404


def test_the_candidate_csv_has_one_column_per_baseline_and_param(vic, run):
    a, b = _candidates(run["id"])
    resp = vic.get(f"/api/runs/{run['id']}/candidates.csv")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    assert f"run-{run['id']}-candidates.csv" in resp["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    assert list(rows[0]) == ["id", "generation", "agent", "state", "status", "score", "median_ms",
                             "speedup_numpy", "speedup_torch", "param_THREADS", "param_VEC",
                             "parents", "reason", "rationale", "created_at", "evaluated_at"]
    assert rows[0]["id"] == str(a.id) and rows[0]["speedup_numpy"] == "2.0" and rows[0]["param_VEC"] == "8"
    assert rows[0]["rationale"].startswith("'=")         # a spreadsheet must not run it
    assert rows[1]["parents"] == str(a.id) and rows[1]["speedup_numpy"] == "" and rows[1]["state"] == "queued"


# ------------------------------------------------------------------ guidance

def test_guidance_is_validated_against_the_runs_space_and_team(erin, run):
    url = f"/api/runs/{run['id']}/guidance"
    ok = post(erin, url, {"op": "pin", "param": "VEC", "value": 16})
    assert ok.status_code == 201 and ok.json()["author"] == "erin"
    assert post(erin, url, {"op": "narrow", "param": "THREADS", "values": [1, 2]}).status_code == 201
    assert post(erin, url, {"op": "note", "text": "try wider vectors"}).status_code == 201
    for body, field in (({"op": "pin", "param": "UNROLL", "value": 2}, "param"),
                        ({"op": "pin", "param": "VEC", "value": 4}, "value"),
                        ({"op": "narrow", "param": "VEC", "values": []}, "values"),
                        ({"op": "favour", "agent": "tuner"}, "agent"),
                        ({"op": "target", "speedup": -1}, "speedup"),
                        ({"op": "note", "text": "  "}, "text"),
                        ({"op": "dance"}, "op"),
                        ({"op": "note", "text": "x", "colour": 1}, "colour")):
        resp = post(erin, url, body)
        assert resp.status_code == 400, body
        assert resp.json()["field"] == field, (body, resp.json())
    listed = erin.get(url).json()
    assert [g["directive"]["op"] for g in listed] == ["pin", "narrow", "note"]


# ------------------------------------------------------------------ garbage never makes a 500

GARBAGE = [b"", b"not json", b"[]", b"null", b"42", b'"text"', b'{"a": ', json.dumps({"x": [1] * 3}).encode(),
           json.dumps({"goal_id": "x", "op": 5, "name": {"a": 1}, "workload": [1], "space": [[]]}).encode(),
           json.dumps({"goal_id": 2**70, "name": "x" * 10_000, "workload": "\u0000"}).encode(),
           b'{"op": "note", "text": "\\u0000"}', b'{"eval_settings": {"x": NaN}, "pins": {"VEC": Infinity}}',
           b'{"goal_id": 1e999, "speedup": -Infinity}', "{\"name\": \"\udcff\"}".encode("utf-8", "surrogatepass"),
           b"\xff\xfe\x00garbage"]


def test_garbage_posted_to_every_write_endpoint_is_a_4xx_with_a_json_error(erin, goal, run):
    urls = [("post", "/api/goals"), ("put", f"/api/goals/{goal['id']}"), ("post", f"/api/goals/{goal['id']}/clone"),
            ("post", "/api/goals/validate"), ("post", "/api/runs"), ("post", f"/api/runs/{run['id']}/guidance"),
            ("post", f"/api/runs/{run['id']}/pause"), ("post", f"/api/runs/{run['id']}/resume"),
            ("post", f"/api/runs/{run['id']}/stop")]
    if __import__("django.apps").apps.apps.is_installed("int21web.library"):
        a, _ = _candidates(run["id"])
        urls += [("post", f"/api/candidates/{a.id}/propose"), ("post", f"/api/candidates/{a.id}/comments"),
                 ("post", "/api/reviews/1/approve"), ("post", "/api/reviews/1/request-changes"),
                 ("post", "/api/library/1/crown")]
    urls += [(method, url.replace(f"/{run['id']}/", "/abc/").replace(f"/{goal['id']}", "/99999999999999999999999"))
             for method, url in urls]
    for method, url in urls:
        for body in GARBAGE:
            resp = getattr(erin, method)(url, body, content_type="application/json")
            assert resp.status_code < 500, (method, url, body, resp.content[:300])
            if resp.status_code >= 400:
                assert "error" in resp.json(), (url, body)


def test_workers_are_listed_from_the_fleet(vic, run):
    resp = vic.get("/api/workers")
    assert resp.status_code == 200 and isinstance(resp.json(), list)
    assert "live" in vic.get(f"/api/runs/{run['id']}").json()["workers"]


def test_an_unknown_api_path_or_method_is_a_json_4xx(client, vic, goal):
    for resp in (client.get("/api/nope"), vic.get("/api/goals/"), vic.get("/api/runs/1/zzz")):
        assert resp.status_code == 404 and "no API endpoint" in resp.json()["error"], resp.content[:200]
    deleted = vic.delete(f"/api/goals/{goal['id']}")
    assert deleted.status_code == 405 and "PUT" in deleted["Allow"]
    assert vic.get("/api/goals").status_code == 200 and client.get("/api/openapi.json").status_code == 200


def test_garbage_in_query_strings_is_a_4xx(vic, run):
    for url in ("/api/runs?state=exploded", "/api/runs?limit=-1", "/api/runs?goal=1e99",
                f"/api/runs/{run['id']}/events?after=-3", f"/api/runs/{run['id']}/events?after=99999999999999999999999",
                f"/api/runs/{run['id']}/candidates?status=%00", "/api/goals?workload=%00",
                f"/api/runs/{run['id']}/candidates?generation=x", "/api/runs/0", "/api/candidates/-1",
                "/api/library?workload=%00", "/api/reviews?state=nope", "/api/library/0/download"):
        resp = vic.get(url)
        assert 400 <= resp.status_code < 500, (url, resp.content[:300])
        assert "error" in resp.json()


# ------------------------------------------------------------------ reviews and the library

library_installed = pytest.mark.skipif(not __import__("django.apps").apps.apps.is_installed("int21web.library"),
                                       reason="the library app is not installed")


def _finish_recheck(proposal_id, status="ok", score=1.5):
    """What a worker does when the held-out re-check ends: the Evaluation row is finished,
    then the gate settles it (library.services.evaluation_recorded)."""
    from django.utils import timezone

    from int21web.library import services as lib
    from int21web.library.models import Proposal
    ev = Proposal.objects.get(pk=proposal_id).recheck
    m.Evaluation.objects.filter(pk=ev.pk).update(
        status=status, finished_at=timezone.now(),
        outcome={**(ev.outcome or {}), "status": status, "reason": "held-out shapes pass",
                 "result": {"status": status, "score": score, "speedup": {"numpy": 2.0, "torch": score}},
                 "fingerprint": {"cpu": "test"}, "stages": []})
    lib.evaluation_recorded(evaluation_id=ev.pk)


@library_installed
def test_a_candidate_is_proposed_approved_by_someone_else_and_lands_in_the_library(people, erin, run):
    import zipfile
    a, b = _candidates(run["id"])
    rita = client_for(people["rita"])
    assert post(erin, f"/api/candidates/{b.id}/propose", {}).status_code == 409        # not evaluated: not ok
    assert post(vic_client := client_for(people["vic"]), f"/api/candidates/{a.id}/propose", {}).status_code == 403
    resp = post(erin, f"/api/candidates/{a.id}/propose", {"note": "fastest so far"})
    assert resp.status_code == 201, resp.content
    prop = resp.json()
    assert prop["state"] == "open" and prop["required_approvals"] == 1 and prop["proposed_by"] == "erin"
    again = post(erin, f"/api/candidates/{a.id}/propose", {})
    assert again.status_code == 409 and "already proposed" in again.json()["error"]

    assert post(erin, f"/api/reviews/{prop['id']}/approve", {}).json()["role"] == "reviewer"
    assert [p["id"] for p in vic_client.get("/api/reviews?state=open").json()] == [prop["id"]]
    approved = post(rita, f"/api/reviews/{prop['id']}/approve", {"comment": "clean"})
    assert approved.status_code == 200, approved.content
    assert approved.json()["state"] == "rechecking" and approved.json()["approvals"] == 1

    _finish_recheck(prop["id"])
    done = vic_client.get(f"/api/reviews/{prop['id']}").json()
    assert done["state"] == "promoted" and done["kernel"]
    assert {"propose", "approve", "recheck_passed", "promote"} <= {a["action"] for a in done["audit"]}

    kernels = vic_client.get("/api/library?workload=softmax").json()
    assert [k["id"] for k in kernels] == [done["kernel"]] and kernels[0]["champion"] is True
    kv = vic_client.get(f"/api/library/{done['kernel']}").json()
    assert kv["source"] == a.source and kv["manifest"]["candidate"]["id"] == a.id
    z = vic_client.get(f"/api/library/{done['kernel']}/download")
    assert z.status_code == 200 and z["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(z.streaming_content) if z.streaming else z.content))
    manifest = json.loads(names.read(next(n for n in names.namelist() if n.endswith("manifest.json"))))
    assert manifest == kv["manifest"]
    assert vic_client.get("/api/library/777777").status_code == 404


@library_installed
def test_a_reviewer_requests_changes_with_a_comment_and_cannot_approve_their_own_run(people, erin, goal, run):
    a, _ = _candidates(run["id"])
    rita = client_for(people["rita"])
    prop = post(erin, f"/api/candidates/{a.id}/propose", {}).json()
    empty = post(rita, f"/api/reviews/{prop['id']}/request-changes", {"comment": "  "})
    assert empty.status_code == 400 and empty.json()["field"] == "comment"
    sent_back = post(rita, f"/api/reviews/{prop['id']}/request-changes", {"comment": "test the tail rows"})
    assert sent_back.status_code == 200 and sent_back.json()["state"] == "changes_requested"
    assert post(rita, f"/api/reviews/{prop['id']}/approve", {}).status_code == 409     # no longer open

    ada = User.objects.create_user("ada", password="x")
    ada.groups.add(Group.objects.get_or_create(name="admin")[0])
    ada_c = client_for(ada)
    own = post(ada_c, "/api/runs", {"goal_id": goal["id"]}).json()
    mine, _ = _candidates(own["id"])
    p2 = post(ada_c, f"/api/candidates/{mine.id}/propose", {}).json()
    refused = post(ada_c, f"/api/reviews/{p2['id']}/approve", {})
    assert refused.status_code == 403 and "someone else" in refused.json()["error"]


@library_installed
def test_comments_on_a_candidate(people, erin, vic, run):
    a, _ = _candidates(run["id"])
    assert post(erin, f"/api/candidates/{a.id}/comments", {"body": "nice"}).status_code == 201
    assert post(vic, f"/api/candidates/{a.id}/comments", {"body": "me too"}).status_code == 403
    assert post(erin, f"/api/candidates/{a.id}/comments", {"body": ""}).json()["field"] == "body"
    assert [c["body"] for c in vic.get(f"/api/candidates/{a.id}/comments").json()] == ["nice"]
    assert vic.get(f"/api/candidates/{a.id}").json()["comments"][0]["author"] == "erin"


def test_tokens_are_listed_in_the_admin_without_a_way_to_add_one(people):
    from int21web.api.services import token_create
    token_create(user=people["vic"], name="ci")
    admin = User.objects.create_superuser("root", password="x")
    page = client_for(admin).get("/admin/api/apitoken/")
    assert page.status_code == 200 and b"ci" in page.content
    assert client_for(admin).get("/admin/api/apitoken/add/").status_code == 403


def test_a_goal_chooses_its_language_model_through_the_api_and_a_bad_choice_names_the_field(erin):
    body = {**GOAL, "name": "with a model", "team": ["explorer", "llm_coder"],
            "llm": {"provider": "ollama", "model": "qwen2.5-coder:7b", "budget": {"requests": 5}}}
    resp = post(erin, "/api/goals", body)
    assert resp.status_code == 201, resp.content
    assert resp.json()["spec"]["llm"] == body["llm"]
    bad = post(erin, "/api/goals", {**body, "name": "bad", "llm": {"provider": "openai", "temperature": 9}})
    assert bad.status_code == 400 and bad.json()["field"].startswith("llm"), bad.content
    key = post(erin, "/api/goals", {**body, "name": "keyed", "llm": {"provider": "openai", "api_key": "sk-x"}})
    assert key.status_code == 400 and "key" in key.json()["error"].lower(), key.content


@pytest.mark.parametrize("settings,key", [({"isolate": False}, "eval_settings.isolate"),
                                          ({"repeats": 3}, "eval_settings.repeats"),
                                          ({"memory_mb": 1 << 20}, "eval_settings.memory_mb"),
                                          ({"timing": False}, "eval_settings.timing")])
def test_evaluation_settings_a_goal_may_not_hold_are_a_400_naming_the_key(erin, settings, key):
    resp = post(erin, "/api/goals", {**GOAL, "eval_settings": settings})
    assert resp.status_code == 400, resp.content
    assert resp.json()["field"] == key, resp.json()
    assert not m.Goal.objects.exists()


def test_a_huge_shape_is_a_400_with_its_size_not_a_dead_worker(erin):
    for path in ("/api/goals/validate", "/api/goals"):
        resp = post(erin, path, {**GOAL, "shapes": ["99999999x99999999"]})
        assert resp.status_code == 400, resp.content
        assert resp.json()["field"] == "shapes" and "GiB" in resp.json()["error"]
    assert not m.Goal.objects.exists()
