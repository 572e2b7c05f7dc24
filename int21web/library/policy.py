"""The gate's rules, pure: data in, a verdict and its sentence out (no queries, no writes).
``services`` applies them when it writes; ``selectors`` and the API when they show whether a
candidate may be proposed."""
from __future__ import annotations

from kernels import library as disk
from kernels import workloads

# Timings on a shared host move by several percent between sessions, sometimes by more than
# 10 %; a speedup that moves by more than this is a different result, not noise.
SCORE_TOLERANCE = 0.25


def goal_met(result: dict, *, candidate_id: int, spec: dict) -> tuple[bool, str]:
    """Does a result ({status, speedup[, score, measurements]}) meet the goal of its run
    (``spec``)? Status ok, and faster than the strongest baseline measured alongside it
    (speedup > 1), or at least the goal's target speedup; a confirmed result is judged by its
    score (the median of its measurements), not its first. The sentence says why, naming
    candidate #``candidate_id``."""
    if result["status"] != "ok":
        return False, f"candidate #{candidate_id} is {result['status'] or 'not evaluated yet'}, not ok"
    speed = result["speedup"]
    if not speed:
        return False, f"candidate #{candidate_id} was not timed against any baseline"
    name, worst = min(speed.items(), key=lambda kv: kv[1])
    measured = result.get("measurements") or []
    held = ""
    if len(measured) > 1 and spec.get("metric", "speedup") == "speedup":
        # confirmed: its score, the median of its measurements, is the one number that counts
        worst = result["score"]
        held = f", the median of {len(measured)} measurements ({min(measured):.2f}–{max(measured):.2f}x)"
    target = (spec.get("budget") or {}).get("target_speedup")
    if worst > 1.0 or (target is not None and worst >= target):
        return True, f"{worst:.2f}x {name} (the strongest baseline{held})"
    need = "more than 1x" + (f" or the goal's target {target:g}x" if target is not None else "")
    return False, (f"candidate #{candidate_id} runs at {worst:.2f}x {name} (the strongest baseline{held}); "
                   f"it needs {need}")


def differs(old: dict, new: dict, meets_goal: tuple[bool, str] = (True, "")) -> str | None:
    """Why ``new`` is a different result from ``old`` ({status, score}), or None.

    An approval says "correct, and meets its goal". A different verdict, or a result that no
    longer meets the goal, is a different result. A speed that merely moved (the best of a
    run is usually re-measured lower: it was picked as the luckiest measurement on a shared
    host) is not, while the goal is still met; ``score_moved`` says so for the audit."""
    if old["status"] != new["status"]:
        return f"status {old['status']} became {new['status']}"
    if new["status"] == "ok" and not meets_goal[0]:
        return f"it no longer meets its goal: {meets_goal[1]}"
    return None


def score_moved(old: dict, new: dict) -> str | None:
    """The audit's note when a score moved by more than SCORE_TOLERANCE (the goal still met).

    Scores are compared over the baselines both results were timed against (``speedup``
    dicts, where both carry one): the gate's re-check also times the workload's stronger
    baselines, and "slower than torch" is not "slower than it was against NumPy"."""
    a, b = _comparable(old, new), _comparable(new, old)
    if max(a, b) > 0 and abs(a - b) / max(a, b) > SCORE_TOLERANCE:
        return f"score {a:.3g} became {b:.3g} (more than {SCORE_TOLERANCE:.0%} apart; the goal is still met)"
    return None


def _comparable(result: dict, other: dict) -> float:
    """``result``'s score over the baselines ``other`` was also timed against (its score if
    either lacks a speedup per baseline, or they share none)."""
    mine, theirs = result.get("speedup") or {}, other.get("speedup") or {}
    shared = [v for k, v in mine.items() if k in theirs and v]
    return min(shared) if shared else (result.get("score") or 0.0)


def shape_bucket_of(spec: dict) -> str:
    """The library's bucket for the shape the goal timed (its first shape, else the workload's typical)."""
    wl = workloads.get(spec["workload"])
    return disk.shape_bucket(wl.goal_shapes((spec.get("shapes") or [])[:1])[0])
