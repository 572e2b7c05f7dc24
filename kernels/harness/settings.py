"""How hard an evaluation checks, and what a goal may change about it.

:class:`EvalSettings` is the harness's own dial, used by trusted callers (the CLI, tests,
benchmarks). A goal never builds one directly: :func:`from_goal` reads a goal's
``eval_settings`` against an allowlist where every key may only *tighten* the harness
(more seeds, longer timing, stricter precision, smaller limits) and never switch off
isolation, the re-check, the correctness or the sanity stage, nor raise a limit past this
host's caps (``INT21_EVAL_MAX_*``). Anything else is a :class:`SettingsError` naming the key.

The host — never a goal — may lower the floor for quick checks (``INT21_EVAL_GOAL_FLOOR=fast``:
a test suite, a demo on a slow laptop): goals there may ask for fewer seeds and timed calls
and leave out baselines, but never for less isolation, no re-check or no timing; and the
approval gate's re-check ignores every loosening (:func:`gate_settings`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields

from kernels.spec import Shape, Tolerance


class SettingsError(ValueError):
    """A goal's evaluation settings that cannot be used; ``key`` is the one at fault."""

    def __init__(self, key: str, message: str):
        super().__init__(f"eval_settings.{key}: {message}")
        self.key = key
        self.message = message


@dataclass
class EvalSettings:
    """How hard to check and how long to wait. Defaults follow HARNESS.md; goals tighten."""

    compile_timeout: float = 120.0
    run_timeout: float = 180.0
    seeds: int = 5
    shapes: tuple[Shape, ...] | None = None        # small correctness shapes (default: the workload's)
    extra_shapes: tuple[Shape, ...] = ()           # held-out and goal shapes, added to correctness
    timing_shape: Shape | None = None              # default: the workload's first typical shape
    timing: bool = True
    baselines: tuple[str, ...] | None = None       # None: the workload's default baselines
    min_calls: int = 20
    max_calls: int = 200
    timing_budget_s: float = 1.0                   # stop after min_calls once past this…
    target_rel_err: float = 0.02                   # …or once every median is this precise
    cold_cache: bool = False
    fast_math: bool = False
    memory_mb: int = 4096
    tolerance: Tolerance | None = None
    launcher: str = "zygote"                       # how baseline processes start: "zygote" | "spawn"
    recheck: bool = True
    retime: int = 2                                # more timing sessions while the host is in a slow phase
    arch: str = "sm_90"                            # CUDA/PTX: the architecture to compile for
    resource_limits: dict = field(default_factory=dict)  # CUDA: max_registers, max_shared_bytes, …
    typical_checks: bool = True                    # check every typical shape, not only the timed one
    loosened: tuple[str, ...] = ()                 # what a goal loosened, visibly (set by from_goal)


DEFAULTS = EvalSettings()
# What INT21_EVAL_GOAL_FLOOR=fast lets a goal go down to (never below: the stages still run).
FAST_FLOOR = {"seeds": 2, "min_calls": 5, "max_calls": 20, "timing_budget_s": 0.1, "retime": 0}


def _floor(name: str | None = None) -> dict:
    """The lowest value a goal may set per key on this host (the harness's defaults, unless
    the host chose the fast floor)."""
    name = name or os.environ.get("INT21_EVAL_GOAL_FLOOR", "harness").strip() or "harness"
    if name not in ("harness", "fast"):
        raise SettingsError("INT21_EVAL_GOAL_FLOOR", f"must be 'harness' or 'fast', got {name!r}")
    base = {k: getattr(DEFAULTS, k) for k in FAST_FLOOR}
    return {**base, **FAST_FLOOR, "fast": True} if name == "fast" else {**base, "fast": False}


def host_caps() -> dict:
    """The most any goal may ask of this host (set by whoever runs it, never by a goal)."""
    def env(name, default, kind=float):
        raw = os.environ.get(name, "")
        try:
            return kind(raw) if raw.strip() else default
        except ValueError:
            raise SettingsError(name, f"environment variable {name}={raw!r} is not a number") from None
    return {"run_timeout": env("INT21_EVAL_MAX_RUN_SECONDS", DEFAULTS.run_timeout),
            "compile_timeout": env("INT21_EVAL_MAX_COMPILE_SECONDS", DEFAULTS.compile_timeout),
            "memory_mb": env("INT21_EVAL_MAX_MEMORY_MB", DEFAULTS.memory_mb, int),
            "max_calls": 5000, "seeds": 50, "timing_budget_s": 60.0, "retime": 5}


def _number(key, value, *, kind=float, low=None, high=None, why_low="", why_high=""):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and isinstance(value, float)):
        raise SettingsError(key, f"must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    if low is not None and value < low:
        raise SettingsError(key, why_low or f"must be at least {low:g}, got {value:g}")
    if high is not None and value > high:
        raise SettingsError(key, why_high or f"must be at most {high:g}, got {value:g}")
    return kind(value)


# Keys a goal may never set, with the sentence that says why.
REFUSED = {
    "isolate": "the sandbox cannot be switched off (no network, an unprivileged user, seccomp)",
    "recheck": "implausible timings are always re-checked in a fresh process",
    "timing": "every candidate is timed against the baselines (the sanity stage needs it)",
    "launcher": "how sandbox processes start is the harness's choice",
    "seccomp": "the system-call filter cannot be switched off",
    "typical_checks": "every typical shape is always checked for correctness",
    "shapes": "set the goal's shapes (and held-out shapes) instead",
    "extra_shapes": "set the goal's held-out shapes instead",
    "timing_shape": "the goal's first shape is the one timed",
    "tolerance": "set the goal's tolerance instead (a looser one is shown on the review page)",
    "loosened": "set by the harness",
}


def from_goal(values: dict, *, workload=None, target: str = "cpu", floor: str | None = None) -> EvalSettings:
    """The settings for a goal's ``eval_settings`` (a JSON object). Raises SettingsError."""
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise SettingsError("eval_settings", "must be an object of setting → value")
    caps = host_caps()
    floor = _floor(floor)
    out = EvalSettings()
    loosened = []
    for key, value in values.items():
        if not isinstance(key, str):
            raise SettingsError(str(key), "setting names are strings")
        if key in REFUSED:
            raise SettingsError(key, f"a goal may not set it: {REFUSED[key]}")
        if key == "seeds":
            out.seeds = _number(key, value, kind=int, low=floor["seeds"], high=caps["seeds"],
                                why_low=f"may only be raised (at least {floor['seeds']} seeds are always checked)")
        elif key in ("run_timeout", "compile_timeout"):
            setattr(out, key, _number(key, value, low=1, high=caps[key],
                                      why_high=f"{value!r} s is above this host's cap of {caps[key]:g} s"))
        elif key == "memory_mb":
            out.memory_mb = _number(key, value, kind=int, low=64, high=caps["memory_mb"],
                                    why_high=f"{value!r} MiB is above this host's cap of {caps['memory_mb']} MiB")
        elif key == "min_calls":
            out.min_calls = _number(key, value, kind=int, low=floor["min_calls"], high=caps["max_calls"],
                                    why_low=f"may only be raised (at least {floor['min_calls']} timed calls)")
        elif key == "max_calls":
            out.max_calls = _number(key, value, kind=int, low=floor["max_calls"], high=caps["max_calls"],
                                    why_low=f"may only be raised (at least {floor['max_calls']})")
        elif key == "timing_budget_s":
            out.timing_budget_s = _number(key, value, low=floor["timing_budget_s"], high=caps["timing_budget_s"],
                                          why_low=f"may only be raised (at least {floor['timing_budget_s']:g} s)")
        elif key == "target_rel_err":
            out.target_rel_err = _number(key, value, low=0.001, high=DEFAULTS.target_rel_err,
                                         why_high=f"may only be lowered (at most {DEFAULTS.target_rel_err:g})")
        elif key == "retime":
            out.retime = _number(key, value, kind=int, low=floor["retime"], high=caps["retime"],
                                 why_low=f"may only be raised (at least {floor['retime']})")
        elif key == "cold_cache":
            out.cold_cache = _boolean(key, value)
        elif key == "fast_math":
            out.fast_math = _boolean(key, value)
            if out.fast_math:
                loosened.append("compiled with -ffast-math (IEEE semantics relaxed), as the goal allows")
        elif key == "arch":
            if not isinstance(value, str) or not re.fullmatch(r"sm_\d{2,3}a?", value):
                raise SettingsError(key, f"must name a CUDA architecture such as sm_90 or sm_90a, got {value!r}")
            out.arch = value
        elif key == "resource_limits":
            out.resource_limits = _resource_limits(value)
        elif key == "baselines":
            out.baselines = _baselines(value, workload, target, may_drop=floor["fast"])
        else:
            known = sorted(k for k in (f.name for f in fields(EvalSettings)) if k not in REFUSED) + ["baselines"]
            raise SettingsError(key, f"unknown setting (a goal may set: {', '.join(sorted(set(known)))})")
    out.loosened = tuple(loosened)
    return out


def _boolean(key, value) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(key, f"must be true or false, got {value!r}")
    return value


_LIMIT_KEYS = ("max_registers", "max_shared_bytes", "max_spill_bytes", "max_stack_bytes")


def _resource_limits(value) -> dict:
    if not isinstance(value, dict):
        raise SettingsError("resource_limits", "must be an object such as {\"max_registers\": 128}")
    out = {}
    for k, v in value.items():
        if k not in _LIMIT_KEYS:
            raise SettingsError(f"resource_limits.{k}", f"unknown limit (known: {', '.join(_LIMIT_KEYS)})")
        out[k] = _number(f"resource_limits.{k}", v, kind=int, low=0, high=1 << 20)
    return out


def _baselines(value, workload, target: str, *, may_drop: bool = False) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise SettingsError("baselines", "must be a list of baseline names")
    if workload is None:
        return tuple(value)
    known = {b.name: b for b in workload.baselines.get(target, ())}
    unknown = [v for v in value if v not in known]
    if unknown:
        raise SettingsError("baselines", f"unknown baseline {unknown[0]!r} for {workload.name} on {target} "
                                         f"(known: {', '.join(sorted(known)) or 'none'})")
    dropped = sorted(n for n, b in known.items() if b.default and n not in value)
    if dropped and not may_drop:
        raise SettingsError("baselines", f"a goal may add baselines but not drop the default ones "
                                         f"({', '.join(dropped)} would no longer be timed)")
    return tuple(value)


def gate_settings(values: dict, *, workload=None, target: str = "cpu") -> EvalSettings:
    """The approval gate's re-check: the harness's full defaults plus only the goal's
    tightenings, whatever the host's floor let the goal loosen for its search."""
    values = dict(values or {})
    tight = {}
    for key, value in values.items():
        if key in FAST_FLOOR and isinstance(value, (int, float)) and value < getattr(DEFAULTS, key):
            continue
        if key == "baselines" and workload is not None:
            defaults = [b.name for b in workload.baselines.get(target, ()) if b.default]
            value = list(dict.fromkeys(defaults + [v for v in value if isinstance(v, str)]))
        tight[key] = value
    return from_goal(tight, workload=workload, target=target, floor="harness")


def tolerance_notes(goal_tolerance: Tolerance | None, default: Tolerance) -> list[str]:
    """Sentences for a goal tolerance looser than the workload's (shown, never hidden)."""
    if goal_tolerance is None:
        return []
    notes = []
    for name in ("atol", "rtol", "rel_rmse"):
        mine, base = getattr(goal_tolerance, name), getattr(default, name)
        if mine is not None and (base is None or mine > base):
            notes.append(f"tolerance loosened by the goal: {name} {mine:g} (the workload's default is "
                         f"{'none' if base is None else f'{base:g}'})")
    return notes
