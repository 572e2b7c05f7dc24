"""An engineer's own design space for a goal: the template's params narrowed (ranges,
choices) plus extra constraints. Framework-free; the goal editor, the API and the engine
all validate through :func:`parse_space`, so a bad space gets the same message everywhere.

JSON form (``Goal.space``)::

    {"params": [{"name": "VEC", "kind": "choice", "choices": [4, 8]},
                {"name": "THREADS", "kind": "int", "low": 1, "high": 2, "step": 1}],
     "constraints": [{"expr": "cols % VEC == 0", "message": "rows split into whole vectors"}]}

A template param left out is pinned at its default; a param the template does not have is
refused (the kernel source would never see it).
"""
from __future__ import annotations

import itertools
import random
import time

from kernels.spec import Constraint, DesignSpace, Param, Shape, SpecError

ENUMERATE_LIMIT = 200_000   # spaces up to this size are checked point by point for a legal point


class SpaceError(ValueError):
    """A design space that cannot be searched. ``field`` names the offending form field,
    e.g. ``params.1.high`` or ``constraints.0.expr``."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def _int(value, field):
    if isinstance(value, bool):
        raise SpaceError(field, "must be a whole number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpaceError(field, f"must be a whole number, got {value!r}") from None


def _param(i: int, data: dict, template: DesignSpace) -> Param:
    where = f"params.{i}"
    if not isinstance(data, dict):
        raise SpaceError(where, "must be an object with name and kind")
    name = str(data.get("name", "")).strip()
    if not name:
        raise SpaceError(f"{where}.name", "a param needs a name")
    if name not in template.names:
        raise SpaceError(f"{where}.name", f"unknown param {name!r}: the kernel template has "
                                          f"{', '.join(template.names)}")
    base = template.param(name)
    kind = data.get("kind") or base.kind
    try:
        if kind == "int":
            p = Param(name, "int", low=_int(data.get("low", base.low), f"{where}.low"),
                      high=_int(data.get("high", base.high), f"{where}.high"),
                      step=_int(data.get("step", 1) or 1, f"{where}.step"))
        elif kind in ("choice", "variant"):
            raw = data.get("choices", list(base.values()))
            if isinstance(raw, str):
                raw = [c.strip() for c in raw.split(",") if c.strip()]
            choices = tuple(raw) if kind == "variant" else tuple(_int(c, f"{where}.choices") for c in raw)
            p = Param(name, kind, choices=choices)
        elif kind == "bool":
            p = Param(name, "bool")
        else:
            raise SpaceError(f"{where}.kind", "must be int, choice, bool or variant")
    except SpecError as exc:
        raise SpaceError(f"{where}.{'choices' if kind in ('choice', 'variant') else 'high'}", str(exc)) from None
    if not p.values():
        raise SpaceError(where, f"{name} has no values")
    illegal = [v for v in p.values() if base.check(v)]
    if illegal:
        raise SpaceError(f"{where}.{'choices' if p.kind in ('choice', 'variant') else 'high'}",
                         f"{base.check(illegal[0])} (the template allows {_describe(base)})")
    default = base.default_value() if base.default_value() in p.values() else p.values()[0]
    return Param(name, p.kind, low=p.low, high=p.high, step=p.step, choices=p.choices, default=default,
                 help=base.help)


def _describe(p: Param) -> str:
    if p.kind == "int":
        return f"{p.low}..{p.high} step {p.step}"
    return ", ".join(map(str, p.values()))


def parse_space(data: dict | None, template: DesignSpace, shapes: list[Shape], dims: list[str]) -> DesignSpace:
    """The searchable space for a goal, or a SpaceError naming the field at fault."""
    if not data:
        space = template
    else:
        if not isinstance(data, dict):
            raise SpaceError("space", "must be an object with params and constraints")
        rows = data.get("params") or []
        params, seen = [], set()
        for i, row in enumerate(rows):
            p = _param(i, row, template)
            if p.name in seen:
                raise SpaceError(f"params.{i}.name", f"{p.name} is listed twice")
            seen.add(p.name)
            params.append(p)
        for base in template.params:          # left out: pinned at the template's default
            if base.name not in seen:
                d = base.default_value()
                params.append(Param(base.name, "variant" if base.kind == "variant" else "choice",
                                    choices=(d,), default=d, help=base.help))
        constraints = list(template.constraints)
        names = set(t.name for t in template.params) | set(dims)
        for i, row in enumerate(data.get("constraints") or []):
            expr = row.get("expr", "") if isinstance(row, dict) else str(row)
            message = (row.get("message", "") if isinstance(row, dict) else "") or ""
            try:
                c = Constraint(str(expr), str(message))
            except SpecError as exc:
                raise SpaceError(f"constraints.{i}.expr", str(exc)) from None
            unknown = [n for n in c.names if n not in names]
            if unknown:
                raise SpaceError(f"constraints.{i}.expr",
                                 f"unknown name(s) {', '.join(unknown)}: a constraint may use the params "
                                 f"({', '.join(sorted(t.name for t in template.params))}) and the shape dims "
                                 f"({', '.join(dims)})")
            constraints.append(c)
        space = DesignSpace(tuple(params), tuple(constraints))
    if data and not _has_a_point(space, shapes):
        bad = "constraints" if (data.get("constraints") or []) else "params"
        raise SpaceError(bad, f"no point of the space ({space.size():,} combinations) satisfies every "
                              f"constraint for the shapes {', '.join(map(str, shapes)) or 'given'}: "
                              f"the constraints are impossible together")
    return space


CHECK_SECONDS = 2.0     # a validation's budget: what a keystroke in the editor may cost the server


def _has_a_point(space: DesignSpace, shapes: list[Shape]) -> bool:
    deadline = time.monotonic() + CHECK_SECONDS

    def in_time():
        if time.monotonic() > deadline:
            raise SpaceError("constraints", f"checking the design space took more than {CHECK_SECONDS:g} s: "
                                            "simplify the constraints or narrow the params")
    try:
        if space.size() <= ENUMERATE_LIMIT:
            names = space.names
            for i, values in enumerate(itertools.product(*(p.values() for p in space.params))):
                if i % 64 == 0:
                    in_time()
                if not space.violations(dict(zip(names, values)), shapes):
                    return True
            return False
        rng = random.Random(0)
        for i in range(0, 20_000, 200):
            in_time()
            if space.sample(rng, shapes, tries=200) is not None:
                return True
        return False
    except SpecError as exc:
        raise SpaceError("constraints", str(exc)) from None


def goal_space(goal, workload, template, shapes: list[Shape]) -> DesignSpace:
    """The space a run of ``goal`` searches: the engineer's own, else the template's."""
    dims = list(workload.shapes.typical[0].as_dict())
    return parse_space(goal.space, template.space, shapes, dims)
