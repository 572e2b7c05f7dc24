"""The workbench as a user sees it: sign in, write a goal with an own design space and a
constraint, start a run, watch it live, steer it, review and promote, download from the library."""
import hashlib
import json
import re
import zipfile

import pytest

from tests.browser.conftest import shot

pytestmark = pytest.mark.timeout(600)


def test_the_goal_form_rejects_a_malformed_constraint_with_a_message(login):
    page = login("engineer")
    page.goto(page.url + "goals/new/")
    page.click("#add-constraint")
    page.locator("input[name='space-c-0-expr']").fill("cols %% VEC ==")
    slot = page.locator("#err-space-c-0-expr")
    slot.wait_for(state="visible")
    page.wait_for_function("document.getElementById('err-space-c-0-expr').textContent.includes('not a valid expression')")
    assert "problem" in page.locator("#validation").inner_text()
    page.click("#save-goal")
    assert "not a valid expression" in page.locator("#err-space-c-0-expr").inner_text()
    shot(page, "goal-editor-error")


def test_a_viewer_cannot_reach_engineer_actions(login, server):
    page = login("viewer")
    page.goto(server["url"] + "/goals/new/")
    assert "needs the engineer role" in page.locator("main").inner_text()
    page.goto(server["url"] + "/goals/")
    assert page.locator("form[action$='/start/']").count() == 0 and page.locator("#new-goal").count() == 0


def test_a_new_user_writes_a_goal_starts_a_run_and_steers_it(login, server):
    page = login("engineer")
    shot(page, "dashboard")
    page.goto(server["url"] + "/goals/new/")
    page.fill("#id_name", "softmax, my space")
    page.select_option("select[name=workload]", "softmax")
    page.fill("#id_shapes", "64x512")
    page.fill("#id_held_out", "33x250")
    page.fill("#id_evaluations", "16")
    page.fill("#id_population", "4")
    page.fill("#id_stagnation", "")
    # a quick timing session per evaluation, as this host's fast floor lets a goal ask
    # (the harness's default budget is tested where timing is the subject: tests/harness)
    page.fill("#id_eval_settings", '{"timing_budget_s": 0.25}')
    # own design space: VEC among 8 and 16, one thread, and a constraint
    page.locator("input[name='space-p-0-name']").wait_for()
    names = [page.locator(f"input[name='space-p-{i}-name']").input_value()
             for i in range(page.locator("tr.param-row").count())]
    vec, threads = names.index("VEC"), names.index("THREADS")
    page.locator(f"input[name='space-p-{vec}-choices']").fill("8, 16")
    if page.locator(f"select[name='space-p-{threads}-kind']").input_value() == "int":
        page.locator(f"input[name='space-p-{threads}-low']").fill("1")
        page.locator(f"input[name='space-p-{threads}-high']").fill("2")
    else:
        page.locator(f"input[name='space-p-{threads}-choices']").fill("1, 2")
    page.click("#add-constraint")
    page.locator("input[name='space-c-0-expr']").fill("cols % VEC == 0")
    page.locator("input[name='space-c-0-message']").fill("whole vectors per row")
    page.wait_for_function("document.getElementById('validation').textContent.includes('This goal can run')")
    shot(page, "goal-editor")
    page.click("#save-and-start")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    # candidates and the chart appear without a reload
    page.wait_for_selector("#candidates tbody tr[data-status='ok']", timeout=180_000)
    page.wait_for_selector("#chart-best .main-svg")
    assert page.evaluate("window.int21Run.duplicates") == 0
    # guidance that visibly changes the next generation: pin VEC to 16
    page.select_option("#guidance-form select[name=op]", "pin")
    page.fill("#guidance-form input[name=param]", "VEC")
    page.fill("#guidance-form input[name=value]", "16")
    page.fill("#guidance-form input[name=text]", "wider vectors")
    page.click("#post-guidance")
    page.wait_for_selector("#guidance-ok")
    page.wait_for_selector("#guidance-history .applied", timeout=180_000)
    applied_after = page.evaluate("window.int21Run.lastSeq")
    page.wait_for_function("window.int21Run.state === 'finished'", timeout=300_000)
    # before it ended, the run re-measured its best few: their rows now carry the median of three
    assert "confirmed #" in page.locator("#activity").inner_text()
    assert page.locator("#candidates td[title^='median of 3 measurements']").count() >= 3
    later = page.evaluate("""(after) => Array.from(document.querySelectorAll('#candidates tbody tr'))
        .map(tr => ({gen: +tr.children[1].textContent, params: tr.children[3].textContent}))""", applied_after)
    pinned_gen = min(r["gen"] for r in later if "VEC=16" in r["params"])
    after = [r for r in later if r["gen"] > pinned_gen]
    assert after and all("VEC=16" in r["params"] for r in after), later
    # the engineer's own space held throughout: THREADS only 1 or 2, VEC only 8 or 16
    assert all(re.search(r"THREADS=[12]\b", r["params"]) and re.search(r"VEC=(8|16)\b", r["params"])
               for r in later), later
    shot(page, "run-live")
    # a reload replays the same run from the stored events: same rows, no duplicates
    rows = page.locator("#candidates tbody tr").count()
    page.reload()
    page.wait_for_function(f"document.querySelectorAll('#candidates tbody tr').length === {rows}")
    page.wait_for_function("window.int21Run.state === 'finished'")
    assert page.evaluate("window.int21Run.duplicates") == 0 and page.evaluate("window.int21Run.outOfOrder") == 0

    # open the best candidate that has a parent: source, diff, reports, timing chart
    best = page.evaluate("""() => {
        const rows = Array.from(document.querySelectorAll('#candidates tbody tr'))
          .filter(tr => tr.dataset.status === 'ok' && tr.children[4].querySelector('a'));
        rows.sort((a, b) => parseFloat(b.children[6].textContent) - parseFloat(a.children[6].textContent));
        return rows.length ? rows[0].id.replace('cand-', '') : null; }""")
    assert best, "no judged candidate with a parent"
    page.click(f"#cand-{best} td a")
    page.wait_for_url(re.compile(rf".*/candidates/{best}/$"))
    main = page.locator("main")
    assert "kernel(" in main.inner_text()                           # the highlighted source
    assert page.locator("table.diff").count() >= 1                  # diff against its parent
    assert page.locator("table.correctness tr").count() > 3         # per shape x distribution
    page.wait_for_selector(".chart .main-svg")                      # timing vs baselines
    shot(page, "candidate")
    if page.locator("text=Propose for promotion").count() == 0:
        pytest.fail(f"candidate #{best} cannot be proposed: {main.inner_text()[:1500]}")
    page.fill("input[name=note]", "fastest in the run; please check")
    page.click("text=Propose for promotion")
    page.wait_for_selector("text=proposal #")

    # the engineer started the run, so a second user approves
    reviewer = login("reviewer")
    reviewer.goto(server["url"] + "/reviews/")
    card = reviewer.locator(".proposal", has_text=f"Candidate #{best}")
    card.locator("input[name=comment]").first.fill("looks right")
    shot(reviewer, "review-queue")
    card.locator("button", has_text="Approve").click()
    # the gate re-checks the kernel on the held-out shapes in a fresh sandbox, then promotes it
    for _ in range(120):
        reviewer.goto(server["url"] + "/library/")
        if reviewer.locator(f"a[href^='/candidates/{best}/']").count():
            break
        reviewer.wait_for_timeout(1000)
    link = reviewer.locator("tr", has=reviewer.locator(f"a[href^='/candidates/{best}/']")).locator(
        "a", has_text=re.compile(r"^v\d+$")).first
    assert link.count(), reviewer.locator("main").inner_text()[:2000]
    shot(reviewer, "library")
    link.click()
    reviewer.wait_for_url(re.compile(r".*/library/\d+/$"))
    assert "33x250" in reviewer.locator("main").inner_text()      # held-out shape re-checked
    with reviewer.expect_download() as dl:
        reviewer.click("text=Download (source + manifest)")
    path = dl.value.path()
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        manifest = json.loads(z.read(next(n for n in names if n.endswith("manifest.json"))))
        source = z.read(next(n for n in names if n.endswith("/kernel.c"))).decode()
    assert manifest["workload"] == "softmax" and manifest["target"] == "cpu"
    assert manifest["candidate"]["id"] == int(best)
    # kernel.c ships with its tuned parameters baked in ahead of the approved source
    approved = source.split("\n\n", 1)[1]
    assert manifest["source_sha256"] == hashlib.sha256(approved.encode()).hexdigest()
    assert [a["reviewer"] for a in manifest["approvals"]] == ["reviewer"]
    assert manifest["held_out_recheck"]["status"] == "ok"
