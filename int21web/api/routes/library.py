"""/api/reviews, /api/library and candidate comments/proposals: the approval gate and the
kernel library, through int21web.library's services (which enforce the gate's rules).
A rule that refuses (not the goal met, already proposed, not open, self-approval) is a 409
or 403 with the service's own sentence."""
from __future__ import annotations

from typing import Any, Literal, Optional

from django.http import HttpResponse
from ninja import Field, Query, Router, Status

from int21web.api import outputs as o
from int21web.api import selectors
from int21web.api.auth import need
from int21web.api.errors import ApiError, not_found
from int21web.api.schemas import CommentIn, Id, NoteIn, ReviewIn
from int21web.library import evidence, services
from int21web.library import selectors as selectors_lib
from int21web.library.models import KernelVersion, Proposal
from int21web.runs import models as rm

router = Router(tags=["reviews and library"])


class EngineProposeIn(NoteIn):
    candidates: Optional[dict[str, int]] = Field(
        None, description="{phase: candidate id}; by default each phase's champion from the last engine run")


def _call(fn, **kw):
    """The library's services say what is wrong with a ValueError meant for the user."""
    try:
        return fn(**kw)
    except ValueError as exc:
        raise ApiError(409, str(exc)) from None


def _candidate(candidate_id: int) -> int:
    if not rm.Candidate.objects.filter(pk=candidate_id).exists():
        raise not_found("candidate", candidate_id)
    return candidate_id


def _proposal(proposal_id: int) -> Proposal:
    p = Proposal.objects.select_related("candidate__run", "proposed_by").filter(pk=proposal_id).first()
    if p is None:
        raise not_found("proposal", proposal_id)
    return p


def _kernel(kernel_id: int) -> KernelVersion:
    kv = KernelVersion.objects.select_related("candidate", "promoted_by").filter(pk=kernel_id).first()
    if kv is None:
        raise not_found("kernel", kernel_id)
    return kv


@router.get("/candidates/{candidate_id}/comments", response={200: list[o.CommentOut], **o.ERRORS},
            summary="Comments on a candidate")
def comment_list(request, candidate_id: Id):
    need(request, "viewer", "reading candidates")
    return selectors.comments(_candidate(candidate_id))


@router.post("/candidates/{candidate_id}/comments", response={201: o.CommentOut, **o.WRITE_ERRORS},
             summary="Comment on a candidate (engineer or reviewer)")
def comment_post(request, candidate_id: Id, payload: CommentIn):
    c = _call(services.comment_post, candidate_id=_candidate(candidate_id), user=request.auth, body=payload.body)
    return Status(201, selectors.comment_json(c))


@router.post("/candidates/{candidate_id}/propose", response={201: o.ProposalOut, **o.WRITE_ERRORS},
             summary="Propose a candidate that meets its goal for promotion (engineer)")
def proposal_create(request, candidate_id: Id, payload: Optional[NoteIn] = None):
    need(request, "engineer", "proposing a candidate for promotion")
    p = _call(services.promotion_propose, candidate_id=_candidate(candidate_id), user=request.auth,
              note=payload.note if payload else "")
    return Status(201, selectors.proposal_json(_proposal(p.id)))


@router.get("/reviews", response={200: list[o.ProposalOut], **o.ERRORS},
            summary="Proposals: the open ones (the review queue) and recent decisions")
def proposal_list(request, state: Optional[Literal["open", "changes_requested", "rechecking", "recheck_failed",
                                                  "promoted"]] = None,
                  limit: int = Query(100, ge=1, le=1000)):
    need(request, "viewer", "reading reviews")
    return selectors.proposals(state=state, limit=limit)


@router.get("/reviews/{proposal_id}", response={200: o.ProposalOut, **o.ERRORS},
            summary="A proposal with its reviews and audit trail")
def proposal_get(request, proposal_id: Id):
    need(request, "viewer", "reading reviews")
    return selectors.proposal_json(_proposal(proposal_id), audit=True)


@router.post("/reviews/{proposal_id}/approve", response={200: o.ProposalOut, **o.WRITE_ERRORS},
             summary="Approve (reviewer; not a run you started)")
def review_approve(request, proposal_id: Id, payload: Optional[ReviewIn] = None):
    need(request, "reviewer", "approving a candidate")
    _call(services.review_approve, proposal_id=_proposal(proposal_id).id, user=request.auth,
          comment=payload.comment if payload else "")
    return selectors.proposal_json(_proposal(proposal_id))


@router.post("/reviews/{proposal_id}/request-changes", response={200: o.ProposalOut, **o.WRITE_ERRORS},
             summary="Request changes, saying what (reviewer)")
def review_request_changes(request, proposal_id: Id, payload: ReviewIn):
    need(request, "reviewer", "requesting changes")
    if not payload.comment.strip():
        raise ApiError(400, "say what should change: requesting changes needs a comment", field="comment")
    _call(services.review_request_changes, proposal_id=_proposal(proposal_id).id, user=request.auth,
          comment=payload.comment)
    return selectors.proposal_json(_proposal(proposal_id))


@router.get("/library", response={200: list[o.KernelOut], **o.ERRORS},
            summary="Promoted kernels, newest version first per (workload, target)")
def kernel_list(request, workload: Optional[str] = Query(None, max_length=64, pattern=r"^[\w.-]+$"),
                target: Optional[str] = Query(None, max_length=32, pattern=r"^[\w.-]+$"),
                champion: Optional[bool] = None):
    need(request, "viewer", "reading the library")
    return selectors.kernels(workload=workload, target=target, champion=champion)


@router.get("/library/{kernel_id}", response={200: o.KernelOut, **o.ERRORS},
            summary="A promoted kernel: source, params and its evidence manifest")
def kernel_get(request, kernel_id: Id):
    need(request, "viewer", "reading the library")
    return selectors.kernel_json(_kernel(kernel_id), detail=True)


@router.get("/library/{kernel_id}/download", summary="The kernel as a zip: source + manifest.json")
def kernel_download(request, kernel_id: Id):
    need(request, "viewer", "reading the library")
    kv = _kernel(kernel_id)
    resp = HttpResponse(evidence.zip_bytes(kv), content_type="application/zip")
    resp["Content-Disposition"] = f'attachment; filename="{evidence.zip_name(kv)}"'
    return resp


@router.post("/library/{kernel_id}/crown", response={200: o.KernelOut, **o.WRITE_ERRORS},
             summary="Make this version the champion of its shape bucket (reviewer)")
def kernel_crown(request, kernel_id: Id):
    need(request, "reviewer", "choosing a champion")
    kv = _call(services.kernel_crown, kernel_id=_kernel(kernel_id).id, user=request.auth)
    return selectors.kernel_json(_kernel(kv.id))




# --------------------------------------------------------------------------- engines (one unit at the gate)

def _engine_proposal(proposal_id: int):
    from int21web.library.models import EngineProposal
    ep = EngineProposal.objects.select_related("engine", "proposed_by").filter(pk=proposal_id).first()
    if ep is None:
        raise not_found("engine proposal", proposal_id)
    return ep


def _engine_version(name: str, version: int):
    from int21web.library.models import EngineVersion
    ver = EngineVersion.objects.filter(engine_name=name, version=version).first()
    if ver is None:
        raise not_found(f"version {version} of engine", repr(name))
    return ver


@router.post("/engines/{name}/propose", response={201: dict[str, Any], **o.WRITE_ERRORS}, tags=["engines"],
             summary="Propose an engine for promotion as one unit: every phase's champion (engineer)")
def engine_propose(request, name: str, payload: Optional[EngineProposeIn] = None):
    from int21web.library import engines
    need(request, "engineer", "proposing an engine for promotion")
    ep = _call(engines.engine_propose, engine_name=name, user=request.auth, note=payload.note if payload else "",
               candidates=payload.candidates if payload else None)
    return Status(201, selectors_lib.engine_proposal_json(_engine_proposal(ep.id)))


@router.get("/engine-reviews/{proposal_id}", response={200: dict[str, Any], **o.ERRORS}, tags=["engines"],
            summary="An engine proposal: its phases' candidates, results and approvals")
def engine_review_get(request, proposal_id: Id):
    need(request, "viewer", "reading reviews")
    return selectors_lib.engine_proposal_json(_engine_proposal(proposal_id))


@router.post("/engine-reviews/{proposal_id}/approve", response={200: dict[str, Any], **o.WRITE_ERRORS},
             tags=["engines"], summary="Approve an engine, every phase at once (reviewer; not a run you started)")
def engine_approve(request, proposal_id: Id, payload: Optional[ReviewIn] = None):
    from int21web.library import engines
    need(request, "reviewer", "approving an engine")
    _call(engines.engine_approve, proposal_id=_engine_proposal(proposal_id).id, user=request.auth,
          comment=payload.comment if payload else "")
    return selectors_lib.engine_proposal_json(_engine_proposal(proposal_id))


@router.post("/engine-reviews/{proposal_id}/request-changes", response={200: dict[str, Any], **o.WRITE_ERRORS},
             tags=["engines"], summary="Request changes to an engine, saying what (reviewer)")
def engine_request_changes(request, proposal_id: Id, payload: ReviewIn):
    from int21web.library import engines
    need(request, "reviewer", "requesting changes")
    if not payload.comment.strip():
        raise ApiError(400, "say what should change: requesting changes needs a comment", field="comment")
    _call(engines.engine_request_changes, proposal_id=_engine_proposal(proposal_id).id, user=request.auth,
          comment=payload.comment)
    return selectors_lib.engine_proposal_json(_engine_proposal(proposal_id))


@router.get("/engines/{name}/versions", response={200: list[dict[str, Any]], **o.ERRORS}, tags=["engines"],
            summary="An engine's promoted versions, newest first")
def engine_versions(request, name: str):
    from int21web.library.models import EngineVersion
    need(request, "viewer", "reading the library")
    return [selectors_lib.engine_version_json(v)
            for v in EngineVersion.objects.filter(engine_name=name).order_by("-version")]


@router.get("/engines/{name}/versions/{version}", response={200: dict[str, Any], **o.ERRORS}, tags=["engines"],
            summary="A promoted engine version with its manifest")
def engine_version_get(request, name: str, version: Id):
    need(request, "viewer", "reading the library")
    return selectors_lib.engine_version_json(_engine_version(name, version), detail=True)


@router.get("/engines/{name}/versions/{version}/download", tags=["engines"],
            summary="The engine as a zip: sources (params baked in), header, build.sh, C example, weights, manifest")
def engine_version_download(request, name: str, version: Id):
    need(request, "viewer", "reading the library")
    ver = _engine_version(name, version)
    resp = HttpResponse(evidence.engine_zip_bytes(ver), content_type="application/zip")
    resp["Content-Disposition"] = f'attachment; filename="{evidence.engine_zip_name(ver)}"'
    return resp
