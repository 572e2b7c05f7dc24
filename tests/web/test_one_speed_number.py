"""One speed number: a confirmed candidate's score (the median of its measurements) is what
"meets its goal", the review queue, the run header and the candidate page use, with the
spread beside it; a candidate measured once says so."""
import pytest
from django.utils import timezone

from int21web.library import services as lib
from int21web.library.selectors import current_result, goal_check
from int21web.runs import models as m
from int21web.runs.store import DjangoStore
from swarm.types import Result

pytestmark = pytest.mark.django_db

SPEC = {"workload": "matmul", "target": "cpu", "shapes": ["128x128x128"], "budget": {"evaluations": 8}}


def candidate(run, key, first):
    c = m.Candidate.objects.create(run=run, generation=0, key=key * 32, params={"MR": 4}, agent="tuner", rationale="r",
                                   source="void kernel(){}", state="evaluated", status="ok", score=first,
                                   result=Result(status="ok", reason="", score=first,
                                                 speedup={"numpy": first, "naive": 9.0}).to_json())
    m.Evaluation.objects.create(candidate=c, attempt=1, status="ok", finished_at=timezone.now(),
                                outcome={"result": c.result})
    return c


@pytest.fixture
def world(users):
    goal = m.Goal.objects.create(name="mm", spec=SPEC)
    run = m.Run.objects.create(goal=goal, spec=SPEC, state="finished", started_by=users["engineer"])
    lucky = candidate(run, "a", 1.02)
    steady = candidate(run, "b", 1.30)
    for c, scores in ((lucky, [1.02, 0.82, 0.60]), (steady, [1.30, 1.25, 1.40])):
        for rnd, s in enumerate(scores[1:], 1):
            m.Remeasurement.objects.create(candidate=c, round=rnd, status="ok", score=s, finished_at=timezone.now())
        DjangoStore().record_confirmation(c.id, scores, [{"numpy": s, "naive": 9.0} for s in scores])
    single = candidate(run, "c", 1.10)
    m.Run.objects.filter(pk=run.id).update(best=steady)
    return run, lucky, steady, single


def test_a_confirmed_candidate_meets_its_goal_by_its_median_not_its_first_measurement(world, users):
    run, lucky, steady, single = [x.__class__.objects.get(pk=x.pk) for x in world]
    assert current_result(lucky)["score"] == 0.82 and current_result(lucky)["speedup"]["numpy"] == 0.82
    meets, why = goal_check(lucky)
    assert not meets and "0.82x numpy" in why and "median of 3 measurements (0.60–1.02x)" in why
    with pytest.raises(ValueError, match="0.82x numpy"):
        lib.promotion_propose(candidate_id=lucky.id, user=users["engineer"])
    assert goal_check(steady) == (True, "1.30x numpy (the strongest baseline, the median of 3 measurements (1.25–1.40x))")
    assert goal_check(single)[0]


def test_the_review_queue_and_the_pages_show_the_median_with_its_spread(world, as_role):
    run, lucky, steady, single = world
    client = as_role("viewer")
    queue = client.get("/reviews/").content.decode()
    ready = queue.split("Meets its goal, not proposed")[1].split("<h2>")[0]
    assert f"#{lucky.id}<" not in ready                  # 1.02 first, 0.82 confirmed: not ready
    assert "1.30× <span class=\"muted spread\">(1.25–1.40, median of 3)</span>" in ready
    assert "1.10× <span class=\"muted spread\">(one measurement)</span>" in ready
    header = client.get(f"/runs/{run.id}/").content.decode()
    assert 'id="run-best">1.30×</strong>' in header and "(1.25–1.40, median of 3)" in header
    page = client.get(f"/candidates/{lucky.id}/").content.decode()
    assert "0.82× <span class=\"muted spread\">(0.60–1.02, median of 3)</span>" in page
    assert page.index('id="correctness"') < page.index('id="source"')     # the verdict first, the source below


def test_confirmation_takes_each_baselines_median():
    r = Result(status="ok", reason="", score=1.0, speedup={"numpy": 1.0, "torch": 2.0})
    c = r.confirmed([1.0, 0.5, 0.8], [{"numpy": 1.0, "torch": 2.0}, {"numpy": 0.5, "torch": 1.0}, {}])
    assert c.score == 0.8 and c.speedup == {"numpy": 0.5, "torch": 1.0}


def test_the_run_list_dashboard_and_goal_page_show_the_best_with_its_spread(world, as_role, users):
    run, lucky, steady, single = world
    client = as_role("viewer")
    spread = "1.30× <span class=\"muted spread\">(1.25–1.40, median of 3)</span>"
    for url in ("/runs/", "/", f"/goals/{run.goal_id}/"):
        page = client.get(url).content.decode()
        assert spread in page, url
    # a run whose best was measured once says so
    other = m.Run.objects.create(goal=run.goal, spec=SPEC, state="finished", started_by=users["engineer"])
    once = candidate(other, "d", 1.07)
    m.Run.objects.filter(pk=other.id).update(best=once)
    assert "1.07× <span class=\"muted spread\">(one measurement)</span>" in client.get("/runs/").content.decode()


def test_the_library_shows_the_kernels_confirmed_speed_beside_its_recheck(world, as_role, users):
    from int21web.library.models import KernelVersion
    run, lucky, steady, single = world
    kv = KernelVersion.objects.create(workload="matmul", target="cpu", shape_bucket="small", version=1, champion=True,
                                      candidate=steady, source=steady.source, params=steady.params, score=1.33,
                                      manifest={"metric": "speedup", "entry_point": "kernel"},
                                      promoted_by=users["reviewer"])
    client = as_role("viewer")
    listing = client.get("/library/").content.decode()
    assert "1.30× <span class=\"muted spread\">(1.25–1.40, median of 3)</span>" in listing
    page = client.get(f"/library/{kv.id}/").content.decode()
    score = page.split('id="kernel-score">')[1].split("</dd>")[0]
    assert "1.30× <span class=\"muted spread\">(1.25–1.40, median of 3)</span>" in score
    assert score.index("median of 3") < score.index("confirmed in its run")
    assert "1.330 (speedup) <span class=\"muted\">at the held-out re-check (one measurement)</span>" in score
