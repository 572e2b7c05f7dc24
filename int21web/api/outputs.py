"""What the API answers, for the OpenAPI schema (client generators, /api/docs). Documented
fields are typed; a field added to a selector later still comes through (extra="allow")
until it is documented here."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict


class Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class Error(Out):
    error: str
    field: Optional[str] = None
    role: Optional[str] = None


class Me(Out):
    username: str
    roles: list[str]


class GoalOut(Out):
    id: int
    name: str
    required_approvals: int
    created_by: Optional[str]
    created_at: Optional[str]
    spec: dict[str, Any]
    runs: list[int]
    archived_at: Optional[str] = None


class SpaceOut(Out):
    space: dict[str, Any]
    space_size: int


class CheckOut(SpaceOut):
    ok: bool


class Progress(Out):
    generation: int
    evaluated: int
    budget: int
    percent: int
    by_state: dict[str, int]
    by_status: dict[str, int]


class CandidateSummary(Out):
    id: int
    run: int
    generation: int
    agent: str
    state: str
    status: str
    score: float
    params: dict[str, Any]
    parents: list[Any]
    rationale: str
    median_ms: Optional[float]
    speedup: dict[str, Any]
    reason: str
    created_at: Optional[str]
    evaluated_at: Optional[str]


class Workers(Out):
    live: bool
    reason: str
    workers: list[Any]


class RunOut(Out):
    id: int
    goal: Optional[int]
    workload: Optional[str]
    target: Optional[str]
    state: str
    finish_reason: str
    started_by: Optional[str]
    created_at: Optional[str]
    updated_at: Optional[str]
    event_seq: int
    progress: Progress
    best: Optional[CandidateSummary]


class GenerationOut(Out):
    index: int
    allocation: dict[str, Any]
    summary: dict[str, Any]
    by_state: dict[str, int]


class RunDetail(RunOut):
    generations: list[GenerationOut]
    spec: dict[str, Any]
    agent_stats: dict[str, Any]
    active_seconds: float
    stagnant: int
    fingerprint: str
    llm_usage: dict[str, Any]
    workers: Workers


class EventOut(Out):
    seq: int
    kind: str
    data: dict[str, Any]
    at: Optional[str]


class GuidanceOut(Out):
    id: int
    run: int
    directive: dict[str, Any]
    author: str
    created_at: Optional[str]


class EvaluationOut(Out):
    attempt: int
    status: str
    worker: str
    started_at: Optional[str]
    finished_at: Optional[str]
    outcome: Optional[dict[str, Any]]


class CommentOut(Out):
    id: int
    candidate: int
    author: str
    body: str
    created_at: Optional[str]


class CandidateDetail(CandidateSummary):
    source: str
    diff: str
    key: str
    result: Optional[dict[str, Any]]
    meta: dict[str, Any]
    evaluations: list[EvaluationOut]
    reports: Optional[dict[str, Any]] = None
    comments: Optional[list[CommentOut]] = None


class ReviewOut(Out):
    id: int
    reviewer: str
    verdict: str
    comment: str
    status: str
    score: float
    created_at: Optional[str]
    dismissed_at: Optional[str]
    dismissed_reason: Optional[str]


class ProposalOut(Out):
    id: int
    candidate: int
    run: int
    workload: Optional[str]
    target: Optional[str]
    state: str
    reason: str
    note: str
    shape_bucket: str
    required_approvals: int
    approvals: int
    proposed_by: Optional[str]
    recheck_evaluation: Optional[int]
    kernel: Optional[int]
    created_at: Optional[str]
    updated_at: Optional[str]
    reviews: list[ReviewOut]
    audit: Optional[list[dict[str, Any]]] = None


class KernelOut(Out):
    id: int
    workload: str
    target: str
    version: int
    shape_bucket: str
    champion: bool
    candidate: Optional[int]
    proposal: Optional[int]
    score: float
    params: dict[str, Any]
    promoted_by: str
    created_at: Optional[str]
    download: str
    source: Optional[str] = None
    manifest: Optional[dict[str, Any]] = None


# what every endpoint may answer besides its success (documented once, used by the routes)
ERRORS = {400: Error, 401: Error, 403: Error, 404: Error}
WRITE_ERRORS = {**ERRORS, 409: Error}
