"""Reads for pages and the API: plain data, no side effects."""
from __future__ import annotations

from int21web.runs import models as m


def run_progress(run: m.Run) -> dict:
    budget = (run.spec.get("budget") or {}).get("evaluations") or 1
    done = run.candidates.filter(result__isnull=False).count()
    return {"run": run, "done": done, "budget": budget, "percent": min(100, round(100 * done / budget)),
            "best": run.best.score if run.best_id else None}


def dashboard() -> dict:
    active = m.Run.objects.filter(state__in=["running", "paused"]).select_related("best", "goal").order_by("-id")
    recent = m.Run.objects.filter(state="finished").select_related("best", "goal").order_by("-updated_at")[:8]
    return {"active": [run_progress(r) for r in active], "recent": [run_progress(r) for r in recent]}
