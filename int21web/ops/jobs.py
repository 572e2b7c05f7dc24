"""Engine jobs: the long operations of ``manage.py engine`` asked for through the API.

A job is a chain of tasks, one step each, so that no task outlives the workers' time limits
(INT21_EVAL_SOFT_LIMIT) and a step that is delivered twice does no harm:

    check      check:<phase> per phase                    (target.cpu: the harness)
    greedy     greedy                                     (target.cpu)
    breakdown  breakdown:<phase> per phase                (target.cpu)
    run        [prepare] start wait settle:<phase>… report
               prepare: the ONNX exports (trusted, here); start: one search run per phase,
               queued for the run drivers like any goal's; wait: until every run has ended
               (checked again every INT21_JOB_POLL seconds, never holding a worker);
               settle: the phase's best timed against the peers; report: the greedy-decode
               check on the best kernels, and the report ``engine run --json`` prints;
               with ``tune`` > 0, tune:<phase> first tunes each fusion group alone.

One active job per engine. A step's failure ends the job ``failed`` with its reason (the
traceback goes to the server log, never into the job); the web app's embedded workers hand
the jobs that were active when the server stopped back to the queue on start.
"""
from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from int21web.ops import engines
from int21web.ops import models as m

log = logging.getLogger(__name__)

ACTIONS = ("check", "greedy", "run", "breakdown")
CPU, ORCHESTRATE = "target.cpu", "orchestrate"
_QUEUE = {"start": ORCHESTRATE, "wait": ORCHESTRATE}      # every other step does harness work


class JobRefused(ValueError):
    """A job that cannot start: ``status`` (400, 404, 409) and ``field`` for the API."""

    def __init__(self, message: str, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.message, self.status, self.field = message, status, field


def _steps(action: str, phases: list[str], options: dict) -> list[str]:
    if action == "check":
        return [f"check:{p}" for p in phases]
    if action == "breakdown":
        return [f"breakdown:{p}" for p in phases]
    if action == "greedy":
        return ["greedy"]
    return ((["prepare"] if options["peers"] else []) + ([f"tune:{p}" for p in phases] if options["tune"] else [])
            + ["start", "wait"] + [f"settle:{p}" for p in phases] + ["report"])


def _options(action: str, record: dict, options: dict) -> tuple[dict, list[str]]:
    """The options with their defaults, checked; and the phases they name (all by default)."""
    order = {"prefill": 0, "decode": 1}     # a model's phases in the order they run
    have = sorted(record.get("phases", {}), key=lambda p: (order.get(p, 2), p))
    o = dict(options)
    phase = o.pop("phase", None)
    if phase and phase not in have:
        raise JobRefused(f"the engine has no phase {phase!r} (it has {', '.join(have)})", field="phase")
    phases = [phase] if phase else have
    limits = {"seeds": (1, 8), "budget": (1, 2000), "population": (2, 64), "confirm": (0, 8), "tune": (0, 64)}
    defaults = {"check": {"seeds": 2}, "breakdown": {"seeds": 2, "quick": False, "whole": True},
                "greedy": {}, "run": {"budget": 16, "population": 8, "confirm": 3, "peers": True, "tune": 0}}[action]
    unknown = sorted(set(o) - set(defaults))
    if unknown:
        raise JobRefused(f"{action} takes no option {unknown[0]!r}", field=unknown[0])
    o = {**defaults, **{k: v for k, v in o.items() if v is not None}}
    for key, (low, high) in limits.items():
        if key in o and not (isinstance(o[key], int) and not isinstance(o[key], bool) and low <= o[key] <= high):
            raise JobRefused(f"{key} must be a whole number from {low} to {high}", field=key)
    if action == "greedy":
        from kernels.engine import service
        why = service.greedy_unavailable(record)
        if why:
            raise JobRefused(why)
    return {**o, "phase": phase}, phases


def job_start(*, name: str, action: str, options: dict | None = None, user=None) -> m.EngineJob:
    """Queue ``action`` on engine ``name`` (an engineer's request; roles are checked by the caller)."""
    if action not in ACTIONS:
        raise JobRefused(f"unknown action {action!r} (one of {', '.join(ACTIONS)})", field="action")
    with transaction.atomic():
        row = m.Engine.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise JobRefused(f"no engine {name!r}", status=404)
        busy = row.jobs.filter(state__in=m.EngineJob.ACTIVE).first()
        if busy is not None:
            raise JobRefused(f"engine {name!r} already has a {busy.action} job (#{busy.id}, {busy.state}); "
                             "wait for it to end", status=409)
        opts, phases = _options(action, row.record, options or {})
        if action == "run":
            from int21web.runs.embedded import serving
            why = serving("cpu")
            if why:
                raise JobRefused(f"an engine run cannot run its goals: {why}", status=409)
        steps = _steps(action, phases, opts)
        job = m.EngineJob.objects.create(engine=row, action=action, options=opts, steps=steps,
                                         data={"phases": phases}, created_by=user,
                                         progress={"step": 0, "steps": len(steps), "what": "queued"})
        _queue(job, 0)
    return job


def _queue(job: m.EngineJob, cursor: int, countdown: float | None = None) -> None:
    from int21web.ops.tasks import engine_job_step
    step = job.steps[cursor]
    queue = _QUEUE.get(step.split(":")[0], CPU)
    transaction.on_commit(lambda: engine_job_step.apply_async((job.id, cursor), queue=queue, countdown=countdown))


def resume_active() -> list[int]:
    """Queue again the current step of every active job (the server stopped while they ran;
    the embedded broker kept nothing). Returns their ids."""
    ids = []
    for job in m.EngineJob.objects.filter(state__in=m.EngineJob.ACTIVE):
        with transaction.atomic():
            _queue(job, job.cursor)
        ids.append(job.id)
    return ids


def job_step(job_id: int, cursor: int) -> None:
    """The task's body: run step ``cursor`` of the job, then queue the next one. A duplicate
    delivery (the job moved on, or ended) does nothing."""
    with transaction.atomic():
        job = m.EngineJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.state not in m.EngineJob.ACTIVE or job.cursor != cursor:
            return
        step = job.steps[cursor]
        job.state = "running"
        job.progress = {**job.progress, "step": cursor, "what": _describe(step)}
        job.save(update_fields=["state", "progress", "updated_at"])
    try:
        again = _run_step(job, step)
    except SoftTimeLimitExceeded:
        return _fail(job, f"{_describe(step)} outlasted the worker's time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s)")
    except (engines.EngineRefused, JobRefused) as exc:
        return _fail(job, exc.message)
    except ValueError as exc:          # the engine service's refusals (EngineError, BreakdownError …)
        return _fail(job, f"{_describe(step)}: {exc}")
    except Exception as exc:
        log.exception("engine job #%s: step %s failed", job.id, step)
        return _fail(job, f"{_describe(step)} failed: {type(exc).__name__} (the server log has the details)")
    with transaction.atomic():
        job.refresh_from_db()
        if job.state not in m.EngineJob.ACTIVE or job.cursor != cursor:
            return
        if again:                       # "wait": not yet; look again later
            job.progress = {**job.progress, "what": again}
            job.save(update_fields=["data", "progress", "updated_at"])
            _queue(job, cursor, countdown=settings.INT21_JOB_POLL_SECONDS)
            return
        job.cursor = cursor + 1
        if job.cursor >= len(job.steps):
            job.state, job.finished_at = "done", timezone.now()
            job.progress = {"step": len(job.steps), "steps": len(job.steps), "what": "done"}
        else:
            job.progress = {"step": job.cursor, "steps": len(job.steps), "what": _describe(job.steps[job.cursor])}
            _queue(job, job.cursor)
        job.save()


def _fail(job: m.EngineJob, reason: str) -> None:
    m.EngineJob.objects.filter(pk=job.pk, state__in=m.EngineJob.ACTIVE).update(
        state="failed", reason=reason[:2000], finished_at=timezone.now(), updated_at=timezone.now(),
        progress={**job.progress, "what": "failed"})


def _describe(step: str) -> str:
    kind, _, phase = step.partition(":")
    return {"check": f"{phase}: judging at every shape", "breakdown": f"{phase}: timing each group on its own",
            "greedy": "the greedy-decode check", "prepare": "exporting the model for ONNX Runtime and OpenVINO",
            "start": "starting a search run per phase", "tune": f"{phase}: tuning each fusion group alone", "wait": "searching",
            "settle": f"{phase}: timing the best kernel against the peers",
            "report": "the greedy-decode check on the best kernels"}[kind]


def _run_step(job: m.EngineJob, step: str) -> str | None:
    """Do one step; its output goes into job.data / job.result (saved by the caller or here).
    Returns a progress sentence when the step must be looked at again later (``wait``)."""
    from kernels.engine import service
    name, o = job.engine.name, job.options
    kind, _, phase = step.partition(":")
    if kind == "check":
        service.engine_check(name, seeds=o["seeds"], phases=[phase])
        row = engines.engine_sync(name)
        _set_result(job, {**(job.result or {}), phase: (row.record.get("validation") or {}).get(phase)})
    elif kind == "greedy":
        data = service.engine_greedy(name)
        engines.engine_sync(name)
        _set_result(job, data)
    elif kind == "breakdown":
        report = engines.engine_breakdown(name, phases=[phase], seeds=o["seeds"], quick=o["quick"], whole=o["whole"])
        prev = (job.result or {}).get("phases", {})
        _set_result(job, {"engine": name, "phases": {**prev, **report["phases"]}})
    elif kind == "prepare":
        engines.search_prepare(name)
    elif kind == "tune":
        report = engines.search_tune(name, phase, per_group=o["tune"])
        job.data = {**job.data, "tuned": {**job.data.get("tuned", {}), phase: report}}
        job.save(update_fields=["data", "updated_at"])
    elif kind == "start":
        if not job.data.get("runs"):     # a second delivery starts nothing more
            from int21web.runs import services as rs
            user = job.created_by
            runs = {p: engines.search_start(name, p, budget=o["budget"], population=o["population"],
                                            confirm=o["confirm"], user=user) for p in job.data["phases"]}
            with transaction.atomic():
                job.data = {**job.data, "runs": runs}
                job.save(update_fields=["data", "updated_at"])
                for run_id in runs.values():
                    rs.run_dispatch(run_id=run_id)
    elif kind == "wait":
        return _still_searching(job)
    elif kind == "settle":
        res = engines.search_settle(name, phase, job.data["runs"][phase], peers=o["peers"],
                                    tuned=job.data.get("tuned", {}).get(phase))
        job.data = {**job.data, "settled": {**job.data.get("settled", {}), phase: res}}
        job.save(update_fields=["data", "updated_at"])
    elif kind == "report":
        _set_result(job, engines.search_report(name, job.data["settled"]))
    return None


def _still_searching(job: m.EngineJob) -> str | None:
    """None once every search run has ended; else how far they are."""
    from int21web.runs import models as rm
    runs = job.data["runs"]
    rows = {r.id: r for r in rm.Run.objects.filter(pk__in=runs.values())}
    parts, waiting = [], False
    for phase, run_id in runs.items():
        run = rows.get(run_id)
        if run is None:
            raise JobRefused(f"{phase}: its search run {run_id} was deleted")
        done = rm.Candidate.objects.filter(run=run, result__isnull=False).count()
        budget = (run.spec.get("budget") or {}).get("evaluations")
        parts.append(f"{phase}: run {run_id} {run.state}, {done}/{budget} evaluations")
        waiting |= run.state not in rm.Run.ENDED
    return "searching · " + " · ".join(parts) if waiting else None


def _set_result(job: m.EngineJob, result) -> None:
    job.result = result
    job.save(update_fields=["result", "updated_at"])


def job_view(job: m.EngineJob) -> dict:
    """What GET /api/engine-jobs/<id> says of a job."""
    return {"id": job.id, "engine": job.engine.name, "action": job.action, "options": job.options,
            "state": job.state, "progress": job.progress, "steps": job.steps, "runs": job.data.get("runs", {}),
            "result": job.result, "reason": job.reason,
            "created_by": job.created_by.username if job.created_by else None,
            "created_at": job.created_at.isoformat(), "updated_at": job.updated_at.isoformat(),
            "finished_at": job.finished_at.isoformat() if job.finished_at else None,
            "url": f"/api/engine-jobs/{job.id}"}
