"""The candidate page: source, diff vs parent, correctness, timing, resources, lineage, comments."""
import json
import re

import pytest

from int21web.accounts.roles import RoleError
from int21web.library import charts, diffs, services
from int21web.library.models import Comment
from tests.web.library_world import PARAMS, SEED, make_candidate, people, real_outcome  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def family(people):
    """A seed and a child that the mutator made from it (one param and one line changed)."""
    parent = make_candidate(outcome=real_outcome(), started_by=people["alice"], agent="seeded",
                            rationale="the online template's defaults")
    child_source = "/* mutated: unrolled by two */\n" + SEED
    child = make_candidate(outcome=real_outcome(), run=parent.run, parent=parent, source=child_source,
                           params={**PARAMS, "CHUNK": 4}, agent="mutator", rationale="CHUNK 1 -> 4 around the elite")
    return parent, child


def page_of(client, user, cand):
    client.force_login(user)
    resp = client.get(f"/candidates/{cand.id}/")
    assert resp.status_code == 200
    return resp, resp.content.decode()


def test_the_page_shows_highlighted_source_agent_and_rationale(people, client, family):
    _, child = family
    _, html = page_of(client, people["victor"], child)
    assert 'class="hl"' in html and '<span class="kt">void</span>' in html   # Pygments' C lexer, server-side
    assert "mutator" in html and "CHUNK 1 -&gt; 4 around the elite" in html
    assert "<code>CHUNK=4</code>" in html
    assert "/static/css/pygments.css" in html


def test_the_diff_against_the_parent_is_side_by_side_and_unified(people, client, family):
    parent, child = family
    resp, html = page_of(client, people["victor"], child)
    side, unified = resp.context["side_by_side"], resp.context["unified"]
    assert {"kind": "change", "left_no": 2, "left": "#define CHUNK 1", "right_no": 2, "right": "#define CHUNK 4"} in side
    assert any(r["kind"] == "add" and r["right"] == "/* mutated: unrolled by two */" for r in side)
    assert [r["text"] for r in unified if r["kind"] == "del"] == ["#define CHUNK 1"]
    assert "/* mutated: unrolled by two */" in [r["text"] for r in unified if r["kind"] == "add"]
    assert 'table class="diff side-by-side"' in html and 'table class="diff unified"' in html
    assert f"#{parent.id} (parent)" in html


def test_parent_and_child_link_to_each_other(people, client, family):
    parent, child = family
    _, html = page_of(client, people["victor"], child)
    assert f'href="/candidates/{parent.id}/"' in html
    _, html = page_of(client, people["victor"], parent)
    assert f'href="/candidates/{child.id}/"' in html and "A seed: no parent to compare with." in html


def test_the_correctness_report_is_per_shape_and_distribution(people, client, family):
    _, child = family
    resp, html = page_of(client, people["victor"], child)
    rows = resp.context["correctness"]
    keys = {(r["shape"], r["distribution"]) for r in rows}
    assert ("67x1013", "masked") in keys and ("1x1", "tiny") in keys
    assert len(keys) == len(rows)                       # seeds folded into one row each
    assert all(r["passed"] and r["max_abs_err"] is not None and r["max_rel_err"] is not None for r in rows)
    assert html.count('<span class="pass">pass</span>') == len(rows)


def test_a_failing_case_is_shown_with_its_reason(people, client):
    outcome = real_outcome()
    stage = next(s for s in outcome["stages"] if s["name"] == "correctness")
    bad = stage["details"]["cases"][3]
    bad["passed"] = False
    bad["outputs"]["y"].update(passed=False, max_abs_err=0.5, why="3 of 67891 values outside atol 1e-05")
    outcome.update(status="wrong", reason="Wrong on awkward 67x1013.")
    outcome["result"].update(status="wrong", score=0.0)
    cand = make_candidate(outcome=outcome, started_by=people["alice"])
    resp, html = page_of(client, people["victor"], cand)
    failing = [r for r in resp.context["correctness"] if not r["passed"]]
    assert [(r["shape"], r["distribution"], r["max_abs_err"]) for r in failing] == \
        [(bad["shape"], bad["distribution"], 0.5)]
    assert "3 of 67891 values outside atol 1e-05" in html and '<span class="fail">fail</span>' in html
    assert "Propose for promotion" not in html


def test_the_timing_distribution_is_a_plotly_box_plot_against_the_baselines(people, client, family):
    _, child = family
    resp, html = page_of(client, people["victor"], child)
    fig = json.loads(re.search(r'<script type="application/json" id="timing-figure">(.*?)</script>', html, re.S)[1])
    names = [t["name"] for t in fig["data"]]
    assert names[0] == "candidate" and names[1].startswith("numpy (")
    assert all(t["type"] == "box" and t["boxpoints"] == "all" and len(t["y"]) >= 7 for t in fig["data"])
    assert "256x1024" in fig["layout"]["title"]["text"]
    assert '<script src="/static/vendor/plotly/plotly.min.js">' in html and "cdn" not in html.lower()


def test_the_resource_report_shows_the_binary_and_the_sandbox(people, client, family):
    _, child = family
    _, html = page_of(client, people["victor"], child)
    assert "imported symbols" in html and "expf" in html
    assert "machine code" in html and "CPU seconds per wall second" in html and "achieved GB/s" in html
    assert "GB/s of a streaming copy timed beside it" in html and "% of that copy" in html
    assert "AMD" in html or "Intel" in html or "target" in html


def test_engineers_comment_and_the_comment_shows_author_and_time(people, client, family):
    _, child = family
    client.force_login(people["alice"])
    resp = client.post(f"/candidates/{child.id}/comments/", {"body": "CHUNK=4 halves the barrier cost"},
                       follow=True)
    html = resp.content.decode()
    assert "CHUNK=4 halves the barrier cost" in html and "<strong>alice</strong>" in html
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT', html)
    services.comment_post(candidate_id=child.id, user=people["bob"], body="agreed")   # reviewers too
    assert list(Comment.objects.values_list("author_name", flat=True)) == ["alice", "bob"]


def test_a_viewer_cannot_comment(people, client, family):
    _, child = family
    with pytest.raises(RoleError, match="engineer or reviewer"):
        services.comment_post(candidate_id=child.id, user=people["victor"], body="hi")
    client.force_login(people["victor"])
    assert client.post(f"/candidates/{child.id}/comments/", {"body": "hi"}).status_code == 403
    assert "<textarea" not in page_of(client, people["victor"], child)[1]
    assert not Comment.objects.exists()


def test_an_empty_comment_is_refused_with_a_message(people, client, family):
    _, child = family
    client.force_login(people["alice"])
    html = client.post(f"/candidates/{child.id}/comments/", {"body": "   "}, follow=True).content.decode()
    assert "a comment needs some text" in html and not Comment.objects.exists()


def test_anonymous_visitors_are_sent_to_log_in(client, family):
    _, child = family
    assert client.get(f"/candidates/{child.id}/")["Location"].startswith("/accounts/login/")
    assert client.post(f"/candidates/{child.id}/comments/", {"body": "x"})["Location"].startswith("/accounts/login/")


def test_an_unknown_candidate_is_a_404(people, client):
    client.force_login(people["victor"])
    assert client.get("/candidates/987654/").status_code == 404


def test_an_engineer_can_propose_from_the_page_when_it_meets_its_goal(people, client, family):
    _, child = family
    _, html = page_of(client, people["alice"], child)
    assert "Propose for promotion" in html and "meets its goal" in html
    assert "Propose for promotion" not in page_of(client, people["victor"], child)[1]
    client.force_login(people["alice"])
    resp = client.post(f"/candidates/{child.id}/propose/", {"note": "ready"}, follow=True)
    assert "in the review queue" in resp.content.decode()
    assert child.proposals.get().note == "ready"


def test_a_cuda_candidate_is_highlighted_as_cuda(people, client):
    source = 'extern "C" __global__ void kernel(const float *x, float *y, int64_t rows, int64_t cols) {}'
    cand = make_candidate(outcome=None, started_by=people["alice"], source=source, params={"BLOCK": 256},
                          goal={"target": "cuda"})
    resp, html = page_of(client, people["victor"], cand)
    assert '<span class="kd">__global__</span>' in html or "__global__" in html
    assert "Not timed." in html and resp.context["target"] == "cuda"


# --------------------------------------------------------------------------- pure parts

def test_side_by_side_pairs_changes_and_folds_unchanged_stretches():
    old = [f"line {i}" for i in range(20)]
    new = old[:5] + ["line 5 changed"] + old[6:15] + old[16:]
    rows = diffs.side_by_side(old, new, context=2)
    assert [r["kind"] for r in rows].count("hunk") == 2
    assert {"kind": "change", "left_no": 6, "left": "line 5", "right_no": 6, "right": "line 5 changed"} in rows
    assert {"kind": "del", "left_no": 16, "left": "line 15", "right_no": "", "right": ""} in rows
    assert not any(r["left"] == "line 10" for r in rows)


def test_unified_rows_number_old_and_new_lines():
    text = diffs.unified_text(["a", "b", "c"], ["a", "B", "c", "d"], "#1", "#2")
    rows = diffs.unified_rows(text)
    assert [r["kind"] for r in rows] == ["file", "file", "hunk", "ctx", "del", "add", "ctx", "add"]
    assert [(r["old"], r["new"]) for r in rows if r["kind"] != "file" and r["kind"] != "hunk"] == \
        [(1, 1), (2, ""), ("", 2), (3, 3), ("", 4)]


def test_timing_figure_without_samples_draws_boxes_from_quartiles():
    fig = charts.timing_figure({"candidate": {"median_ms": 1.0, "q1_ms": 0.9, "q3_ms": 1.1, "min_ms": 0.8, "n": 20},
                                "torch": {"median_ms": 2.0, "n": 20}}, {"torch": 2.0})
    cand, torch = fig["data"]
    assert cand["median"] == [1.0] and cand["q1"] == [0.9] and torch["name"] == "torch (2.00x)"
    json.dumps(fig)   # plain JSON, ready for the page


def test_agent_payoff_figure_groups_by_workload_and_target():
    fig = charts.agent_payoff_figure([
        {"group": "softmax/cpu", "agent": "tuner", "evaluations": 10, "improvements": 4},
        {"group": "matmul/cpu", "agent": "explorer", "evaluations": 5, "improvements": 0}])
    assert [t["name"] for t in fig["data"]] == ["matmul/cpu", "softmax/cpu"]
    softmax = fig["data"][1]
    assert softmax["x"] == ["explorer", "tuner"] and softmax["y"] == [0.0, 0.4]


def test_a_confirmed_candidate_shows_its_measurements_and_their_median(people, client, family):
    from int21web.runs.store import DjangoStore
    _, child = family
    _, html = page_of(client, people["victor"], child)
    assert "Confirmed" not in html                          # measured once: nothing claimed
    result = DjangoStore().record_confirmation(child.id, [2.5, 1.75, 1.5])
    child.refresh_from_db()
    assert result.score == child.score == 1.75 and child.result["measurements"] == [2.5, 1.75, 1.5]
    _, html = page_of(client, people["victor"], child)
    assert "the median of 3 measurements (2.50×, 1.75×, 1.50×)" in html and "<strong>1.75×</strong>" in html
