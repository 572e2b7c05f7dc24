"""Kernels the swarm wrote itself that won: they become algorithm variants of the design
space of later runs (lesson kind ``variant``, with the source and its provenance), so any
agent — the variant switcher, the tuner, the seeded agent, with or without a model — can
start from them.

A winner is a correct candidate with its own source (not a template's) that is the best of
its run. Its variant is named ``llm_r<run>_c<candidate>``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kernels.spec import DesignSpace, Param, Template
from swarm.knowledge import shape_bucket
from swarm.types import Candidate, Lesson


@dataclass(frozen=True)
class LearnedTemplate(Template):
    """A template whose extra variants are sources held in knowledge, not files."""

    learned: Mapping[str, str] = field(default_factory=dict)

    def source(self, variant: str | None = None) -> str:
        if variant in self.learned:
            return self.learned[variant]
        return super().source(variant)


def learned_template(template: Template, lessons: list[Lesson]) -> Template:
    """``template`` with every learned variant in ``lessons`` added to its variant param."""
    vp = template.variant_param
    found = {lsn.data["variant"]: lsn.data["source"] for lsn in lessons
             if lsn.kind == "variant" and lsn.data.get("variant") and lsn.data.get("source")
             and lsn.target == template.target}
    if not vp or not found:
        return template
    base = template.space.param(vp)
    names = [n for n in sorted(found) if n not in base.choices]
    if not names:
        return template
    param = Param(vp, "variant", choices=tuple(base.choices) + tuple(names), default=base.default_value(),
                  help=base.help)
    space = DesignSpace(params=tuple(param if p.name == vp else p for p in template.space.params),
                        constraints=template.space.constraints)
    variants = {**template.variants, **{n: f"<learned {n}>" for n in names}}
    return LearnedTemplate(target=template.target, variants=variants, space=space, variant_param=vp,
                           folder=template.folder, launch=template.launch,
                           learned={n: found[n] for n in names})


def is_rewrite(c: Candidate, template: Template) -> bool:
    """The candidate's source is its own, not the template source its params select."""
    try:
        return " ".join(c.source.split()) != " ".join(template.source(template.variant_of(c.params)).split())
    except Exception:  # noqa: BLE001 — a variant the template no longer has: its own source
        return True


def variant_name(c: Candidate) -> str:
    return f"llm_r{c.run_id}_c{c.id}"


def promote(evaluated: list[Candidate], lessons: list[Lesson], template: Template, *, run_id, shapes,
            workload: str, target: str) -> list[Lesson]:
    """The ``variant`` lesson for the run's winner when it is a rewrite (else nothing); the
    run's ``best_config`` lessons about it are relabelled to select the new variant."""
    vp = template.variant_param
    ok = [c for c in evaluated if c.result is not None and c.result.ok]
    if not vp or not ok:
        return []
    best = max(ok, key=lambda c: c.score)
    if not is_rewrite(best, template):
        return []
    name = variant_name(best)
    params = {**best.params, vp: name}
    for lsn in lessons:
        if lsn.kind == "best_config" and best.id in lsn.evidence:
            lsn.data = {**lsn.data, "params": params}
    meta = best.meta or {}
    provenance = {"run_id": best.run_id, "candidate_id": best.id, "agent": best.agent,
                  "parents": list(best.parents), "rationale": best.rationale,
                  "model": meta.get("model", ""), "provider": meta.get("provider", ""),
                  "prompt_id": meta.get("prompt_id", "")}
    shape = shapes[0] if shapes else None
    text = (f"{best.agent} rewrite #{best.id} (run {best.run_id}) won at {shape or 'these shapes'}: "
            f"{best.score:.2f}x; it joins the design space as {vp}={name}")
    return [Lesson(kind="variant", workload=workload, target=target, fingerprint="",
                   shape_bucket=shape_bucket(shape) if shape else "", text=text,
                   data={"subject": name, "variant": name, "source": best.source, "params": params,
                         "score": best.score, "speedup": dict(best.result.speedup),
                         "median_ms": best.result.median_ms, "provenance": provenance},
                   evidence=[best.id], run_id=run_id)]


def template_for(goal, workload, knowledge, fingerprint: str = "") -> Template:
    """The template a run of ``goal`` searches: the workload's, plus the learned variants
    recorded for its workload and target (none for a cold run). Guidance validation and the
    goal editor should use this, so a pin on a learned variant is accepted."""
    tpl = workload.template(goal.target)
    if goal.cold or tpl.variant_param is None:
        return tpl
    shapes = workload.goal_shapes(goal.shapes)
    found = knowledge.relevant(goal.workload, goal.target, fingerprint, shapes, 500)
    return learned_template(tpl, [lsn for lsn in found if lsn.kind == "variant"])
