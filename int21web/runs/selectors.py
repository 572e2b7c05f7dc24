"""Reads for pages and the API: plain data, no side effects."""
from __future__ import annotations

from int21web.runs import models as m


def run_progress(run: m.Run) -> dict:
    budget = (run.spec.get("budget") or {}).get("evaluations") or 1
    done = run.candidates.filter(result__isnull=False).count()
    return {"run": run, "done": done, "budget": budget, "percent": min(100, round(100 * done / budget)),
            "best": run.best.score if run.best_id else None,
            "speed": run.best.speed if run.best_id else None}   # the one number, with its spread


def dashboard() -> dict:
    from django.conf import settings

    from int21web.fleet.selectors import workers
    from int21web.library.models import KernelVersion
    from int21web.library.selectors import open_proposal_count
    active = m.Run.objects.filter(state__in=["running", "paused"]).select_related("best", "goal").order_by("-id")
    recent = m.Run.objects.filter(state__in=m.Run.ENDED).select_related("best", "goal").order_by("-updated_at")[:8]
    from int21web.fleet.selectors import live_worker_for
    from kernels import targets
    fleet = [w for w in workers() if w["status"] != "stopped"][:12]
    # per target, the Workers page's own verdict (live_worker_for), so the two pages agree
    serving = [(t, live_worker_for(t)) for t in targets.names()]
    if settings.CELERY_EMBEDDED and not fleet:
        fleet = [{"name": "embedded workers (this web process)", "targets": [t for t, ok in serving if ok],
                  "status": "live", "queues": [f"target.{t}" for t in targets.names()] + ["orchestrate"]}]
    return {"targets": serving, "active": [run_progress(r) for r in active], "recent": [run_progress(r) for r in recent],
            "review_count": open_proposal_count(),
            "promotions": KernelVersion.objects.select_related("promoted_by").order_by("-created_at")[:6],
            "workers": fleet}


GOAL_FILTERS = ("q", "workload", "target", "owner", "archived")


def goals(*, q: str = "", workload: str = "", target: str = "", owner: str = "", archived: bool = False) -> list[dict]:
    """Saved goals, newest first: by words of the name (``q``), workload, target and owner's
    username; archived ones only when asked (then only them)."""
    from django.db.models import Count
    rows = m.Goal.objects.select_related("created_by").annotate(run_count=Count("runs")).order_by("-id")
    rows = rows.filter(archived_at__isnull=not archived)
    for word in q.split()[:8]:
        rows = rows.filter(name__icontains=word[:100])
    if workload:
        rows = rows.filter(spec__workload=workload)
    if target:
        rows = rows.filter(spec__target=target)
    if owner:
        rows = rows.filter(created_by__username=owner)
    return [{"goal": g, "spec": g.spec, "runs": g.run_count} for g in rows[:500]]


def goal_filters(data) -> dict:
    """The goal list's filters from a query string: text only, cut to length, NUL refused."""
    out = {}
    for key in GOAL_FILTERS:
        value = str(data.get(key, "")).replace("\x00", "").strip()[:200]
        out[key] = value
    out["archived"] = out["archived"] in ("1", "on", "true", "yes")
    return out


def goal_page(row: m.Goal) -> dict:
    from int21web.runs.forms import editor_rows
    spec = row.spec
    return {"goal": row, "spec": spec, "space": editor_rows(spec["workload"], spec["target"], spec.get("space")),
            "runs": [run_progress(r) for r in row.runs.select_related("best").order_by("-id")]}


def runs() -> list[dict]:
    return [run_progress(r) for r in m.Run.objects.select_related("goal", "best", "started_by").order_by("-id")[:200]]


def run_page(run: m.Run) -> dict:
    from kernels import workloads
    wl = workloads.get(run.spec["workload"])
    baselines = [b.name for b in wl.baselines.get(run.spec["target"], ()) if b.default]
    live = None
    try:
        from int21web.fleet.selectors import live_worker_for   # the fleet registry, where installed
        live = live_worker_for(run.spec["target"])
    except ImportError:
        pass
    uses_llm = bool({"llm_coder", "llm_analyst"} & set(run.spec.get("team") or []))
    llm = None
    if uses_llm:
        from int21web.runs.llm import run_llm_spend
        spend = run_llm_spend(run_id=run.id)
        llm = {"budget": spend["budget"] or {}, "configured": spend["configured"], "model": spend["model"]}
    return {**run_progress(run), "baselines": baselines, "worker_status": live, "llm": llm,
            "guidance": run.guidance.select_related("author").order_by("id")}

