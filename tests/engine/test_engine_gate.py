"""An engine at the approval gate as one unit: proposed with every phase's champion, approved
by the goals' reviewers (the kernel gate's rules, each phase), re-checked phase by phase,
promoted as one engine version into the library, loadable in-process, and downloadable as a
zip whose C example builds with the shipped command and passes. The held-out re-checks are
recorded as a worker would store them (the real re-check is the kernel gate's own, tested in
tests/web/test_library.py)."""
import io
import json
import subprocess
import tempfile
import zipfile

import numpy as np
import pytest
from django.utils import timezone

from int21web.accounts.roles import RoleError
from int21web.library import engines, services
from int21web.library.models import AuditEntry, EngineVersion, Proposal
from int21web.library.tasks import run_evaluation
from int21web.ops import models as om
from kernels import library
from tests.web.library_world import make_candidate, people  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def ok_outcome(speedup=3.0, status="ok", reason=""):
    return {"status": status, "reason": reason, "stages": [], "speedup": {"torch": speedup},
            "result": {"status": status, "score": speedup, "speedup": {"torch": speedup}}}


@pytest.fixture
def queued(monkeypatch):
    sent = []
    monkeypatch.setattr(run_evaluation, "apply_async", lambda args, queue=None, **kw: sent.append(args[0]))
    return sent


@pytest.fixture
def library_dir(settings, tmp_path):
    settings.INT21_LIBRARY_DIR = str(tmp_path / "library")
    return tmp_path / "library"


@pytest.fixture
def mini(mini_release, people):
    """The mini engine's row, with a searched champion per phase (run by alice; two approvals)."""
    from kernels.engine import store
    row = om.Engine.objects.create(name="mini", record=store.load("mini"), created_by=people["alice"])
    results = {}
    for phase, info in row.record["phases"].items():
        cand = make_candidate(outcome=ok_outcome(), started_by=people["alice"], required_approvals=2,
                              source=mini_release.sources[phase],
                              params=mini_release.manifest["phases"][phase]["params"],
                              goal={"workload": info["workload"], "shapes": [], "held_out": [],
                                    "eval_settings": {}})
        results[phase] = {"phase": phase, "correct": True, "candidate_id": cand.id, "speedup": {"torch": 3.0}}
    row.results = results
    row.save()
    return row


def finish_rechecks(ep, outcomes: dict):
    """Each phase's queued held-out re-check finished with ``outcomes[phase]``, as the task stores it."""
    for prop in Proposal.objects.filter(engine_proposal=ep).order_by("phase"):
        if prop.phase not in outcomes:
            continue
        out = outcomes[prop.phase]
        ev = prop.recheck
        ev.status, ev.finished_at = out["status"], timezone.now()
        ev.outcome = {**ev.outcome, **out, "held_out_shapes": []}
        ev.save()
        services.evaluation_recorded(evaluation_id=ev.id)


def test_an_engine_is_approved_as_one_unit_promoted_loaded_and_shipped(people, mini, queued, library_dir, client,
                                                                       django_capture_on_commit_callbacks):
    ep = engines.engine_propose(engine_name="mini", user=people["alice"], note="both phases 3x torch")
    assert ep.required_approvals == 2 and sorted(p.phase for p in ep.phases.all()) == ["decode", "prefill"]
    with pytest.raises(RoleError):                       # an engineer without the reviewer role
        engines.engine_approve(proposal_id=ep.id, user=people["alice"])
    with pytest.raises(ValueError, match="one unit"):     # a phase is not approved on its own
        services.review_approve(proposal_id=ep.phases.first().id, user=people["bob"])
    engines.engine_approve(proposal_id=ep.id, user=people["bob"], comment="ship it")
    ep.refresh_from_db()
    assert ep.state == "open" and engines.engine_approvals(ep) == ["bob"] and queued == []
    with pytest.raises(ValueError, match="already approved"):
        engines.engine_approve(proposal_id=ep.id, user=people["bob"])
    with django_capture_on_commit_callbacks(execute=True):
        engines.engine_approve(proposal_id=ep.id, user=people["carol"])
    ep.refresh_from_db()
    assert ep.state == "rechecking" and len(queued) == 2      # one held-out re-check per phase, on a worker

    with django_capture_on_commit_callbacks(execute=True):
        finish_rechecks(ep, {"decode": ok_outcome(2.9)})
    ep.refresh_from_db()
    assert ep.state == "rechecking" and not EngineVersion.objects.exists()   # waits for the other phase
    with django_capture_on_commit_callbacks(execute=True):
        finish_rechecks(ep, {"prefill": ok_outcome(3.1)})
    ep.refresh_from_db()
    assert ep.state == "promoted", ep.reason
    ver = EngineVersion.objects.get()
    m = ver.manifest
    assert (ver.engine_name, ver.version) == ("mini", 1)
    assert [a["reviewer"] for a in m["approvals"]] == ["bob", "carol"] and m["proposal"]["required_approvals"] == 2
    for phase in ("prefill", "decode"):
        assert m["phases"][phase]["source_sha256"] == library.sha256(ver.sources[phase])
        assert m["evidence"][phase]["held_out_recheck"]["status"] == "ok"
        assert m["phases"][phase]["groups"] and all("knobs" in g for g in m["phases"][phase]["groups"])
    assert m["model"]["config"]["layers"] == 1 and m["weights"]["embedding"] == "embed_tokens"
    assert {p.state for p in Proposal.objects.filter(engine_proposal=ep)} == {"promoted"}
    actions = list(AuditEntry.objects.filter(engine_proposal=ep).order_by("id").values_list("action", flat=True))
    assert actions == ["engine_propose", "engine_approve", "engine_approve", "engine_promote"]

    # the library folder, and the engine in this process
    assert (library_dir / "_engines" / "mini" / "v0001" / "prefill.c").read_text() == ver.sources["prefill"]
    eng = library.load_engine("mini", root=library_dir)
    logits, kv = eng.prefill(np.array([[1, 2, 3]]))
    assert logits.shape == (1, 3, 256) and kv.shape == (1, 2, 1, 2, 3, 16) and np.isfinite(logits).all()

    # the pages, and the zip: sources with the params baked in, the header, the example, built as shipped
    client.force_login(people["victor"])
    page = client.get(f"/reviews/engines/{ep.id}/").content.decode()
    assert "promoted" in page and 'id="phase-prefill"' in page and "G0_THREADS=" in page
    assert f'href="/library/engines/{ver.id}/"' in client.get("/library/").content.decode()
    assert "v1</a>" in client.get("/engines/mini/").content.decode()
    resp = client.get(f"/library/engines/{ver.id}/download/")
    assert resp["Content-Disposition"] == 'attachment; filename="mini-engine-v1.zip"'
    z = zipfile.ZipFile(io.BytesIO(resp.content))
    names = set(z.namelist())
    assert {f"mini-engine-v1/{f}" for f in ("mini_prefill.c", "mini_decode.c", "mini.h", "example.c", "build.sh",
                                             "weights.bin", "manifest.json")} <= names
    shipped = z.read("mini-engine-v1/mini_decode.c").decode()
    assert "#define kernel mini_decode" in shipped and shipped.endswith(ver.sources["decode"])
    assert all(f"#define {k} {v}" in shipped for k, v in ver.params["decode"].items() if isinstance(v, int))
    with tempfile.TemporaryDirectory() as unpacked:
        z.extractall(unpacked)
        built = subprocess.run(["sh", f"{unpacked}/mini-engine-v1/build.sh"], capture_output=True, text=True,
                               timeout=300)
    assert built.returncode == 0 and built.stdout.strip().endswith("ok"), built.stdout + built.stderr


def test_one_phase_failing_its_recheck_fails_the_engine(people, mini, queued, library_dir):
    ep = engines.engine_propose(engine_name="mini", user=people["alice"])
    for reviewer in ("bob", "carol"):
        engines.engine_approve(proposal_id=ep.id, user=people[reviewer])
    finish_rechecks(ep, {"prefill": ok_outcome(status="wrong", reason="out0 off at SEQ=3")})
    ep.refresh_from_db()
    assert ep.state == "recheck_failed" and "prefill" in ep.reason and "SEQ=3" in ep.reason
    assert {p.phase: p.state for p in ep.phases.all()} == {"prefill": "recheck_failed", "decode": "recheck_failed"}
    assert not EngineVersion.objects.exists() and not library_dir.exists()
    with pytest.raises(ValueError, match="prefill: only a candidate that meets its goal .* is wrong"):
        engines.engine_propose(engine_name="mini", user=people["alice"])     # its current result is the re-check


def test_the_gate_refuses_what_it_should_with_a_reason(people, mini, queued):
    from int21web.runs import models as rm
    with pytest.raises(ValueError, match="no engine named"):
        engines.engine_propose(engine_name="nothing", user=people["alice"])
    decode = rm.Candidate.objects.get(pk=mini.results["decode"]["candidate_id"])
    with pytest.raises(ValueError, match="is a mini_decode kernel, not one of mini_prefill"):
        engines.engine_propose(engine_name="mini", user=people["alice"], candidates={"prefill": decode.id})
    slow = make_candidate(outcome=ok_outcome(0.5), started_by=people["alice"], source=decode.source,
                          params=decode.params, goal={"workload": "mini_decode", "shapes": [], "held_out": [],
                                                      "eval_settings": {}})
    with pytest.raises(ValueError, match="decode: only a candidate that meets its goal"):
        engines.engine_propose(engine_name="mini", user=people["alice"], candidates={"decode": slow.id})
    ep = engines.engine_propose(engine_name="mini", user=people["alice"])
    run = decode.run                       # dave (engineer and reviewer) started the decode phase's run
    run.started_by = people["dave"]
    run.save()
    with pytest.raises(RoleError, match=f"you started run #{run.id} \\(decode\\)"):
        engines.engine_approve(proposal_id=ep.id, user=people["dave"])
    with pytest.raises(ValueError, match="already proposed"):
        engines.engine_propose(engine_name="mini", user=people["alice"])
    with pytest.raises(ValueError, match="needs a comment"):
        engines.engine_request_changes(proposal_id=ep.id, user=people["bob"], comment=" ")
    engines.engine_request_changes(proposal_id=ep.id, user=people["bob"], comment="the prefill is overfitted")
    ep.refresh_from_db()
    assert ep.state == "changes_requested" and {p.state for p in ep.phases.all()} == {"changes_requested"}
    with pytest.raises(ValueError, match="only an open proposal can be approved"):
        engines.engine_approve(proposal_id=ep.id, user=people["carol"])


def test_the_api_answers_engine_reviews_with_4xx_and_a_message(people, mini, queued):
    from django.test import Client

    def as_(user):
        c = Client()
        c.force_login(user)
        return c

    def post(user, url, body=None):
        return as_(user).post(url, json.dumps(body or {}), content_type="application/json")
    alice, bob, carol, victor = (people[n] for n in ("alice", "bob", "carol", "victor"))
    r = post(alice, "/api/engines/nothing/propose")
    assert r.status_code == 409 and "no engine named" in r.json()["error"]
    r = post(victor, "/api/engines/mini/propose", {"note": "x"})
    assert r.status_code == 403 and r.json()["role"] == "engineer"
    r = post(alice, "/api/engines/mini/propose", {"note": "x", "candidates": {"forward": 1}})
    assert r.status_code == 409 and "no phase forward" in r.json()["error"]
    r = post(alice, "/api/engines/mini/propose", {"note": "x"})
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["engine"] == "mini" and set(body["phases"]) == {"prefill", "decode"} and body["state"] == "open"
    pid = body["id"]
    assert as_(victor).get(f"/api/engine-reviews/{pid}").json()["required_approvals"] == 2
    assert as_(victor).get("/api/engine-reviews/999999").status_code == 404
    r = post(bob, f"/api/engine-reviews/{pid}/request-changes", {"comment": " "})
    assert r.status_code == 400 and r.json()["field"] == "comment"
    r = post(bob, f"/api/engine-reviews/{pid}/approve", {"comment": "ok"})
    assert r.status_code == 200 and r.json()["approvals"] == ["bob"]
    r = post(bob, f"/api/engine-reviews/{pid}/approve")
    assert r.status_code == 409 and "already approved" in r.json()["error"]
    phase = as_(bob).get(f"/api/engine-reviews/{pid}").json()["phases"]["prefill"]
    r = post(carol, f"/api/reviews/{phase['proposal']}/approve")
    assert r.status_code == 409 and "one unit" in r.json()["error"]
    assert as_(victor).get("/api/engines/mini/versions").json() == []
    assert as_(victor).get("/api/engines/mini/versions/1").status_code == 404
    assert as_(victor).get("/reviews/engines/999999/").status_code == 404
    assert as_(victor).post(f"/reviews/engines/{pid}/approve/").status_code == 403
