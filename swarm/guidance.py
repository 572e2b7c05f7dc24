"""Human guidance: structured directives that take effect at the next generation.

    {"op": "pin", "param": "VEC", "value": 16}
    {"op": "forbid", "param": "THREADS", "value": 1}
    {"op": "narrow", "param": "CHUNK", "values": [1, 4]}     (ints: or "low"/"high")
    {"op": "favour", "agent": "tuner"}   {"op": "mute", "agent": "explorer"}
    {"op": "target", "speedup": 2.0}     {"op": "stop"}      {"op": "note", "text": "…"}
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kernels.spec import DesignSpace

OPS = ("pin", "forbid", "narrow", "favour", "mute", "target", "stop", "note")


class GuidanceError(ValueError):
    """A directive that cannot apply; the message says which field is wrong and why."""


def validate(directive: dict, space: DesignSpace, agents: list[str]) -> dict:
    if not isinstance(directive, dict) or directive.get("op") not in OPS:
        raise GuidanceError(f"op must be one of {', '.join(OPS)}")
    op = directive["op"]
    if op in ("pin", "forbid", "narrow"):
        name = directive.get("param")
        if name not in space.names:
            raise GuidanceError(f"param: unknown param {name!r}; the space has {', '.join(space.names)}")
        p = space.param(name)
        if op in ("pin", "forbid"):
            if "value" not in directive or p.check(directive["value"]):
                raise GuidanceError(f"value: {p.check(directive.get('value')) or 'required'}")
        else:
            values = directive.get("values")
            if values is None and p.kind == "int" and ("low" in directive or "high" in directive):
                lo, hi = directive.get("low", p.low), directive.get("high", p.high)
                values = [v for v in p.values() if lo <= v <= hi]
            if not values or any(p.check(v) for v in values):
                raise GuidanceError(f"values: must be a non-empty list of legal {name} values {p.values()}")
            directive = {**directive, "values": list(values)}
    elif op in ("favour", "mute"):
        if directive.get("agent") not in agents:
            raise GuidanceError(f"agent: must be one of the run's agents ({', '.join(agents)})")
    elif op == "target":
        s = directive.get("speedup")
        if not isinstance(s, (int, float)) or s <= 0:
            raise GuidanceError("speedup: must be a positive number")
    elif op == "note":
        if not str(directive.get("text", "")).strip():
            raise GuidanceError("text: a note needs some text")
    return directive


@dataclass
class Steering:
    """The sum of all directives so far, applied to the space and the agent team."""

    allowed: dict = field(default_factory=dict)   # param -> set of allowed values
    favoured: set = field(default_factory=set)
    muted: set = field(default_factory=set)
    target_speedup: float | None = None
    stop: bool = False
    notes: list = field(default_factory=list)

    def apply(self, directive: dict, space: DesignSpace) -> str:
        op = directive["op"]
        if op in ("pin", "forbid", "narrow"):
            name = directive["param"]
            current = self.allowed.get(name, set(space.param(name).values()))
            if op == "pin":
                new = {directive["value"]}
            elif op == "forbid":
                new = current - {directive["value"]}
            else:
                new = current & set(directive["values"])
            if not new:
                return f"ignored: {name} would have no legal value left"
            self.allowed[name] = new
            return f"{name} now in {sorted(new, key=str)}"
        if op == "favour":
            self.favoured.add(directive["agent"])
            self.muted.discard(directive["agent"])
            return f"{directive['agent']} gets more slots"
        if op == "mute":
            self.muted.add(directive["agent"])
            self.favoured.discard(directive["agent"])
            return f"{directive['agent']} gets no slots"
        if op == "target":
            self.target_speedup = float(directive["speedup"])
            return f"target speedup now {self.target_speedup:g}x"
        if op == "stop":
            self.stop = True
            return "the run stops after this generation"
        self.notes.append(directive["text"])
        return "noted for the agents"

    def restrict(self, space: DesignSpace) -> DesignSpace:
        """The design space with narrowed choices (the agents sample from this one)."""
        params = []
        for p in space.params:
            if p.name not in self.allowed:
                params.append(p)
                continue
            keep = [v for v in p.values() if v in self.allowed[p.name]]
            default = p.default_value() if p.default_value() in keep else keep[0]
            kind = "variant" if p.kind == "variant" else "choice"
            params.append(replace(p, kind=kind, choices=tuple(keep), default=default, low=0, high=0))
        return DesignSpace(tuple(params), space.constraints)

    def permits(self, params: dict) -> bool:
        return all(params.get(k) in v for k, v in self.allowed.items())
