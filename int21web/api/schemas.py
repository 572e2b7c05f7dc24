"""What the API accepts. Unknown fields are refused (a typo is an error, not a silent
default); values the domain checks itself (workload, shapes, space, pins, directives) are
passed on to those checks, so the API, the pages and the CLI give the same messages."""
from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from swarm.types import Budget, Goal

MAX_ID = 2**63 - 1
MAX_INT_VALUES = 10_000
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
Seq = Annotated[int, Field(ge=0, le=MAX_ID)]
Scalar = Union[bool, int, float, str]


def _default(cls, name: str):
    f = cls.__dataclass_fields__[name]
    if f.default is not dataclasses.MISSING:
        return Field(f.default)
    return Field(default_factory=f.default_factory)


class In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParamIn(In):
    """One param of the engineer's space: a template param narrowed (left out: pinned at its default)."""
    name: str = Field(max_length=64)
    kind: Optional[Literal["int", "choice", "bool", "variant"]] = None
    low: Optional[int] = Field(None, ge=-(2**31), le=2**31)
    step: Optional[int] = Field(None, ge=1, le=2**31)
    high: Optional[int] = Field(None, ge=-(2**31), le=2**31)
    choices: Optional[Union[list[Union[int, str]], str]] = Field(None, max_length=1000)

    @field_validator("high")
    @classmethod
    def _span(cls, high, info):
        # the space is checked value by value: a range of millions would hold the request for minutes
        low, step = info.data.get("low"), info.data.get("step") or 1
        if high is not None and low is not None and (high - low) // step + 1 > MAX_INT_VALUES:
            raise ValueError(f"an int param may span at most {MAX_INT_VALUES:,} values (raise step or narrow "
                             f"low..high)")
        return high


class ConstraintIn(In):
    expr: str = Field(max_length=500, description="e.g. 'cols % VEC == 0': params and shape dims")
    message: str = Field("", max_length=300)


class SpaceIn(In):
    params: list[ParamIn] = Field(default_factory=list, max_length=64)
    constraints: list[Union[ConstraintIn, Annotated[str, Field(max_length=500)]]] = Field(
        default_factory=list, max_length=64)


class BudgetIn(In):
    evaluations: int = Field(_default(Budget, "evaluations").default, ge=1, le=10_000)
    wall_seconds: Optional[float] = Field(None, gt=0, le=30 * 86400)
    target_speedup: Optional[float] = Field(None, gt=0, le=1e6)
    stagnation_generations: Optional[int] = Field(_default(Budget, "stagnation_generations").default,
                                                  ge=1, le=10_000)


class ToleranceIn(In):
    atol: float = Field(1e-4, ge=0, le=1e6)
    rtol: float = Field(1e-4, ge=0, le=1e6)
    rel_rmse: Optional[float] = Field(None, ge=0, le=1e6)


Shape = Annotated[str, Field(max_length=100)]


class _GoalFields(In):
    """``swarm.types.Goal`` with its limits; a field Goal gains later is accepted untyped
    (see ``GoalSpec`` below) until it is given a type here."""
    workload: str = Field(max_length=64)
    target: str = Field(_default(Goal, "target").default, max_length=32)
    shapes: list[Shape] = Field(default_factory=list, max_length=16,
                                description="shapes that count, e.g. ['4096x4096']; the first is timed")
    metric: Literal["speedup", "time"] = "speedup"
    budget: BudgetIn = Field(default_factory=BudgetIn)
    team: list[Annotated[str, Field(max_length=40)]] = Field(
        default_factory=Goal.__dataclass_fields__["team"].default_factory, max_length=32)
    population: int = Field(_default(Goal, "population").default, ge=1, le=64)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    cold: bool = False
    pins: dict[Annotated[str, Field(max_length=64)], Scalar] = Field(default_factory=dict)
    eval_settings: dict[Annotated[str, Field(max_length=64)], Any] = Field(default_factory=dict)
    held_out: list[Shape] = Field(default_factory=list, max_length=16)
    tolerance: Optional[ToleranceIn] = None
    space: Optional[SpaceIn] = None
    confirm_top: int = Field(_default(Goal, "confirm_top").default, ge=0, le=64,
                             description="best candidates re-measured before the run ends (0: none)")


_untyped = {f.name: (Any, None) for f in dataclasses.fields(Goal) if f.name not in _GoalFields.model_fields}
GoalSpec = create_model("GoalSpec", __base__=_GoalFields, **_untyped)


class GoalIn(GoalSpec):
    """A saved goal: its name, approvals needed before promotion, and the goal itself (flat)."""
    name: str = Field(min_length=1, max_length=200)
    required_approvals: int = Field(1, ge=1, le=10)


class GoalCheckIn(GoalSpec):
    """A goal to check: the create body, ``name`` and ``required_approvals`` optional."""
    name: Optional[str] = Field(None, max_length=200)
    required_approvals: Optional[int] = Field(None, ge=1, le=10)


def goal_of(payload: BaseModel) -> Goal:
    """The domain Goal of a validated body; fields not sent take Goal's own defaults."""
    data = payload.model_dump(exclude_unset=True, exclude={"name", "required_approvals"})
    return Goal.from_json(data)


Overrides = create_model("Overrides", __base__=In, **{
    name: (Optional[f.annotation], None) for name, f in GoalSpec.model_fields.items()
    if name not in ("workload", "target")})


class RunIn(In):
    goal_id: Id
    overrides: Optional[Overrides] = Field(None, description="goal fields changed for this run only "
                                                             "(not workload or target), e.g. {'seed': 3}")


class GuidanceIn(In):
    """A directive (swarm.guidance): pin/forbid {param, value}, narrow {param, values | low/high},
    favour/mute {agent}, target {speedup}, stop, note {text}."""
    op: Literal["pin", "forbid", "narrow", "favour", "mute", "target", "stop", "note"]
    param: Optional[str] = Field(None, max_length=64)
    value: Optional[Scalar] = None
    values: Optional[list[Scalar]] = Field(None, max_length=1000)
    low: Optional[int] = None
    high: Optional[int] = None
    agent: Optional[str] = Field(None, max_length=40)
    speedup: Optional[float] = Field(None, gt=0, le=1e6)
    text: Optional[str] = Field(None, max_length=2000)

    def directive(self) -> dict:
        return self.model_dump(exclude_none=True)


class CommentIn(In):
    body: str = Field(min_length=1, max_length=10000)


class NoteIn(In):
    note: str = Field("", max_length=5000, description="why this candidate should ship")


class ReviewIn(In):
    comment: str = Field("", max_length=10000)
