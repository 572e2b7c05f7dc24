"""/api/runs and /api/candidates: start and steer runs, read their progress, events and candidates."""
from __future__ import annotations

from typing import Literal, Optional

from django.http import HttpResponse
from ninja import Query, Router, Status

from int21web.accounts.roles import require
from int21web.api import outputs as o
from int21web.api import selectors
from int21web.api.auth import need
from int21web.api.errors import not_found
from int21web.api.routes.goals import goal_row
from int21web.api.schemas import GuidanceIn, Id, RunIn, Seq
from int21web.runs import models as m
from int21web.runs import services

router = Router(tags=["runs"])

RunState = Literal["created", "running", "paused", "finished", "failed"]
CandState = Literal["proposed", "queued", "running", "evaluated"]


def run_row(run_id: int) -> m.Run:
    row = m.Run.objects.select_related("best", "started_by").filter(pk=run_id).first()
    if row is None:
        raise not_found("run", run_id)
    return row


@router.get("/runs", response={200: list[o.RunOut], **o.ERRORS}, summary="List runs, newest first")
def run_list(request, state: Optional[RunState] = None, goal: Optional[Id] = None,
             limit: int = Query(100, ge=1, le=1000)):
    need(request, "viewer", "reading runs")
    return selectors.runs(state=state, goal_id=goal, limit=limit)


@router.post("/runs", response={201: o.RunDetail, **o.WRITE_ERRORS}, summary="Start a run of a saved goal (engineer)")
def run_create(request, payload: RunIn):
    user = need(request, "engineer", "starting a run")
    row = goal_row(payload.goal_id)
    overrides = payload.overrides.model_dump(exclude_unset=True) if payload.overrides else None
    if overrides and overrides.get("budget") is not None:      # a budget override changes only what it names
        overrides["budget"] = {**(row.spec.get("budget") or {}), **overrides["budget"]}
    run_id = services.run_launch(goal_row=row, started_by=user, overrides=overrides)
    return Status(201, selectors.run_json(run_row(run_id), detail=True))


@router.get("/runs/{run_id}", response={200: o.RunDetail, **o.ERRORS},
            summary="A run: state, progress by candidate state, best candidate")
def run_get(request, run_id: Id):
    need(request, "viewer", "reading runs")
    return selectors.run_json(run_row(run_id), detail=True)


def control(run_id: int, action: str, user) -> m.Run:
    """Pause, resume or stop a run for ``user`` (the API and the `runs` command), through the
    service the pages use; a run in the wrong state is a 409 naming ``state``."""
    require(user, "engineer", services.ACTING[action] + " a run")
    run_row(run_id)
    services.run_control(run_id=run_id, action=action, user=user)
    return run_row(run_id)


@router.post("/runs/{run_id}/pause", response={200: o.RunDetail, **o.WRITE_ERRORS},
             summary="Pause after the generation in flight (engineer)")
def run_pause(request, run_id: Id):
    return selectors.run_json(control(run_id, "pause", request.auth), detail=True)


@router.post("/runs/{run_id}/resume", response={200: o.RunDetail, **o.WRITE_ERRORS},
             summary="Resume a paused run and queue its driver (engineer)")
def run_resume(request, run_id: Id):
    return selectors.run_json(control(run_id, "resume", request.auth), detail=True)


@router.post("/runs/{run_id}/stop", response={200: o.RunDetail, **o.WRITE_ERRORS},
             summary="Stop at the next generation; a paused run at once (engineer)")
def run_stop(request, run_id: Id):
    return selectors.run_json(control(run_id, "stop", request.auth), detail=True)


@router.get("/runs/{run_id}/events", response={200: list[o.EventOut], **o.ERRORS},
            summary="The run's stored events after sequence number `after`")
def run_events(request, run_id: Id, after: Seq = 0,
               limit: int = Query(selectors.EVENT_PAGE, ge=1, le=selectors.EVENT_PAGE)):
    need(request, "viewer", "reading runs")
    run_row(run_id)
    return selectors.events(run_id, after=after, limit=limit)


@router.get("/runs/{run_id}/candidates", response={200: list[o.CandidateSummary], **o.ERRORS},
            summary="The run's candidates (no source; see /candidates/{id})")
def run_candidates(request, run_id: Id, state: Optional[CandState] = None,
                   status: Optional[str] = Query(None, max_length=24, pattern=r"^[a-z_]+$"),
                   generation: Optional[int] = Query(None, ge=0, le=2**31),
                   order: Literal["id", "score"] = "id"):
    need(request, "viewer", "reading runs")
    run_row(run_id)
    return selectors.candidates(run_id, state=state, status=status, generation=generation, order=order)


@router.get("/runs/{run_id}/candidates.csv", response={200: str, **o.ERRORS}, summary="The run's candidates as CSV")
def run_candidates_csv(request, run_id: Id):
    need(request, "viewer", "reading runs")
    run_row(run_id)
    resp = HttpResponse(selectors.candidates_csv(run_id), content_type="text/csv; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="run-{run_id}-candidates.csv"'
    return resp


@router.get("/runs/{run_id}/guidance", response={200: list[o.GuidanceOut], **o.ERRORS}, tags=["guidance"],
            summary="The run's guidance, oldest first")
def guidance_list(request, run_id: Id):
    need(request, "viewer", "reading runs")
    run_row(run_id)
    return selectors.guidance(run_id)


@router.post("/runs/{run_id}/guidance", response={201: o.GuidanceOut, **o.WRITE_ERRORS}, tags=["guidance"],
             summary="Steer a run: a directive that takes effect at its next generation (engineer)")
def guidance_post(request, run_id: Id, payload: GuidanceIn):
    user = need(request, "engineer", "posting guidance")
    run_row(run_id)
    g = services.guidance_post(run_id=run_id, directive=payload.directive(), author=user)
    return Status(201, selectors.guidance_json(g))


@router.get("/candidates/{candidate_id}", response={200: o.CandidateDetail, **o.ERRORS}, tags=["candidates"],
            summary="A candidate: source, diff vs its parent, result and every evaluation's reports")
def candidate_get(request, candidate_id: Id):
    need(request, "viewer", "reading candidates")
    c = m.Candidate.objects.filter(pk=candidate_id).first()
    if c is None:
        raise not_found("candidate", candidate_id)
    return selectors.candidate_json(c)


