"""/api/workloads (POST): own ops — import a KernelBench-format problem as a workload, or
preview what its import would capture. The same service as the import page and
``manage.py import_op``."""
from __future__ import annotations

from typing import Any, Optional

from ninja import Query, Router, Schema, Status
from pydantic import Field

from int21web.api import outputs as o
from int21web.api.auth import need
from int21web.api.errors import ApiError, not_found
from int21web.ops import services

router = Router(tags=["workloads"])


@router.get("/workloads", response={200: list[dict[str, Any]], **o.ERRORS},
             summary="Workloads (built in and imported): signatures, template spaces, baselines")
def workload_list(request, name: Optional[str] = Query(None, max_length=64, description="only this one")):
    need(request, "viewer", "reading workloads")
    from kernels import workloads
    names = workloads.names()
    if name is not None:
        if name not in names:
            raise not_found("workload", repr(name))
        names = [name]
    return [workloads.get(n).describe() for n in names]


class ProblemIn(Schema):
    source: str = Field(max_length=services.MAX_SOURCE_BYTES, description="the problem file's text")
    name: Optional[str] = Field(None, max_length=64, description="lower_case name (default: op_<digest>)")
    shapes: list[str] = Field(default_factory=list, max_length=16,
                              description="more shapes as module constants, e.g. ['batch_size=64']")


def _refused(exc: services.ImportRefused) -> ApiError:
    return ApiError(400, exc.message, exc.field, failure=exc.failure)


@router.post("/workloads", response={201: dict[str, Any], **o.ERRORS},
             summary="Import a PyTorch problem (KernelBench format) as a workload (engineer)")
def workload_import(request, payload: ProblemIn):
    user = need(request, "engineer", "importing a problem")
    try:
        overrides = services.parse_overrides(payload.shapes)
        row = services.op_import(source=payload.source, name=payload.name, overrides=overrides, user=user)
    except services.ImportRefused as exc:
        raise _refused(exc) from None
    return Status(201, {"name": row.name, "digest": row.digest, "summary": row.summary,
                        "page": f"/ops/{row.name}/"})


@router.post("/workloads/preview", response={200: dict[str, Any], **o.ERRORS},
             summary="What importing a problem would capture and support; nothing is stored (engineer)")
def workload_preview(request, payload: ProblemIn):
    need(request, "engineer", "previewing a problem")
    try:
        return services.op_preview(source=payload.source, overrides=services.parse_overrides(payload.shapes))
    except services.ImportRefused as exc:
        raise _refused(exc) from None


# --------------------------------------------------------------------------- engines

class EngineIn(Schema):
    name: str = Field(max_length=41, description="lower_case engine name; its phases become <name>_prefill, _decode")
    family: Optional[str] = Field(None, max_length=400,
                                  description="the decoder family: hidden=...,heads=...,kv_heads=...,ffn=...,"
                                              "layers=...,vocab=...")
    max_seq: Optional[int] = Field(None, ge=2, le=8192)
    prefill_seq: list[int] = Field(default_factory=list, max_length=8, description="prefill lengths, first timed")
    decode_past: list[int] = Field(default_factory=list, max_length=8, description="decode cache lengths, first timed")
    greedy: Optional[list[int]] = Field(None, min_length=2, max_length=2, description="[prompt, steps]")


@router.get("/engines", response={200: list[dict[str, Any]], **o.ERRORS}, summary="Engines", tags=["engines"])
def engine_list(request):
    need(request, "viewer", "reading engines")
    from int21web.ops import engines
    from int21web.ops import models as m
    return [engines.engine_view(r) for r in m.Engine.objects.all()]


@router.get("/engines/{name}", response={200: dict[str, Any], **o.ERRORS},
            summary="One engine: its phases, arena, validation, greedy check, best speedups", tags=["engines"])
def engine_show(request, name: str):
    need(request, "viewer", "reading engines")
    from int21web.ops import engines
    from int21web.ops import models as m
    row = m.Engine.objects.filter(name=name).first()
    if row is None:
        raise not_found("engine", repr(name))
    return engines.engine_view(row)


@router.post("/engines", response={201: dict[str, Any], **o.ERRORS},
             summary="Import a model's prefill and decode phases as an engine (engineer)", tags=["engines"])
def engine_import(request, payload: EngineIn):
    user = need(request, "engineer", "importing an engine")
    from int21web.ops import engines
    from kernels.engine import service
    try:
        # a checkpoint is read from a path on the server: the command line only (manage.py engine import)
        model = service.model_from(payload.family, max_seq=payload.max_seq)
        row = engines.engine_import(model=model, name=payload.name, user=user, prefill_seq=payload.prefill_seq or None,
                                    decode_past=payload.decode_past or None, greedy=payload.greedy)
    except service.EngineError as exc:
        raise ApiError(400, str(exc), "family") from None
    except engines.EngineRefused as exc:
        raise ApiError(400, exc.message, "name" if "name" in exc.message else None, failure=exc.failure) from None
    return Status(201, {**engines.engine_view(row), "page": f"/engines/{row.name}/"})


# --------------------------------------------------------------------------- engine jobs
# The long operations of `manage.py engine` (check, greedy, run, breakdown): each answers 202
# with a job to poll at GET /api/engine-jobs/<id>; its ``result`` is what the command's
# ``--json`` prints. One active job per engine (a second is a 409).

class CheckIn(Schema):
    phase: Optional[str] = Field(None, max_length=16, description="one phase (default: every phase)")
    seeds: Optional[int] = Field(None, description="seeds per shape (1-8, default 2)")


class RunIn(Schema):
    phase: Optional[str] = Field(None, max_length=16, description="one phase (default: every phase)")
    budget: Optional[int] = Field(None, description="evaluations per phase (1-2000, default 16)")
    population: Optional[int] = Field(None, description="candidates per generation (2-64, default 8)")
    confirm: Optional[int] = Field(None, description="best candidates re-measured at the end (0-8, default 3)")
    peers: Optional[bool] = Field(None, description="time each phase's best against the peers (default true)")
    tune: Optional[int] = Field(None, description="first tune each fusion group alone at this many points "
                                                  "(0-64, default 0: off); the search starts from the composed point")


class BreakdownIn(Schema):
    phase: Optional[str] = Field(None, max_length=16, description="one phase (default: every phase)")
    seeds: Optional[int] = Field(None, description="seeds per group (1-8, default 2)")
    quick: Optional[bool] = Field(None, description="fewer timed calls per group")
    whole: Optional[bool] = Field(None, description="also time the whole phase at the same knobs (default true)")


def _job(request, name: str, action: str, options: dict):
    from int21web.ops import jobs
    user = need(request, "engineer", f"starting an engine {action}")
    try:
        job = jobs.job_start(name=name, action=action, options=options, user=user)
    except jobs.JobRefused as exc:
        raise ApiError(exc.status, exc.message, exc.field) from None
    return Status(202, jobs.job_view(job))


@router.post("/engines/{name}/check", response={202: dict[str, Any], **o.WRITE_ERRORS}, tags=["engines"],
             summary="Judge each phase at every shape it was imported at, not timed (engineer; a job)")
def engine_check(request, name: str, payload: Optional[CheckIn] = None):
    return _job(request, name, "check", payload.dict() if payload else {})


@router.post("/engines/{name}/greedy", response={202: dict[str, Any], **o.WRITE_ERRORS}, tags=["engines"],
             summary="The greedy-decode check against the torch model (engineer; a job)")
def engine_greedy(request, name: str):
    return _job(request, name, "greedy", {})


@router.post("/engines/{name}/run", response={202: dict[str, Any], **o.WRITE_ERRORS}, tags=["engines"],
             summary="Search each phase with the swarm, then time the best against the peers (engineer; a job)")
def engine_run(request, name: str, payload: Optional[RunIn] = None):
    return _job(request, name, "run", payload.dict() if payload else {})


@router.post("/engines/{name}/breakdown", response={202: dict[str, Any], **o.WRITE_ERRORS}, tags=["engines"],
             summary="Time each fusion group on its own at the phase's best knobs (engineer; a job)")
def engine_breakdown(request, name: str, payload: Optional[BreakdownIn] = None):
    return _job(request, name, "breakdown", payload.dict() if payload else {})


@router.get("/engines/{name}/jobs", response={200: list[dict[str, Any]], **o.ERRORS}, tags=["engines"],
            summary="An engine's jobs, newest first")
def engine_jobs(request, name: str):
    from int21web.ops import jobs
    need(request, "viewer", "reading engine jobs")
    from int21web.ops import models as m
    row = m.Engine.objects.filter(name=name).first()
    if row is None:
        raise not_found("engine", repr(name))
    return [jobs.job_view(j) for j in row.jobs.select_related("engine", "created_by")[:50]]


@router.get("/engine-jobs/{job_id}", response={200: dict[str, Any], **o.ERRORS}, tags=["engines"],
            summary="One engine job: its state, progress and result")
def engine_job(request, job_id: int):
    from int21web.ops import jobs
    need(request, "viewer", "reading engine jobs")
    from int21web.ops import models as m
    job = m.EngineJob.objects.select_related("engine", "created_by").filter(pk=job_id).first()
    if job is None:
        raise not_found("engine job", job_id)
    return jobs.job_view(job)
