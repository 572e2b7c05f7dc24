"""The approval gate, the kernel library and the knowledge page."""
import io
import json
import zipfile

import numpy as np
import pytest

from int21web.accounts.roles import RoleError
from int21web.library import services
from int21web.library.models import AuditEntry, KernelVersion, Proposal, Review
from int21web.library.tasks import run_evaluation
from int21web.runs import models as rm
from kernels import library
from tests.web.library_world import (FLOW_GOAL, OVERFITTED, finish_evaluation, make_candidate, people,  # noqa: F401
                                     real_outcome, with_speedup)

pytestmark = pytest.mark.django_db


def actions(proposal=None):
    rows = AuditEntry.objects.order_by("id")
    if proposal is not None:
        rows = rows.filter(proposal=proposal)
    return list(rows.values_list("action", flat=True))


def flow(proposal):
    """The proposal's audit without ``score_moved`` notes: whether a real re-measurement moved
    by more than the tolerance depends on the host's noise (tested on its own below)."""
    return [a for a in actions(proposal) if a != "score_moved"]


@pytest.fixture
def queued(monkeypatch):
    """Records the re-evaluations the gate queues instead of handing them to a broker."""
    sent = []
    monkeypatch.setattr(run_evaluation, "apply_async",
                        lambda args, queue=None, **kw: sent.append({"evaluation": args[0], "queue": queue}))
    return sent


@pytest.fixture
def worker(monkeypatch):
    """A worker of the target queue in this process: a queued re-evaluation runs the task."""
    ran = []

    def run(args, queue=None, **kw):
        ran.append(queue)
        run_evaluation(*args)
    monkeypatch.setattr(run_evaluation, "apply_async", run)
    return ran


@pytest.fixture
def library_dir(settings, tmp_path):
    settings.INT21_LIBRARY_DIR = str(tmp_path / "library")
    return tmp_path / "library"


def login(client, user):
    client.force_login(user)
    return client


# --------------------------------------------------------------------------- proposing

def test_an_engineer_proposes_a_candidate_that_meets_its_goal(people):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"], note="fast on our shapes")
    assert prop.state == "open" and prop.required_approvals == 1 and prop.shape_bucket == "2^8x2^10"
    entry = AuditEntry.objects.get(action="propose")
    assert entry.actor == people["alice"] and entry.after["state"] == "open" and entry.after["status"] == "ok"


def test_a_candidate_slower_than_the_strongest_baseline_cannot_be_proposed(people):
    cand = make_candidate(outcome=with_speedup(real_outcome(), numpy=2.5, torch=0.8), started_by=people["alice"])
    with pytest.raises(ValueError, match=r"0\.80x torch \(the strongest baseline\); it needs more than 1x"):
        services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    assert not Proposal.objects.exists()


def test_the_goals_target_speedup_also_counts_as_meeting_it(people):
    cand = make_candidate(outcome=with_speedup(real_outcome(), torch=0.9),
                          goal={"budget": {"evaluations": 8, "target_speedup": 0.85}}, started_by=people["alice"])
    assert services.promotion_propose(candidate_id=cand.id, user=people["alice"]).state == "open"


def test_a_wrong_candidate_cannot_be_proposed(people):
    outcome = real_outcome()
    outcome.update(status="wrong", reason="Wrong on awkward 67x1013.")
    outcome["result"].update(status="wrong", score=0.0)
    cand = make_candidate(outcome=outcome, started_by=people["alice"])
    with pytest.raises(ValueError, match="is wrong, not ok"):
        services.promotion_propose(candidate_id=cand.id, user=people["alice"])


def test_a_candidate_is_proposed_once_at_a_time(people):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with pytest.raises(ValueError, match="already proposed"):
        services.promotion_propose(candidate_id=cand.id, user=people["dave"])


def test_a_viewer_cannot_propose_or_approve(people, client):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    with pytest.raises(RoleError, match="engineer role"):
        services.promotion_propose(candidate_id=cand.id, user=people["victor"])
    login(client, people["victor"])
    page = client.post(f"/candidates/{cand.id}/propose/")
    assert page.status_code == 403 and b"engineer role" in page.content
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with pytest.raises(RoleError, match="reviewer role"):
        services.review_approve(proposal_id=prop.id, user=people["victor"])
    assert client.post(f"/reviews/{prop.id}/approve/").status_code == 403
    assert client.post(f"/reviews/{prop.id}/request-changes/", {"comment": "no"}).status_code == 403
    assert not Review.objects.exists()
    assert b"Approve</button>" not in client.get("/reviews/").content


def test_an_engineer_without_the_reviewer_role_cannot_approve(people):
    cand = make_candidate(outcome=real_outcome(), started_by=people["dave"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["dave"])
    with pytest.raises(RoleError, match="approving a candidate needs the reviewer role"):
        services.review_approve(proposal_id=prop.id, user=people["alice"])


# --------------------------------------------------------------------------- approving

def test_nobody_approves_a_candidate_from_a_run_they_started(people, client, queued):
    cand = make_candidate(outcome=real_outcome(), started_by=people["dave"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with pytest.raises(RoleError, match=f"you started run #{cand.run_id}"):
        services.review_approve(proposal_id=prop.id, user=people["dave"])
    login(client, people["dave"])
    page = client.post(f"/reviews/{prop.id}/approve/")
    assert page.status_code == 403 and b"someone else must approve" in page.content
    assert b"You started this run" in client.get("/reviews/").content
    assert not Review.objects.exists() and not queued
    services.review_approve(proposal_id=prop.id, user=people["bob"])   # anyone else may
    assert Proposal.objects.get(pk=prop.pk).state == "rechecking"


def test_the_goal_needs_its_number_of_approvals(people, queued, django_capture_on_commit_callbacks):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"], required_approvals=2)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    assert prop.required_approvals == 2
    with django_capture_on_commit_callbacks(execute=True):
        services.review_approve(proposal_id=prop.id, user=people["bob"], comment="looks right")
    prop.refresh_from_db()
    assert prop.state == "open" and not queued
    with pytest.raises(ValueError, match="already approved"):
        services.review_approve(proposal_id=prop.id, user=people["bob"])
    with django_capture_on_commit_callbacks(execute=True):
        services.review_approve(proposal_id=prop.id, user=people["carol"])
    prop.refresh_from_db()
    assert prop.state == "rechecking"
    assert queued == [{"evaluation": prop.recheck_id, "queue": "target.cpu"}]
    assert prop.recheck.outcome == {"purpose": "held_out", "proposal": prop.id, "requested_by": "carol"}
    assert prop.recheck.finished_at is None and prop.recheck.attempt == 2
    approve_rows = AuditEntry.objects.filter(action="approve").order_by("id")
    assert [(a.actor_name, a.before["approvals"], a.after["approvals"], a.after["state"]) for a in approve_rows] == \
        [("bob", 0, 1, "open"), ("carol", 1, 2, "rechecking")]


def test_a_reviewer_requests_changes_with_a_comment(people, client):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with pytest.raises(ValueError, match="needs a comment"):
        services.review_request_changes(proposal_id=prop.id, user=people["bob"], comment="  ")
    login(client, people["bob"])
    page = client.post(f"/reviews/{prop.id}/request-changes/", {"comment": "VEC=16 only: check AVX2 hosts"},
                       follow=True)
    assert b"Changes requested" in page.content
    prop.refresh_from_db()
    assert prop.state == "changes_requested"
    entry = AuditEntry.objects.get(action="request_changes")
    assert entry.actor_name == "bob" and entry.before["state"] == "open" and entry.after["state"] == "changes_requested"
    assert entry.message == "VEC=16 only: check AVX2 hosts"
    with pytest.raises(ValueError, match="changes requested; only an open proposal"):
        services.review_approve(proposal_id=prop.id, user=people["carol"])
    # a new proposal may follow once the author has answered
    assert services.promotion_propose(candidate_id=cand.id, user=people["alice"]).state == "open"


# --------------------------------------------------------------------------- dismissal

def test_an_approval_is_dismissed_when_a_re_evaluation_gives_a_different_result(people):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"], required_approvals=2)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    review = services.review_approve(proposal_id=prop.id, user=people["bob"])
    wrong = real_outcome()
    wrong.update(status="wrong", reason="Wrong on awkward 67x1013 masked seed 4.")
    wrong["result"].update(status="wrong", score=0.0)
    ev = finish_evaluation(cand, wrong)
    services.evaluation_recorded(evaluation_id=ev.id)
    review.refresh_from_db()
    assert review.dismissed_at is not None
    assert review.dismissed_reason == "re-evaluation #2: status ok became wrong"
    entry = AuditEntry.objects.get(action="dismiss_approval")
    assert entry.actor_name == "system" and entry.before["approvals"] == 1 and entry.after["approvals"] == 0
    assert "bob's approval dismissed" in entry.message
    # nobody approves the new result: it no longer meets the goal
    with pytest.raises(ValueError, match="no longer meets the goal"):
        services.review_approve(proposal_id=prop.id, user=people["bob"])
    # a re-evaluation that is ok again may be approved again (bob included)
    services.evaluation_recorded(evaluation_id=finish_evaluation(cand, real_outcome()).id)
    assert services.review_approve(proposal_id=prop.id, user=people["bob"]).status == "ok"


def test_an_approval_is_dismissed_when_the_kernel_no_longer_meets_its_goal(people):
    base = real_outcome()
    cand = make_candidate(outcome=with_speedup(base, numpy=3.0, torch=2.0), started_by=people["alice"],
                          required_approvals=2)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    review = services.review_approve(proposal_id=prop.id, user=people["bob"])
    services.evaluation_recorded(evaluation_id=finish_evaluation(cand, with_speedup(base, numpy=3.1, torch=1.9)).id)
    review.refresh_from_db()
    assert review.dismissed_at is None            # 5 % apart: the same result
    # re-measured much slower but still ahead of the strongest baseline: the approval stands,
    # and the audit says the score moved (the best of a run is usually re-measured lower)
    services.evaluation_recorded(evaluation_id=finish_evaluation(cand, with_speedup(base, numpy=3.0, torch=1.2)).id)
    review.refresh_from_db()
    assert review.dismissed_at is None
    moved = AuditEntry.objects.get(action="score_moved")
    assert "score 2 became 1.2" in moved.message and "bob's approval stands" in moved.message
    # slower than the strongest baseline: no longer the result that was approved
    services.evaluation_recorded(evaluation_id=finish_evaluation(cand, with_speedup(base, numpy=2.0, torch=0.8)).id)
    review.refresh_from_db()
    assert review.dismissed_at is not None and "no longer meets its goal" in review.dismissed_reason


def test_a_re_evaluation_runs_as_a_task_on_the_target_queue(people, worker, django_capture_on_commit_callbacks):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"], required_approvals=2)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    review = services.review_approve(proposal_id=prop.id, user=people["bob"])
    with pytest.raises(RoleError):
        services.candidate_reevaluate(candidate_id=cand.id, user=people["victor"])
    with django_capture_on_commit_callbacks(execute=True):
        ev = services.candidate_reevaluate(candidate_id=cand.id, user=people["alice"])
        assert not worker                          # nothing runs before the commit
    assert worker == ["target.cpu"]
    ev.refresh_from_db()
    assert ev.attempt == 2 and ev.status == "ok" and ev.finished_at is not None
    assert ev.outcome["purpose"] == "reevaluate" and ev.outcome["requested_by"] == "alice"
    review.refresh_from_db()
    assert review.dismissed_at is None             # same kernel, same host: the same result
    assert actions() == ["propose", "approve", "reevaluate"]
    run_evaluation(ev.id)                          # a duplicate delivery is a no-op
    assert rm.Evaluation.objects.filter(candidate=cand).count() == 2


# --------------------------------------------------------------------------- promotion

def test_an_approved_candidate_is_rechecked_on_held_out_shapes_promoted_and_loadable(
        people, worker, library_dir, client, django_capture_on_commit_callbacks):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"], goal=FLOW_GOAL)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with django_capture_on_commit_callbacks(execute=True):
        services.review_approve(proposal_id=prop.id, user=people["bob"], comment="ship it")
    assert worker == ["target.cpu"]
    prop.refresh_from_db()
    assert prop.state == "promoted", prop.reason
    cases = next(s for s in prop.recheck.outcome["stages"] if s["name"] == "correctness")["details"]["cases"]
    # the goal's held-out shape, and the workload's own (always part of the gate's re-check)
    assert {c["shape"] for c in cases if c["kind"] == "held_out"} == {"97x1000", "4096x2048", "333x3001"}
    kv = KernelVersion.objects.get()
    assert (kv.workload, kv.target, kv.version, kv.champion, kv.shape_bucket) == ("softmax", "cpu", 1, True, "2^8x2^10")
    assert flow(prop) == ["propose", "approve", "recheck_passed", "promote"]
    assert AuditEntry.objects.filter(action="reevaluate", candidate=cand).exists()
    m = kv.manifest
    assert m["source_sha256"] == library.sha256(cand.source) and m["params"] == cand.params
    assert m["held_out_recheck"]["status"] == "ok" and m["held_out_recheck"]["shapes"] == ["97x1000", "4096x2048",
                                                                                          "333x3001"]
    assert [a["reviewer"] for a in m["approvals"]] == ["bob"] and m["approvals"][0]["comment"] == "ship it"
    assert m["target_fingerprint"]["target"] == "cpu" and len(m["evaluations"]) == 2

    # the download: the kernel as it builds (tuned params baked in), its header, the build
    # command and a test program, and the manifest the page shows; built and run as shipped
    login(client, people["victor"])
    resp = client.get(f"/library/{kv.id}/download/")
    assert resp["Content-Type"] == "application/zip"
    assert resp["Content-Disposition"] == 'attachment; filename="softmax-cpu-v1.zip"'
    z = zipfile.ZipFile(io.BytesIO(resp.content))
    names = set(z.namelist())
    assert {"softmax-cpu-v1/kernel.c", "softmax-cpu-v1/kernel.h", "softmax-cpu-v1/build.sh", "softmax-cpu-v1/test.c",
            "softmax-cpu-v1/manifest.json"} <= names
    shipped = z.read("softmax-cpu-v1/kernel.c").decode()
    assert shipped.endswith(cand.source)
    assert all(f"#define {k} {v}" in shipped for k, v in cand.params.items() if isinstance(v, int))
    assert json.loads(z.read("softmax-cpu-v1/manifest.json")) == json.loads(json.dumps(m))
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as unpacked:
        z.extractall(unpacked)
        built = subprocess.run(["sh", f"{unpacked}/softmax-cpu-v1/build.sh"], capture_output=True, text=True,
                               timeout=120)
        assert built.returncode == 0 and built.stdout.strip().endswith("ok"), built.stdout + built.stderr
    page = client.get("/library/").content.decode()
    assert "v1</a>" in page and "champion" in page and "2^8x2^10" in page
    assert m["source_sha256"] in client.get(f"/library/{kv.id}/").content.decode()

    # the library folder, and the Python API that runs the champion through the sandbox
    assert (library_dir / "softmax/cpu/v0001/kernel.c").read_text() == cand.source
    assert json.loads((library_dir / "softmax/cpu/champions.json").read_text()) == {"2^8x2^10": "v0001"}
    softmax = library.load("softmax", "cpu", root=library_dir)
    x = np.random.default_rng(7).standard_normal((5, 77)).astype(np.float32)
    x[1, :10] = -np.inf
    y = softmax(x)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), atol=1e-6, rtol=1e-5)
    assert softmax.manifest["version"] == 1


def test_a_candidate_that_fails_its_held_out_shapes_is_not_promoted(people, worker, library_dir,
                                                                    django_capture_on_commit_callbacks):
    cand = make_candidate(outcome=real_outcome(), source=OVERFITTED, params={}, started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with django_capture_on_commit_callbacks(execute=True):
        services.review_approve(proposal_id=prop.id, user=people["bob"])
    prop.refresh_from_db()
    assert prop.state == "recheck_failed"
    assert prop.recheck.status == "wrong" and "97x1000" in prop.reason
    assert not KernelVersion.objects.exists() and not library_dir.exists()
    assert actions(prop)[-1] == "recheck_failed"
    with pytest.raises(ValueError, match="recheck failed; only an approved proposal"):
        services.kernel_promote(proposal_id=prop.id)


def test_a_better_kernel_takes_the_champion_and_the_older_stays_a_version(people, library_dir, monkeypatch,
                                                                       django_capture_on_commit_callbacks):
    monkeypatch.setattr(run_evaluation, "apply_async", lambda *a, **k: None)
    kernels = []
    for numpy_speedup in (2.0, 3.0, 2.5):
        outcome = with_speedup(real_outcome(), numpy=numpy_speedup, torch=9.0)
        cand = make_candidate(outcome=outcome, started_by=people["alice"], params={**{"THREADS": 1},
                              "CHUNK": len(kernels) + 1, "ALGO": "online", "VEC": 16, "FAST_EXP": 1})
        prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
        with django_capture_on_commit_callbacks(execute=True):
            services.review_approve(proposal_id=prop.id, user=people["bob"])
            prop.refresh_from_db()
            recheck = prop.recheck
            recheck.status, recheck.outcome = "ok", {**outcome, "purpose": "held_out", "held_out_shapes": ["97x1000"]}
            recheck.finished_at = recheck.started_at
            recheck.save()
            services.evaluation_recorded(evaluation_id=recheck.id)
        kernels.append(KernelVersion.objects.get(proposal=prop))
    champions = KernelVersion.objects.filter(champion=True)
    assert [k.version for k in champions] == [2]
    assert [k.version for k in KernelVersion.objects.order_by("version")] == [1, 2, 3]
    assert json.loads((library_dir / "softmax/cpu/champions.json").read_text()) == {"2^8x2^10": "v0002"}
    with django_capture_on_commit_callbacks(execute=True):
        services.kernel_crown(kernel_id=kernels[2].id, user=people["bob"])
    assert list(KernelVersion.objects.filter(champion=True).values_list("version", flat=True)) == [3]
    assert json.loads((library_dir / "softmax/cpu/champions.json").read_text()) == {"2^8x2^10": "v0003"}
    assert AuditEntry.objects.filter(action="crown").get().after == {"champion": 3}


def test_a_promotion_needs_a_finished_passing_recheck(people, queued):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    with pytest.raises(ValueError, match="only an approved proposal"):
        services.kernel_promote(proposal_id=prop.id)
    services.review_approve(proposal_id=prop.id, user=people["bob"])
    with pytest.raises(ValueError, match="still being re-checked"):
        services.kernel_promote(proposal_id=prop.id)
    with pytest.raises(RoleError):
        services.kernel_promote(proposal_id=prop.id, user=people["alice"])


# --------------------------------------------------------------------------- the Python API

def test_load_says_when_nothing_is_promoted(tmp_path):
    with pytest.raises(library.LibraryError, match="no promoted softmax kernel for cpu"):
        library.load("softmax", "cpu", root=tmp_path)


def test_library_buckets_are_the_swarms_buckets():
    from kernels import workloads
    from swarm.knowledge import shape_bucket
    for wl in workloads.all_workloads():
        for shape in wl.shapes.typical + wl.shapes.awkward + wl.shapes.minimal:
            assert library.shape_bucket(shape) == shape_bucket(shape)


def test_dims_come_from_the_arrays():
    a, b = np.zeros((3, 5), np.float32), np.zeros((5, 7), np.float32)
    assert library.infer_dims("matmul", {"a": a, "b": b}) == {"m": 3, "k": 5, "n": 7}
    with pytest.raises(ValueError, match="axis 0 is 4 but k is 5"):
        library.infer_dims("matmul", {"a": a, "b": np.zeros((4, 7), np.float32)})


def test_a_tampered_library_folder_is_refused(tmp_path):
    manifest = {"workload": "softmax", "target": "cpu", "version": 1, "params": {},
                "source_sha256": library.sha256("void kernel() {}")}
    library.write_version(manifest, "void kernel() { /* changed */ }", tmp_path)
    library.set_champion("softmax", "cpu", "2^8x2^10", 1, tmp_path)
    with pytest.raises(library.LibraryError, match="does not match its manifest"):
        library.load("softmax", "cpu", root=tmp_path)


# --------------------------------------------------------------------------- knowledge

def test_the_knowledge_page_shows_lessons_with_evidence_and_agent_payoff(people, client):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    run = cand.run
    run.agent_stats = {"tuner": {"total_evaluations": 10, "total_improvements": 4},
                       "explorer": {"total_evaluations": 8, "total_improvements": 1}}
    run.save()
    rm.Generation.objects.create(run=run, index=0, allocation={"tuner": 3, "explorer": 1})
    rm.Lesson.objects.create(kind="best_config", workload="softmax", target="cpu", shape_bucket="2^8x2^10",
                             text="VEC=16 with FAST_EXP wins on 256x1024", evidence=[cand.id, 999999], run=run)
    login(client, people["victor"])
    page = client.get("/knowledge/").content.decode()
    assert "VEC=16 with FAST_EXP wins on 256x1024" in page
    assert f'href="/candidates/{cand.id}/"' in page and "/candidates/999999/" not in page
    assert 'data-figure="payoff-figure"' in page and "/static/vendor/plotly/plotly.min.js" in page
    assert "0.40" in page   # tuner: 4 improvements in 10 evaluations
    assert client.get("/knowledge/?workload=matmul").context["groups"] == []


def test_a_candidate_still_in_its_run_cannot_be_re_evaluated(people, queued):
    cand = make_candidate(outcome=None, started_by=people["alice"])
    with pytest.raises(ValueError, match="has not been judged yet"):
        services.candidate_reevaluate(candidate_id=cand.id, user=people["alice"])
    assert not queued and not rm.Evaluation.objects.exists()


def test_without_a_bucket_each_call_uses_the_nearest_champion(tmp_path):
    for version, bucket in ((1, "2^8x2^10"), (2, "2^12x2^12")):
        manifest = {"workload": "softmax", "target": "cpu", "version": version, "params": {},
                    "source_sha256": library.sha256(f"// v{version}"), "shape_bucket": bucket}
        library.write_version(manifest, f"// v{version}", tmp_path)
        library.set_champion("softmax", "cpu", bucket, version, tmp_path)
    both = library.load("softmax", "cpu", root=tmp_path)
    assert both.choose({"rows": 300, "cols": 900})["version"] == 1
    assert both.choose({"rows": 4096, "cols": 2048})["version"] == 2
    assert library.load("softmax", "cpu", "2^12x2^12", root=tmp_path).manifest["version"] == 2
    with pytest.raises(library.LibraryError, match="there are: 2\\^12x2\\^12, 2\\^8x2\\^10"):
        library.load("softmax", "cpu", "2^4x2^4", root=tmp_path)


def test_the_library_command_lists_and_exports(people, tmp_path, monkeypatch, django_capture_on_commit_callbacks):
    from django.core.management import call_command
    monkeypatch.setattr(run_evaluation, "apply_async", lambda *a, **k: None)
    outcome = real_outcome()
    cand = make_candidate(outcome=outcome, started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    services.review_approve(proposal_id=prop.id, user=people["bob"])
    prop.refresh_from_db()
    prop.recheck.status, prop.recheck.outcome = "ok", {**outcome, "purpose": "held_out"}
    prop.recheck.finished_at = prop.recheck.started_at
    prop.recheck.save()
    services.evaluation_recorded(evaluation_id=prop.recheck.id)
    out = io.StringIO()
    call_command("library", "list", "--json", stdout=out)
    assert [(r["workload"], r["version"], r["champion"]) for r in json.loads(out.getvalue())] == [("softmax", 1, True)]
    call_command("library", "export", "--to", str(tmp_path), stdout=io.StringIO())
    assert library.load("softmax", "cpu", root=tmp_path).manifest["source_sha256"] == library.sha256(cand.source)


def test_a_recheck_that_cannot_run_reopens_the_proposal_to_be_rechecked_again(people, worker, monkeypatch, client,
                                                                              django_capture_on_commit_callbacks):
    from kernels.harness import evaluator
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"], goal=FLOW_GOAL)
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])

    def no_compiler(self, *a, **k):
        raise RuntimeError("target cpu is not available here: no C compiler")
    monkeypatch.setattr(evaluator.Evaluator, "evaluate", no_compiler)
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        services.review_approve(proposal_id=prop.id, user=people["bob"])
    prop.refresh_from_db()
    assert prop.state == "open" and "could not run" in prop.reason
    assert prop.recheck.lost_at is not None and prop.recheck.finished_at is None
    assert actions(prop)[-1] == "recheck_error"
    monkeypatch.undo()
    monkeypatch.setattr(run_evaluation, "apply_async", lambda args, queue=None, **kw: run_evaluation(*args))
    with pytest.raises(RoleError):
        services.promotion_recheck(proposal_id=prop.id, user=people["victor"])
    client.force_login(people["alice"])
    assert b"Run the held-out re-check again" in client.get("/reviews/").content
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/reviews/{prop.id}/recheck/", {"next": "https://evil.example/"})
    prop.refresh_from_db()
    assert prop.state == "promoted" and flow(prop)[-3:] == ["recheck", "recheck_passed", "promote"]


def test_a_form_only_goes_back_to_a_page_of_this_site(people, client, queued):
    cand = make_candidate(outcome=real_outcome(), started_by=people["alice"])
    prop = services.promotion_propose(candidate_id=cand.id, user=people["alice"])
    client.force_login(people["bob"])
    resp = client.post(f"/reviews/{prop.id}/request-changes/", {"comment": "x", "next": "https://evil.example/"})
    assert resp["Location"] == "/reviews/"
