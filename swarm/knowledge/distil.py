"""From a run's history to lessons: best configs, parameter effects, failure patterns."""
from __future__ import annotations

import statistics
from collections import defaultdict

from swarm.knowledge import shape_bucket
from swarm.types import Candidate, Lesson


def ranked(history: list[Candidate]) -> list[Candidate]:
    """Correct candidates best first. Once a run has confirmed any (re-measured them, see
    ``Engine._confirm``), the confirmed lead: a single draw still above their medians after the
    confirmation passes is an unchecked optimist, not a best to report or to learn from."""
    ok = sorted((c for c in history if c.result is not None and c.result.ok), key=lambda c: -c.score)
    confirmed = [c for c in ok if c.result.measurements]
    return confirmed + [c for c in ok if not c.result.measurements] if confirmed else ok


def distil(history: list[Candidate], *, workload: str, target: str, fingerprint: str, shapes: list,
           run_id: int | None = None, space=None) -> list[Lesson]:
    evaluated = [c for c in history if c.result is not None]
    if not evaluated:
        return []
    bucket = shape_bucket(shapes[0]) if shapes else ""
    base = dict(workload=workload, target=target, fingerprint=fingerprint, shape_bucket=bucket, run_id=run_id)
    lessons = []
    for rank_, c in enumerate(ranked(evaluated)[:3]):
        lessons.append(Lesson(kind="best_config", text=(
            f"#{rank_ + 1} at {shapes[0] if shapes else 'these shapes'}: {_fmt(c.params)} "
            f"scored {c.score:.2f}x ("
            + (f"{c.result.median_ms:.3f} ms" if c.result.median_ms is not None else "not timed") + ")"),
            data={"subject": f"rank{rank_ + 1}", "params": c.params, "score": c.score,
                  "median_ms": c.result.median_ms, "speedup": c.result.speedup,
                  "custom_source": c.source if c.agent.startswith("llm") else None},
            evidence=[c.id], **base))
    lessons += _param_effects(evaluated, base)
    lessons += _failure_patterns(evaluated, base, shapes)
    return lessons


def _fmt(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _param_effects(evaluated: list[Candidate], base: dict) -> list[Lesson]:
    ok = [c for c in evaluated if c.result.ok and c.score > 0]
    if len(ok) < 6:
        return []
    overall = statistics.median(c.score for c in ok)
    by_value = defaultdict(list)
    for c in ok:
        for k, v in c.params.items():
            by_value[(k, v)].append(c)
    out = []
    params = sorted({k for k, _ in by_value})
    for name in params:
        rows = {v: cs for (k, v), cs in by_value.items() if k == name and len(cs) >= 2}
        if len(rows) < 2:
            continue
        effects = {str(v): statistics.median(c.score for c in cs) / overall for v, cs in rows.items()}
        best_v = max(effects, key=effects.get)
        worst_v = min(effects, key=effects.get)
        if effects[best_v] / max(effects[worst_v], 1e-9) < 1.15:
            continue
        evidence = [c.id for cs in rows.values() for c in cs][:20]
        out.append(Lesson(kind="param_effect", text=(
            f"{name}={best_v} pays off (median {effects[best_v]:.2f}x the run's median score), "
            f"{name}={worst_v} does not ({effects[worst_v]:.2f}x)"),
            data={"subject": name, "param": name, "effects": effects, "best": best_v},
            evidence=evidence, **base))
    return out


def _failure_patterns(evaluated: list[Candidate], base: dict, shapes: list) -> list[Lesson]:
    out = []
    by_value = defaultdict(list)
    for c in evaluated:
        for k, v in c.params.items():
            by_value[(k, v)].append(c)
    for (k, v), cs in sorted(by_value.items(), key=lambda kv: str(kv[0])):
        failed = [c for c in cs if not c.result.ok]
        if len(failed) >= 3 and len(failed) / len(cs) >= 0.75:
            statuses = sorted({c.result.status for c in failed})
            out.append(Lesson(kind="failure_pattern", text=(
                f"{k}={v} → {'/'.join(statuses)} in {len(failed)} of {len(cs)} candidates "
                f"(e.g. {failed[0].result.reason[:120]})"),
                data={"subject": f"{k}={v}", "param": k, "value": v, "statuses": statuses,
                      "fail_rate": len(failed) / len(cs)},
                evidence=[c.id for c in failed][:20], **base))
    return out
