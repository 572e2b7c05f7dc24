"""llm_analyst: after every N generations, asks the model to turn what was tried into
lessons in words, each citing the candidates that show it. It proposes no kernels (it
takes no slots); its lessons go through the KnowledgeStore like every other lesson, so they
are on the knowledge page and in later prompts. A lesson citing no candidate of the run is
dropped."""
from __future__ import annotations

import re

from swarm.agents.base import Context
from swarm.agents.llm_coder import model_unavailable
from swarm.knowledge import shape_bucket
from swarm.llm.client import LLMError
from swarm.llm.prompts import render
from swarm.llm.session import BudgetSpent
from swarm.types import Candidate, CandidateDraft, Lesson

MAX_LESSONS = 5
_LINE = re.compile(r"^\s*[-*•]\s+(.+?)\s*$")
_IDS = re.compile(r"#(\d+)")


def _row(c: Candidate) -> str:
    params = ", ".join(f"{k}={v}" for k, v in c.params.items())
    own = " (own source)" if c.meta.get("mode") else ""
    if c.result.ok:
        return f"- #{c.id} by {c.agent}{own}: ok, {c.score:.3g}x, {c.result.median_ms or 0:.4g} ms; {params}"
    return f"- #{c.id} by {c.agent}{own}: {c.result.status} — {c.result.reason[:200]}; {params}"


def parse_lessons(answer: str, known_ids: set[int]) -> list[tuple[str, list[int]]]:
    out = []
    for line in answer.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        text = m.group(1)
        ids = [int(i) for i in _IDS.findall(text)]
        evidence = list(dict.fromkeys(i for i in ids if i in known_ids))
        if not evidence:
            continue
        text = re.sub(r"\s*\[[^\]]*#\d+[^\]]*\]\s*$", "", text).strip()
        if text:
            out.append((text[:500], evidence[:20]))
        if len(out) >= MAX_LESSONS:
            break
    return out


class LLMAnalyst:
    name = "llm_analyst"
    needs_model = True

    def cannot_act(self, ctx: Context):
        why = model_unavailable(ctx)
        return why or "writes lessons after generations; proposes no kernels"

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        return []

    def reflect(self, ctx: Context, new: list[Candidate]) -> list[Lesson]:
        """Lessons from the generation just evaluated (``new``) and the run so far."""
        if model_unavailable(ctx) or not ctx.history:
            return []
        every = ctx.llm.config.analyst_every
        if (ctx.generation + 1) % every:
            return []
        recent = [c for c in ctx.history if c.generation > ctx.generation - every and c.result is not None]
        if not recent:
            return []
        shape = ctx.shapes[0] if ctx.shapes else None
        task = render("analyst_task", workload=ctx.workload.name, target=ctx.goal.target,
                      generation=ctx.generation, shapes=", ".join(s.label() for s in ctx.shapes),
                      recent="\n".join(_row(c) for c in recent[-40:]),
                      best="\n".join(_row(c) for c in ctx.elites[:5]) or "None correct yet.",
                      lessons="\n".join(f"- {lsn.text}" for lsn in ctx.lessons[:10]) or "None.")
        messages = [("system", render("analyst_system", max_lessons=MAX_LESSONS)), ("user", task)]
        try:
            reply = ctx.llm.ask(messages, agent=self.name, purpose="lessons")
        except (BudgetSpent, LLMError):
            return []
        found = parse_lessons(reply.text, {c.id for c in ctx.history})
        if not found:
            ctx.llm.usage["unusable"] += 1
            ctx.emit("llm_proposal_failed", agent=self.name, answer=reply.text,
                     reason="no lesson in the answer cites a candidate of this run")
            return []
        model = reply.model or ctx.llm.config.model
        return [Lesson(kind="insight", workload=ctx.workload.name, target=ctx.goal.target, fingerprint="",
                       shape_bucket=shape_bucket(shape) if shape else "", text=text,
                       data={"subject": f"analyst:run{ctx.run_id}:{i}", "author": self.name, "model": model,
                             "generation": ctx.generation},
                       evidence=evidence, run_id=ctx.run_id or None)
                for i, (text, evidence) in enumerate(found)]
