"""Reads for the API: rows → plain JSON-ready dicts (no side effects)."""
from __future__ import annotations

import csv
import io
import json

from django.apps import apps
from django.db.models import Count

from int21web.runs import models as m

EVENT_PAGE = 500


def _user(u) -> str | None:
    return u.username if u is not None else None


def _at(t) -> str | None:
    return t.isoformat() if t else None


def goal_json(g: m.Goal) -> dict:
    return {"id": g.id, "name": g.name, "required_approvals": g.required_approvals,
            "created_by": _user(g.created_by), "created_at": _at(g.created_at), "spec": g.spec,
            "runs": list(g.runs.order_by("-id").values_list("id", flat=True)[:50]),
            "archived_at": _at(g.archived_at)}


def goals(*, workload: str | None = None, target: str | None = None, q: str = "", owner: str = "",
          archived: bool = False) -> list[dict]:
    """The goal list's own filters (``runs.selectors.goals``), as the API's JSON."""
    from int21web.runs.selectors import goals as goal_rows
    return [goal_json(r["goal"]) for r in goal_rows(q=q, workload=workload or "", target=target or "",
                                                     owner=owner, archived=archived)]


def candidate_summary(c: m.Candidate) -> dict:
    r = c.result or {}
    return {"id": c.id, "run": c.run_id, "generation": c.generation, "agent": c.agent, "state": c.state,
            "status": c.status, "score": c.score, "measurements": r.get("measurements") or [],
            "params": c.params, "parents": c.parents,
            "rationale": c.rationale, "median_ms": r.get("median_ms"), "speedup": r.get("speedup") or {},
            "reason": r.get("reason", ""), "created_at": _at(c.created_at), "evaluated_at": _at(c.evaluated_at)}


def progress(run: m.Run) -> dict:
    budget = (run.spec.get("budget") or {}).get("evaluations") or 1
    by_state = dict(run.candidates.values_list("state").annotate(n=Count("id")).order_by())
    by_status = dict(run.candidates.exclude(status="").values_list("status").annotate(n=Count("id")).order_by())
    done = run.candidates.filter(result__isnull=False).count()
    return {"generation": run.generation, "evaluated": done, "budget": budget,
            "percent": min(100, round(100 * done / budget)), "by_state": by_state, "by_status": by_status}


def generations(run: m.Run) -> list[dict]:
    """Per generation: its slots per agent, its summary, and its candidates by state (the live
    page's progress chart)."""
    counts: dict[int, dict] = {}
    for gen, state, n in run.candidates.values_list("generation", "state").annotate(n=Count("id")).order_by():
        counts.setdefault(gen, {})[state] = n
    rows = {g.index: {"index": g.index, "allocation": g.allocation, "summary": g.summary,
                      "by_state": counts.get(g.index, {})} for g in run.generations.order_by("index")}
    for gen, by_state in counts.items():          # the generation in flight has no row yet
        rows.setdefault(gen, {"index": gen, "allocation": {}, "summary": {}, "by_state": by_state})
    return [rows[k] for k in sorted(rows)]


def run_json(run: m.Run, *, detail: bool = False) -> dict:
    out = {"id": run.id, "goal": run.goal_id, "workload": run.spec.get("workload"), "target": run.spec.get("target"),
           "state": run.state, "finish_reason": run.finish_reason, "started_by": _user(run.started_by),
           "created_at": _at(run.created_at), "updated_at": _at(run.updated_at), "event_seq": run.event_seq,
           "progress": progress(run), "best": candidate_summary(run.best) if run.best_id else None}
    if detail:
        out.update(generations=generations(run))
        out.update(spec=run.spec, agent_stats=run.agent_stats, active_seconds=run.active_seconds,
                   stagnant=run.stagnant, fingerprint=run.fingerprint,
                   llm_usage=getattr(run, "llm_usage", {}) or {}, workers=worker_availability(run.spec.get("target")))
    return out


def worker_availability(target: str | None) -> dict:
    """Whether the run's target queue has a live worker (its evaluations wait otherwise)."""
    from int21web.fleet.selectors import live_worker_for
    av = live_worker_for(target or "cpu")
    return {"live": av.live, "reason": av.reason, "workers": list(av.workers)}


def workers() -> list[dict]:
    from int21web.fleet.selectors import workers as fleet_workers
    return fleet_workers()


def runs(*, state: str | None = None, goal_id: int | None = None, limit: int = 100) -> list[dict]:
    rows = m.Run.objects.select_related("best", "started_by").order_by("-id")
    if state:
        rows = rows.filter(state=state)
    if goal_id:
        rows = rows.filter(goal_id=goal_id)
    return [run_json(r) for r in rows[:limit]]


def candidates(run_id: int, *, state: str | None = None, status: str | None = None,
               generation: int | None = None, order: str = "id") -> list[dict]:
    rows = m.Candidate.objects.filter(run_id=run_id)
    if state:
        rows = rows.filter(state=state)
    if status:
        rows = rows.filter(status=status)
    if generation is not None:
        rows = rows.filter(generation=generation)
    rows = rows.order_by("-score", "id") if order == "score" else rows.order_by("id")
    return [candidate_summary(c) for c in rows.defer("source", "diff")]


def candidate_json(c: m.Candidate) -> dict:
    """Everything the candidate page shows: source, diff, every evaluation with its reports."""
    out = candidate_summary(c)
    out.update(source=c.source, diff=c.diff, key=c.key, result=c.result, meta=getattr(c, "meta", {}) or {},
               evaluations=[{"attempt": e.attempt, "status": e.status, "worker": e.worker,
                             "started_at": _at(e.started_at), "finished_at": _at(e.finished_at),
                             "outcome": e.outcome}
                            for e in c.evaluations.order_by("attempt")])
    if apps.is_installed("int21web.library"):
        from int21web.library.selectors import correctness_rows, resource_report
        latest = next((e["outcome"] for e in reversed(out["evaluations"]) if e["finished_at"]), None)
        # the candidate page's tables: correctness per shape x distribution, resources
        out["reports"] = {"correctness": correctness_rows(latest), "resources": resource_report(latest)}
        out["comments"] = comments(c.id)
    return out


def events(run_id: int, *, after: int = 0, limit: int = EVENT_PAGE) -> list[dict]:
    rows = m.Event.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit]
    return [{"seq": e.seq, "kind": e.kind, "data": e.data, "at": _at(e.created_at)} for e in rows]


def guidance(run_id: int) -> list[dict]:
    return [guidance_json(g) for g in m.Guidance.objects.filter(run_id=run_id).order_by("id")]


def guidance_json(g: m.Guidance) -> dict:
    return {"id": g.id, "run": g.run_id, "directive": g.directive, "author": g.author_name,
            "created_at": _at(g.created_at)}


CSV_HEAD = ["id", "generation", "agent", "state", "status", "score", "median_ms"]
CSV_TAIL = ["parents", "reason", "rationale", "created_at", "evaluated_at"]


def _cell(value):
    """A text cell that a spreadsheet would read as a formula is quoted (agents write rationales)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def candidates_csv(run_id: int) -> str:
    """One row per candidate: speedup vs each baseline and each param as its own column."""
    rows = list(m.Candidate.objects.filter(run_id=run_id).order_by("id").defer("source", "diff"))
    baselines = sorted({b for c in rows for b in ((c.result or {}).get("speedup") or {})})
    params = sorted({p for c in rows for p in c.params})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_HEAD + [f"speedup_{b}" for b in baselines] + [f"param_{p}" for p in params] + CSV_TAIL)
    for c in rows:
        r = c.result or {}
        sp = r.get("speedup") or {}
        w.writerow([c.id, c.generation, _cell(c.agent), c.state, c.status, c.score, r.get("median_ms")]
                   + [sp.get(b) for b in baselines]
                   + [_cell(json.dumps(c.params[p]) if isinstance(c.params.get(p), (dict, list))
                            else c.params.get(p)) for p in params]
                   + [" ".join(map(str, c.parents)), _cell(r.get("reason", "")), _cell(c.rationale),
                      _at(c.created_at), _at(c.evaluated_at)])
    return buf.getvalue()


# ------------------------------------------------------------------ reviews and the library
# (int21web.library is imported here, not at the top: the API mounts these endpoints only
# where that app is installed)

def comment_json(c) -> dict:
    return {"id": c.id, "candidate": c.candidate_id, "author": c.author_name, "body": c.body,
            "created_at": _at(c.created_at)}


def comments(candidate_id: int) -> list[dict]:
    from int21web.library.models import Comment
    return [comment_json(c) for c in Comment.objects.filter(candidate_id=candidate_id).order_by("id")]


def _review_json(r) -> dict:
    return {"id": r.id, "reviewer": r.reviewer_name, "verdict": r.verdict, "comment": r.comment,
            "status": r.status, "score": r.score, "created_at": _at(r.created_at),
            "dismissed_at": _at(r.dismissed_at), "dismissed_reason": r.dismissed_reason or None}


def proposal_json(p, *, audit: bool = False) -> dict:
    from int21web.library.selectors import approvals
    cand = p.candidate
    kernel = getattr(p, "kernel", None) if p.state == "promoted" else None
    out = {"id": p.id, "candidate": cand.id, "run": cand.run_id, "workload": cand.run.spec.get("workload"),
           "target": cand.run.spec.get("target"), "state": p.state, "reason": p.reason, "note": p.note,
           "shape_bucket": p.shape_bucket, "required_approvals": p.required_approvals,
           "approvals": approvals(p).count(), "proposed_by": _user(p.proposed_by),
           "recheck_evaluation": p.recheck_id, "kernel": kernel.id if kernel else None,
           "created_at": _at(p.created_at), "updated_at": _at(p.updated_at),
           "reviews": [_review_json(r) for r in p.reviews.order_by("id")]}
    if audit:
        out["audit"] = [{"actor": a.actor_name, "action": a.action, "before": a.before, "after": a.after,
                         "message": a.message, "at": _at(a.created_at)} for a in p.audit.order_by("id")]
    return out


def proposals(*, state: str | None = None, limit: int = 100) -> list[dict]:
    from int21web.library.models import Proposal
    rows = Proposal.objects.select_related("candidate__run", "proposed_by").order_by("-id")
    if state:
        rows = rows.filter(state=state)
    return [proposal_json(p) for p in rows[:limit]]


def kernel_json(kv, *, detail: bool = False) -> dict:
    out = {"id": kv.id, "workload": kv.workload, "target": kv.target, "version": kv.version,
           "shape_bucket": kv.shape_bucket, "champion": kv.champion, "candidate": kv.candidate_id,
           "proposal": kv.proposal_id, "score": kv.score, "params": kv.params,
           "promoted_by": _user(kv.promoted_by) or "the approval gate", "created_at": _at(kv.created_at),
           "download": f"/api/library/{kv.id}/download"}
    if detail:
        out.update(source=kv.source, manifest=kv.manifest)
    return out


def kernels(*, workload: str | None = None, target: str | None = None, champion: bool | None = None) -> list[dict]:
    from int21web.library.models import KernelVersion
    rows = KernelVersion.objects.select_related("promoted_by").order_by("workload", "target", "-version")
    if workload:
        rows = rows.filter(workload=workload)
    if target:
        rows = rows.filter(target=target)
    if champion is not None:
        rows = rows.filter(champion=champion)
    return [kernel_json(kv) for kv in rows]
