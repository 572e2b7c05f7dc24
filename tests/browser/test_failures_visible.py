"""Bad input never breaks the workbench and failures are visible, in a real browser: each
case ends in a message where the user acted and a page that still works afterwards."""
import json

import pytest

from tests.browser.conftest import shot
from tests.browser.faulty_manage import FAULT_SEED

pytestmark = pytest.mark.timeout(600)


def api(page, server, method, path, body=None):
    """The API through the signed-in browser session (its CSRF cookie as the header)."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    resp = page.request.fetch(server["url"] + path, method=method, headers={"X-CSRFToken": token,
                              "Content-Type": "application/json"}, data=json.dumps(body) if body is not None else None)
    return resp.status, resp.json()


def test_the_editor_refuses_a_huge_shape_and_a_costly_constraint_and_rechecks_after_a_workload_switch(login, server):
    page = login("engineer")
    console = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    page.goto(server["url"] + "/goals/new/")
    page.fill("#id_name", "bad input")
    page.fill("#id_shapes", "99999999x99999999")
    page.wait_for_function("document.getElementById('err-shapes').textContent.includes('too large for this host')")
    assert "problem" in page.locator("#validation").inner_text()
    page.click("#save-goal")                                  # the save is refused the same way
    assert "GiB of memory" in page.locator("#err-shapes").inner_text()
    page.fill("#id_shapes", "64x512")
    page.wait_for_selector("#goal-ok")                        # ✓ This goal can run
    page.wait_for_function("document.getElementById('err-shapes').textContent === ''")

    page.click("#add-constraint")
    page.locator("input[name='space-c-0-expr']").fill("'a' * 10 ** 18 == 'b'")
    page.wait_for_function("document.getElementById('err-space-c-0-expr').textContent.length > 0")
    assert not page.locator("#goal-ok").count()
    shot(page, "editor-costly-constraint")

    # a workload switch: the other workload's rows, checked again, no stale message left
    page.select_option("select[name=workload]", "rmsnorm")
    page.wait_for_function("!document.querySelector(\"input[name='space-c-0-expr']\")")
    page.wait_for_selector("#goal-ok")
    stale = page.evaluate("[...document.querySelectorAll('#goal-form .errorlist')].map(e => e.textContent).join('')")
    assert stale == "", stale
    assert "rows, cols" in page.locator("#constraint-hint").inner_text()

    # a check the server fails (500) does not leave "✓ This goal can run" standing
    page.route("**/goals/validate/", lambda route: route.fulfill(status=500, body="boom"))
    page.fill("#id_name", "bad input, again")
    page.wait_for_selector("#check-failed")
    assert not page.locator("#goal-ok").count() and "500" in page.locator("#validation").inner_text()
    page.unroute("**/goals/validate/")
    page.fill("#id_name", "bad input, fixed")
    page.wait_for_selector("#goal-ok")
    assert not [t for t in console if "oobErrorNoTarget" in t or "htmx" in t.lower()], console[:5]


def test_a_failing_driver_ends_its_run_failed_and_a_later_run_is_still_evaluated_and_steered(login, server):
    page = login("engineer")
    base = {"workload": "softmax", "target": "cpu", "shapes": ["64x256"], "population": 2, "confirm_top": 0,
            "team": ["explorer"], "budget": {"evaluations": 2, "stagnation_generations": None},
            "eval_settings": {"baselines": ["numpy"]}}
    status, bad = api(page, server, "POST", "/api/goals", {**base, "name": "driver fault", "seed": FAULT_SEED})
    assert status == 201, bad
    status, good = api(page, server, "POST", "/api/goals", {**base, "name": "a good one", "seed": 1})
    assert status == 201, good

    _, failed = api(page, server, "POST", "/api/runs", {"goal_id": bad["id"]})
    page.goto(f"{server['url']}/runs/{failed['id']}/")
    page.wait_for_function("document.getElementById('run-state').textContent === 'failed'", timeout=120_000)
    assert "the driver failed: TypeError" in page.locator("#run-reason").inner_text()
    assert "Traceback" not in page.content()
    for button in ("#pause-run", "#resume-run", "#stop-run", "#guidance-form"):
        assert not page.locator(button).is_visible(), button
    assert page.locator("#live-status").inner_text() == "ended"
    shot(page, "run-failed")

    # a later run on the same server is driven and judged
    _, later = api(page, server, "POST", "/api/runs", {"goal_id": good["id"]})
    page.goto(f"{server['url']}/runs/{later['id']}/")
    page.wait_for_selector("#guidance-form")
    page.select_option("#guidance-form select[name=op]", "note")
    page.fill("#guidance-form input[name=text]", "try the widest vectors")
    page.click("#post-guidance")
    page.wait_for_selector("#guidance-ok")
    page.select_option("#guidance-form select[name=op]", "pin")
    page.fill("#guidance-form input[name=param]", "NOPE")
    page.fill("#guidance-form input[name=value]", "3")
    page.click("#post-guidance")
    page.wait_for_selector("#guidance-error")                 # refused: shown, the green "Posted" gone
    assert "NOPE" in page.locator("#guidance-error").inner_text() and not page.locator("#guidance-ok").count()
    assert page.locator("#guidance-history li").count() == 1
    page.wait_for_function("document.getElementById('run-state').textContent === 'finished'", timeout=300_000)
    assert page.locator("#candidates tbody tr").count() == 2
    assert not page.locator("#candidates tbody tr[data-status='in flight']").count()
    assert "one measurement" in page.locator("#run-spread").inner_text()
    _, events = api(page, server, "GET", f"/api/runs/{later['id']}/events")
    subjects = {e["data"]["subject"] for e in events if e["kind"] == "lesson_recorded"}
    assert page.locator("#lessons li").count() == len(subjects)          # each lesson once

    # a finished run: only what applies is shown, and what is forced anyway is refused where it was clicked
    for button in ("#pause-run", "#resume-run", "#stop-run", "#guidance-form"):
        assert not page.locator(button).is_visible(), button
    assert page.locator("#live-status").inner_text() == "ended"
    page.evaluate("document.getElementById('pause-run').hidden = false")
    page.click("#pause-run")
    page.wait_for_selector("#control-error")
    assert "only a running run can be paused" in page.locator("#control-error").inner_text()
    shot(page, "run-finished-controls")
    page.reload()
    assert page.locator("#guidance-history li").count() == 1      # the same history after a reload
