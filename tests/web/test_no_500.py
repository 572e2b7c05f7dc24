"""No 500 anywhere: every page and API endpoint in the URL conf (Django's admin aside) is sent
malformed and oversized input, by an admin (so every role check lets it through to the
parsing), and answers below 500; an API error is JSON with an ``error``. The routes are read
from the URL conf, so a new endpoint is walked without anyone remembering to list it."""
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from int21web.runs import models as m
from int21web.runs.forms import GoalForm

pytestmark = pytest.mark.django_db

BIG = "x" * 200_000
HUGE_INT = "9" * 400
GOAL_SPEC = {"workload": "softmax", "target": "cpu", "shapes": ["256x1024"], "budget": {"evaluations": 4}}
# the fields of every form (goal editor, design-space rows, guidance, comments, reviews); never
# "source": an own-op import would capture it, which is tested in tests/web/test_ops.py
FIELDS = sorted(set(GoalForm.base_fields) | {
    "space-used", "space-p-0-name", "space-p-0-kind", "space-p-0-low", "space-p-0-high", "space-p-0-step",
    "space-p-0-choices", "space-c-0-expr", "space-c-0-message", "op", "param", "value", "agent", "text",
    "note", "comment", "body", "then", "name", "shapes", "held_out"})
GOOD_GOAL_FORM = {"name": "g", "workload": "softmax", "target": "cpu", "shapes": "256x1024", "metric": "speedup",
                  "evaluations": "4", "population": "2", "seed": "0", "required_approvals": "1", "team": "explorer"}
FORMS = [
    {},
    {f: "\x00" for f in FIELDS},
    {f: HUGE_INT for f in FIELDS},
    {f: "-1e999" for f in FIELDS},
    {f: BIG for f in FIELDS},
    {**GOOD_GOAL_FORM, "shapes": "99999999x99999999", "held_out": "99999999x99999999"},
    {**GOOD_GOAL_FORM, "space-used": "1", "space-c-0-expr": "'a' * 10 ** 18 == 'b'"},
    {**GOOD_GOAL_FORM, "space-used": "1", "space-c-0-expr": "9 ** 9 ** 9 ** 9 > 1"},
    {**GOOD_GOAL_FORM, "space-used": "1", "space-p-0-name": "VEC", "space-p-0-kind": "int",
     "space-p-0-low": "1", "space-p-0-high": HUGE_INT, "space-p-0-step": "0"},
    {"op": "pin", "param": "NOPE", "value": "3"},
    {"op": "narrow", "param": "VEC", "value": ",".join(["1"] * 50_000)},
    {"op": "target", "value": "nan"},
]
JSON = [
    "{", "[]", "null", '"x"', "1e400", '{"a": NaN}', "[" * 5000 + "]" * 5000, '{"x": ' * 3000 + "1" + "}" * 3000,
    '{"goal_id": 1e400, "name": "\\u0000"}', '{"name": "' + BIG + '"}',
    '{"name": "g", "spec": {"workload": "softmax", "shapes": ["99999999x99999999"]}}',
    '{"name": "g", "workload": "softmax", "shapes": ["99999999x99999999"], "budget": {"evaluations": 4}}',
    '{"name": "g", "workload": "softmax", "space": {"params": [{"name": "VEC", "kind": "choice", "choices": [8]}],'
    ' "constraints": [{"expr": "\'a\' * 10 ** 18 == \'b\'"}]}}',
    '{"op": "pin", "param": "NOPE", "value": 3}', '{"op": "narrow", "param": "VEC", "values": [' + "1," * 20000 + "1]}",
    '{"body": ' + '"' + BIG + '"}', '{"comment": 5, "note": [], "overrides": {"budget": {"evaluations": -1}}}',
]
QUERY = ["?after=-1&limit=" + HUGE_INT + "&state=%00&workload=%00&target=%00&owner=%00&q=" + "y" * 5000,
         "?goal=1e99&generation=x&order=%00&status=%00&name=%00&archived=maybe"]


def routes():
    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                if not str(p.pattern).startswith("admin/"):
                    yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern)
    return sorted(set(walk(get_resolver().url_patterns)))


def fill(route: str, ids: dict, garbage: bool) -> str:
    """A URL for the route: its int parameters are real rows (or an absurd number), its str ones a name."""
    def one(match):
        conv, name = match.group(1) or "str", match.group(2)
        if garbage:
            return HUGE_INT if conv == "int" else "%00" + "z" * 300
        if name in ids:
            return str(ids[name])
        return "1" if conv == "int" else {"action": "pause"}.get(name, "softmax")
    url = re.sub(r"<(?:(\w+):)?(\w+)>", one, route)
    url = re.sub(r"\{(\w+)\}", lambda mt: str(ids.get(mt.group(1), 1)) if not garbage else HUGE_INT, url)
    return "/" + url.replace("^", "").replace("$", "")


@pytest.fixture
def world(users):
    goal = m.Goal.objects.create(name="g", spec=GOAL_SPEC, created_by=users["engineer"])
    run = m.Run.objects.create(goal=goal, spec=GOAL_SPEC, state="running", started_by=users["engineer"])
    cand = m.Candidate.objects.create(run=run, generation=0, key="k" * 32, params={"VEC": 8}, agent="explorer",
                                      rationale="r", source="void kernel(){}", state="evaluated", status="ok",
                                      score=1.2, result={"status": "ok", "reason": "", "score": 1.2,
                                                         "speedup": {"numpy": 1.2}})
    m.Evaluation.objects.create(candidate=cand, attempt=1, status="ok", finished_at=timezone.now(),
                                outcome={"result": cand.result})
    return {"goal_id": goal.id, "run_id": run.id, "candidate_id": cand.id, "proposal_id": 1, "kernel_id": 1}


def check(resp, method, url, payload):
    where = (method, url[:120], str(payload)[:120])
    assert resp.status_code < 500, (*where, resp.status_code, resp.content[:300])
    if url.startswith("/api/") and resp.status_code >= 400 and not url.startswith("/api/docs"):
        assert resp["Content-Type"].startswith("application/json"), where
        assert "error" in resp.json(), (*where, resp.content[:300])


def test_every_route_answers_malformed_and_oversized_input_without_a_500(client, users, world):
    client.raise_request_exception = False     # a 500 is a status to assert on, not an exception here
    client.force_login(users["admin"])
    walked = routes()
    assert len(walked) > 60 and "api/runs/<run_id>/guidance" in walked and "goals/validate/" in walked
    for route in walked:
        if route.startswith("accounts/logout"):
            continue   # it would end the session the rest of the walk runs in
        api = route.startswith("api/")
        if route.startswith(("api/openapi.json", "api/docs")):   # the schema: built on each GET (seconds)
            check(client.get(fill(route, world, False) + QUERY[0]), "GET", route, None)
            continue
        for garbage in (False, True):
            url = fill(route, world, garbage)
            for q in QUERY if not garbage else QUERY[:1]:
                check(client.get(url + q), "GET", url + q, None)
            # the pages parse forms, the API parses JSON: each gets all of its own kind, one of the other
            forms = FORMS[:2] if api or garbage else FORMS
            for payload in forms:
                check(client.post(url, payload), "POST form", url, payload)
            for body in (JSON if api and not garbage else JSON[:1]):
                check(client.post(url, body, content_type="application/json"), "POST", url, body)
            for body in (JSON[:3] if api else JSON[:1]):
                check(client.put(url, body, content_type="application/json"), "PUT", url, body)
            check(client.delete(url), "DELETE", url, None)
