"""Own ops in a real browser: a problem file pasted on the Import page is previewed (what is
supported, the fusion groups) before anything is stored, a sort is refused with its
reason, the import lands on the problem's page with its graph drawn, and the API imports
another one through the same session."""
import json

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.timeout(600)

PROBLEM = '''import torch
import torch.nn as nn

batch_size = 32
dim = 384


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

SORTS = PROBLEM.replace("return torch.softmax(x * 2.0, dim=1)", "return torch.sort(x, dim=1).values")


def test_a_problem_is_previewed_then_imported_and_shown_and_the_api_imports_another(login, server):
    page = login("engineer")
    page.goto(server["url"] + "/ops/import/")
    page.fill("#id_source", SORTS)
    page.fill("#id_name", "browser_sort")
    page.click("button[value=preview]")
    page.wait_for_selector("#preview, #refusal")
    text = page.locator("main").inner_text() if page.locator("main").count() else page.inner_text("body")
    assert "sort" in text.lower() and ("not importable" in text or "Refused" in text)

    page.fill("#id_source", PROBLEM)
    page.fill("#id_name", "browser_softmax")
    page.click("button[value=preview]")
    page.wait_for_selector("#preview")
    assert "everything is supported" in page.locator("#preview").inner_text()
    assert "Fusion groups" in page.locator("#preview").inner_text()
    status, body = _api(page, server, "GET", "/api/workloads?name=browser_softmax")
    assert status == 404, body                  # a preview stores nothing
    shot(page, "ops-import-preview")

    page.click("button[value=import]")
    page.wait_for_url("**/ops/browser_softmax/", timeout=120_000)
    page.wait_for_selector("#graph-chart .plot-container, #graph-chart svg", timeout=60_000)
    assert page.locator("h1").inner_text() == "browser_softmax"
    shot(page, "ops-problem")

    status, body = _api(page, server, "POST", "/api/workloads",
                        {"name": "browser_softmax_api", "source": PROBLEM.replace("2.0", "3.0")})
    assert status == 201, body
    status, body = _api(page, server, "GET", "/api/workloads?name=browser_softmax_api")
    assert status == 200 and "browser_softmax_api" in json.dumps(body)
    page.goto(server["url"] + "/ops/")
    assert "browser_softmax_api" in page.inner_text("body")


def _api(page, server, method, path, body=None):
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    resp = page.request.fetch(server["url"] + path, method=method, headers={"X-CSRFToken": token,
                              "Content-Type": "application/json"}, data=json.dumps(body) if body is not None else None)
    try:
        return resp.status, resp.json()
    except Exception:
        return resp.status, resp.text()
