"""/api/goals: saved goals and their design spaces."""
from __future__ import annotations

from typing import Optional

from django.db import transaction
from ninja import Query, Router, Status

from int21web.api import outputs as o
from int21web.api import selectors
from int21web.api.auth import need
from int21web.api.errors import not_found
from int21web.api.schemas import GoalCheckIn, GoalIn, Id, goal_of
from int21web.runs import models as m
from int21web.runs import services

router = Router(tags=["goals"])


def goal_row(goal_id: int) -> m.Goal:
    row = m.Goal.objects.select_related("created_by").filter(pk=goal_id).first()
    if row is None:
        raise not_found("goal", goal_id)
    return row


@router.get("/goals", response={200: list[o.GoalOut], **o.ERRORS}, summary="List saved goals")
def goal_list(request, workload: Optional[str] = Query(None, max_length=64),
              target: Optional[str] = Query(None, max_length=32),
              q: str = Query("", max_length=200, description="words of the name"),
              owner: str = Query("", max_length=150), archived: bool = Query(False, description="archived ones only")):
    need(request, "viewer", "reading goals")
    return selectors.goals(workload=workload, target=target, q=q, owner=owner, archived=archived)


@router.post("/goals", response={201: o.GoalOut, **o.ERRORS}, summary="Create a goal (engineer)")
def goal_create(request, payload: GoalIn):
    user = need(request, "engineer", "creating a goal")
    row = services.goal_save(name=payload.name, goal=goal_of(payload), owner=user,
                             required_approvals=payload.required_approvals)
    return Status(201, selectors.goal_json(row))


@router.post("/goals/validate", response={200: o.CheckOut, **o.ERRORS},
             summary="Check a goal and its design space without saving it")
def goal_validate(request, payload: GoalCheckIn):
    need(request, "viewer", "checking a goal")
    goal = goal_of(payload)
    from swarm.goals import check_goal
    check_goal(goal)
    space = services.space_of(goal)
    return {"ok": True, "space": space.to_json(), "space_size": space.size()}


@router.get("/goals/{goal_id}", response={200: o.GoalOut, **o.ERRORS}, summary="A goal")
def goal_get(request, goal_id: Id):
    need(request, "viewer", "reading goals")
    return selectors.goal_json(goal_row(goal_id))


@router.put("/goals/{goal_id}", response={200: o.GoalOut, **o.ERRORS},
            summary="Replace a goal (engineer; same body as create)")
def goal_update(request, goal_id: Id, payload: GoalIn):
    need(request, "engineer", "editing a goal")
    with transaction.atomic():
        row = services.goal_save(name=payload.name, goal=goal_of(payload), row=goal_row(goal_id),
                                 required_approvals=payload.required_approvals)
    return selectors.goal_json(row)


@router.post("/goals/{goal_id}/clone", response={201: o.GoalOut, **o.ERRORS}, summary="Copy a goal (engineer)")
def goal_clone(request, goal_id: Id):
    user = need(request, "engineer", "cloning a goal")
    return Status(201, selectors.goal_json(services.goal_clone(goal_row=goal_row(goal_id), owner=user)))


@router.get("/goals/{goal_id}/space", response={200: o.SpaceOut, **o.ERRORS},
            summary="The design space a run of this goal searches")
def goal_space(request, goal_id: Id):
    need(request, "viewer", "reading goals")
    from int21web.runs.store import goal_from
    space = services.space_of(goal_from(goal_row(goal_id).spec))
    return {"space": space.to_json(), "space_size": space.size()}




