"""What a model is told: the workload's contract, a parent's stage reports, the run's
leaderboard, lessons and guidance, as short plain text (the prompt files hold the wording)."""
from __future__ import annotations

import json

from swarm.llm.prompts import render

MAX_REPORT = 6000


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def arguments(workload, shape) -> str:
    outs = workload.out_shapes(shape) if shape is not None else {}
    dims = shape.as_dict() if shape is not None else {}
    lines = []
    for a in workload.args:
        if a.kind == "out":
            lines.append(f"  - `{a.name}`: output, float32, shape {outs.get(a.name, '?')} at the timed shape")
        elif a.kind == "in":
            lines.append(f"  - `{a.name}`: input, float32 (read-only: writing an input is a failure)")
        elif a.kind == "dim":
            lines.append(f"  - `{a.name}`: int64_t dimension ({dims.get(a.name, '?')} at the timed shape)")
        else:
            lines.append(f"  - `{a.name}`: float scalar")
    return "\n".join(lines)


def report(outcome: dict | None, result=None) -> str:
    """The harness's findings for one candidate, the failing stage in full."""
    if not outcome and result is None:
        return "Not evaluated (this is the seed template)."
    outcome = outcome or {}
    status = outcome.get("status") or getattr(result, "status", "?")
    reason = outcome.get("reason") or getattr(result, "reason", "")
    lines = [f"Verdict: {status} — {reason}"]
    for st in outcome.get("stages", []) or (getattr(result, "stages", None) or []):
        lines.append(f"- {st.get('name')}: {st.get('status')}" + (f" — {st['summary']}" if st.get("summary") else ""))
        if st.get("status") == "failed" and st.get("details"):
            lines.append(_clip(json.dumps(st["details"], default=str), 3000))
    timings = outcome.get("timings") or {}
    if timings:
        lines.append("Timings (median ms): " + ", ".join(
            f"{k} {v.get('median_ms', 0):.4g}" for k, v in timings.items() if isinstance(v, dict)))
    speedup = outcome.get("speedup") or getattr(result, "speedup", {}) or {}
    if speedup:
        lines.append("Speedup vs baselines: " + ", ".join(f"{k} {v:.3g}x" for k, v in speedup.items()))
    if outcome.get("resources"):
        lines.append("Resources: " + _clip(json.dumps(outcome["resources"], default=str), 800))
    for note in outcome.get("notes", [])[:5]:
        lines.append(f"Note: {note}")
    return _clip("\n".join(lines), MAX_REPORT)


def leaderboard(ctx, k: int = 5) -> str:
    rows = [f"- #{c.id} by {c.agent}: {c.score:.3g}x, {c.result.median_ms or 0:.4g} ms, "
            f"{', '.join(f'{p}={v}' for p, v in c.params.items())}"
            + (" (own source)" if c.meta.get("mode") else "") for c in ctx.elites[:k]]
    failed = [c for c in ctx.history[-20:] if c.result and not c.result.ok][-3:]
    rows += [f"- #{c.id} by {c.agent} failed: {c.result.status} — {c.result.reason[:160]}" for c in failed]
    return "\n".join(rows) or "Nothing has been evaluated yet."


def lessons(ctx, k: int = 12) -> str:
    rows = [f"- {lsn.text}" + (f" [evidence: {', '.join(f'#{e}' for e in lsn.evidence[:6])}]" if lsn.evidence else "")
            for lsn in ctx.lessons if lsn.kind != "variant"][:k]
    return "\n".join(rows) or "None yet."


def guidance(ctx) -> str:
    return "\n".join(f"- {n}" for n in ctx.notes) or "None."


def hardware(fingerprint: dict | None) -> str:
    """Where the parent was measured, as the evaluating worker reported it."""
    if not fingerprint:
        return "not reported yet"
    parts = []
    for key, value in fingerprint.items():
        if isinstance(value, list):
            value = " ".join(str(v) for v in value[:24])
        if isinstance(value, (str, int, float)) and str(value):
            parts.append(f"{key}: {value}")
    return _clip("; ".join(parts), 600)


def _tolerance(goal, wl):
    override = getattr(goal, "tolerance", None)
    if override:
        from kernels.spec import Tolerance
        return Tolerance(**override)
    return wl.tolerance


def coder_task(ctx, parent_source: str, parent_params: dict, parent_label: str, outcome: dict | None,
               result=None, focus: str = "") -> str:
    wl, goal = ctx.workload, ctx.goal
    shape = ctx.shapes[0] if ctx.shapes else None
    checks = sorted({s.label() for _, s in wl.shapes.correctness()})
    baselines = ", ".join(b.name for b in wl.baselines.get(goal.target, ()) if b.default) or "none"
    macros = "\n".join(f"- {p.name} = {parent_params.get(p.name, p.default_value())!r}: "
                       f"{p.help or p.kind} (values {p.values()})" for p in ctx.space.params
                       if p.kind != "variant") or "none"
    vp = ctx.template.variant_param
    variant = (f"The parent is the `{parent_params.get(vp)}` algorithm variant (variants are whole sources, "
               f"not macros; the others: {', '.join(str(v) for v in ctx.space.param(vp).values() if v != parent_params.get(vp))})."
               if vp and vp in ctx.space.names else "")
    compiler = ("gcc -O3 -march=native -fopenmp, C11, no -ffast-math" if goal.target == "cpu"
                else "nvcc for the goal's GPU architecture; launch geometry from the macros")
    return render("coder_task", target=goal.target, workload=wl.name, description=wl.description,
                  signature=wl.signature(goal.target), arguments=arguments(wl, shape),
                  shapes=", ".join(s.label() for s in ctx.shapes) or "the typical shapes",
                  check_shapes=", ".join(checks) or "none", distributions=", ".join(wl.distributions),
                  tolerance=_tolerance(goal, wl).describe(), metric=goal.metric,
                  baselines=baselines, compiler=compiler, macros=macros, variant=variant,
                  hardware=hardware((outcome or {}).get("fingerprint")), parent_label=parent_label,
                  lang="cuda" if goal.target == "cuda" else "c", parent_source=parent_source.rstrip("\n"),
                  report=report(outcome, result), leaderboard=leaderboard(ctx), lessons=lessons(ctx),
                  guidance=guidance(ctx), focus=focus)
