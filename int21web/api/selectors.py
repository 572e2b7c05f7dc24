"""Reads for the API: rows → plain JSON-ready dicts (no side effects)."""
from __future__ import annotations

import csv
import io
import json

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
            "runs": list(g.runs.order_by("-id").values_list("id", flat=True)[:50])}


def goals(*, workload: str | None = None, target: str | None = None) -> list[dict]:
    rows = m.Goal.objects.select_related("created_by").order_by("-id")
    if workload:
        rows = rows.filter(spec__workload=workload)
    if target:
        rows = rows.filter(spec__target=target)
    return [goal_json(g) for g in rows]


def candidate_summary(c: m.Candidate) -> dict:
    r = c.result or {}
    return {"id": c.id, "run": c.run_id, "generation": c.generation, "agent": c.agent, "state": c.state,
            "status": c.status, "score": c.score, "params": c.params, "parents": c.parents,
            "rationale": c.rationale, "median_ms": r.get("median_ms"), "speedup": r.get("speedup") or {},
            "reason": r.get("reason", ""), "created_at": _at(c.created_at), "evaluated_at": _at(c.evaluated_at)}


def progress(run: m.Run) -> dict:
    budget = (run.spec.get("budget") or {}).get("evaluations") or 1
    by_state = dict(run.candidates.values_list("state").annotate(n=Count("id")).order_by())
    by_status = dict(run.candidates.exclude(status="").values_list("status").annotate(n=Count("id")).order_by())
    done = run.candidates.filter(result__isnull=False).count()
    return {"generation": run.generation, "evaluated": done, "budget": budget,
            "percent": min(100, round(100 * done / budget)), "by_state": by_state, "by_status": by_status}


def run_json(run: m.Run, *, detail: bool = False) -> dict:
    out = {"id": run.id, "goal": run.goal_id, "workload": run.spec.get("workload"), "target": run.spec.get("target"),
           "state": run.state, "finish_reason": run.finish_reason, "started_by": _user(run.started_by),
           "created_at": _at(run.created_at), "updated_at": _at(run.updated_at), "event_seq": run.event_seq,
           "progress": progress(run), "best": candidate_summary(run.best) if run.best_id else None}
    if detail:
        out.update(spec=run.spec, agent_stats=run.agent_stats, active_seconds=run.active_seconds,
                   stagnant=run.stagnant, fingerprint=run.fingerprint,
                   llm_usage=getattr(run, "llm_usage", {}) or {})
    return out


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
