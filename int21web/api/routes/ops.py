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
