"""The goal editor and the API check a goal with the same function (swarm.goals.goal_problems):
the same bad goal gets the same message from both, at the form field of the API's field."""
import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from int21web.runs.forms import form_field

pytestmark = pytest.mark.django_db

FORM = {"name": "softmax rows", "workload": "softmax", "target": "cpu", "shapes": "256x1024", "metric": "speedup",
        "evaluations": "20", "stagnation": "5", "population": "4", "seed": "0", "required_approvals": "1",
        "team": ["explorer", "mutator"], "space-used": "1", "space-p-0-name": "VEC", "space-p-0-kind": "choice",
        "space-p-0-choices": "8, 16", "space-c-0-expr": "cols % VEC == 0"}
API = {"name": "softmax rows", "workload": "softmax", "target": "cpu", "shapes": ["256x1024"],
       "budget": {"evaluations": 20, "stagnation_generations": 5}, "population": 4, "team": ["explorer", "mutator"],
       "space": {"params": [{"name": "VEC", "kind": "choice", "choices": [8, 16]}],
                 "constraints": [{"expr": "cols % VEC == 0"}]}}

CASES = [
    ({"shapes": "banana"}, {"shapes": ["banana"]}),
    ({"held_out": "1x"}, {"held_out": ["1x"]}),
    ({"space-c-0-expr": "cols % WIDTH == 0"}, {"space": {**API["space"], "constraints": [{"expr": "cols % WIDTH == 0"}]}}),
    ({"space-c-0-expr": "VEC > 64"}, {"space": {**API["space"], "constraints": [{"expr": "VEC > 64"}]}}),
    ({"space-p-0-choices": "3"}, {"space": {**API["space"], "params": [{"name": "VEC", "kind": "choice", "choices": [3]}]}}),
    ({"llm_provider": "openai", "llm_model": "m", "llm_temperature": "9.5"},
     {"llm": {"provider": "openai", "model": "m", "temperature": 9.5}}),
]


@pytest.fixture
def erin(db):
    user = User.objects.create_user("erin", password="int21-demo")
    user.groups.add(Group.objects.get_or_create(name="engineer")[0])
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.parametrize("form_changes, api_changes", CASES, ids=[next(iter(f)) for f, _ in CASES])
def test_the_form_and_the_api_report_a_bad_goal_the_same_way(erin, form_changes, api_changes):
    api = erin.post("/api/goals", json.dumps({**API, **api_changes}), content_type="application/json")
    assert api.status_code == 400, api.content
    body = api.json()
    form = erin.post("/goals/validate/", {**FORM, **form_changes})
    errors = form.context["errors"]
    rows = {"params": [(0, {})], "constraints": [(0, {})]}
    field = form_field(body["field"], rows, set(FORM) | {"held_out", "llm_temperature"})
    assert field in errors, (body, errors)
    assert body["error"] == f"{body['field']}: {errors[field]}", (body, errors)


def test_a_server_the_factory_may_not_use_is_refused_by_both(erin, monkeypatch):
    monkeypatch.setenv("LLM_ALLOWED_BASE_URLS", "http://10.0.0.5:8000/v1")
    llm = {"provider": "openai", "model": "m", "base_url": "http://evil.example/v1"}
    api = erin.post("/api/goals", json.dumps({**API, "llm": llm}), content_type="application/json")
    assert api.status_code == 400 and api.json()["field"] == "llm.base_url", api.content
    form = erin.post("/goals/validate/", {**FORM, "llm_provider": "openai", "llm_model": "m",
                                          "llm_base_url": "http://evil.example/v1"})
    assert "LLM_ALLOWED_BASE_URLS" in form.context["errors"]["llm_base_url"]
