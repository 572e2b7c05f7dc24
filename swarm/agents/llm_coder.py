"""llm_coder: asks a language model to rewrite a kernel from the evidence — the workload's
contract, the parent's source and stage reports, the leaderboard, lessons and guidance.

The answer is untrusted text: it becomes a candidate's source (only ever compiled and run
by the harness) or, when unusable, a recorded failure with the raw answer
(``llm_proposal_failed``), re-asked with the reason within the run's LLM budget.
"""
from __future__ import annotations

import hashlib
from collections import Counter

from swarm.agents.base import Context
from swarm.llm.answers import Unusable, kernel_from_answer
from swarm.llm.briefs import coder_task
from swarm.llm.client import LLMError
from swarm.llm.prompts import render
from swarm.llm.session import BudgetSpent, LLMSession
from swarm.types import CandidateDraft

REPAIRABLE = {"compile_error", "wrong", "crashed", "timeout", "nondeterministic", "rejected_static", "audit_failed"}


def model_unavailable(ctx: Context) -> str | None:
    if not isinstance(ctx.llm, LLMSession):
        return ctx.llm if isinstance(ctx.llm, str) and ctx.llm else "no language model is configured"
    return ctx.llm.usage.get("paused") or ctx.llm.spent()


class LLMCoder:
    name = "llm_coder"
    needs_model = True

    def cannot_act(self, ctx: Context):
        return model_unavailable(ctx)

    def _parents(self, ctx: Context, n: int) -> list[tuple]:
        """(label, source, params, candidate or None, focus): the best kernels to speed up,
        and the newest rewrite that failed (to repair), or the seed when nothing ran yet."""
        out = []
        mine = [c for c in ctx.history if c.agent == self.name and c.result is not None]
        broken = [c for c in mine if c.result.status in REPAIRABLE]
        if broken and broken[-1].id not in {c.id for c in ctx.elites} and ctx.legal(broken[-1].params):
            c = broken[-1]
            out.append((f"#{c.id}, a rewrite that failed: {c.result.status}", c.source, c.params, c,
                        "First fix what the harness reported, then make it fast."))
        # The best kernels first, those this agent has rewritten fewer times before the others.
        used = Counter(p for c in mine for p in c.parents)
        for c in sorted(ctx.elites, key=lambda c: (used[c.id], -c.score)):
            if len(out) >= n:
                break
            if ctx.legal(c.params):
                out.append((f"#{c.id}, {c.score:.3g}x", c.source, c.params, c, ""))
        if not out:
            params = ctx.space.default()
            if not ctx.legal(params):
                params = ctx.space.sample(ctx.rng, ctx.shapes) or params
            variant = ctx.template.variant_of(params)
            out.append((f"the seed template {variant!r}, not evaluated yet", ctx.template.source(variant), params,
                        None, ""))
        while len(out) < n:
            out.append(out[len(out) % max(1, len(out))])
        return out[:n]

    def propose(self, ctx: Context, n: int) -> list[CandidateDraft]:
        if self.cannot_act(ctx):
            return []
        session: LLMSession = ctx.llm
        drafts: list[CandidateDraft] = []
        for label, source, params, parent, focus in self._parents(ctx, n):
            outcome = ctx.outcome(parent.id) if parent is not None else None
            system = render("coder_system")
            task = coder_task(ctx, source, params, label, outcome, parent.result if parent else None, focus)
            messages = [("system", system), ("user", task)]
            prompt_id = hashlib.sha256((system + task).encode()).hexdigest()[:16]
            for attempt in range(1 + session.config.retries):
                try:
                    reply = session.ask(messages, agent=self.name, purpose="rewrite")
                except BudgetSpent:
                    return drafts
                except LLMError as exc:
                    ctx.emit("agent_note", agent=self.name, text=f"no rewrite of {label.split(',')[0]}: {exc}")
                    return drafts     # the next generation tries again; the run carries on
                try:
                    new, mode = kernel_from_answer(reply.text, source, ctx.workload, ctx.goal.target)
                    draft = CandidateDraft(dict(params), self.name, "", source=new,
                                           parents=[parent.id] if parent else [])
                    if not ctx.fresh_draft(draft) or any(ctx.draft_key(d) == ctx.draft_key(draft) for d in drafts):
                        raise Unusable("the rewrite is a kernel this run has already tried")
                except Unusable as exc:
                    session.usage["unusable"] += 1
                    ctx.emit("llm_proposal_failed", agent=self.name, reason=str(exc), answer=reply.text,
                             parent_id=parent.id if parent else None, attempt=attempt + 1, prompt_id=prompt_id)
                    messages = messages + [("assistant", reply.text),
                                           ("user", render("coder_retry", reason=str(exc),
                                                           signature=ctx.workload.signature(ctx.goal.target)))]
                    continue
                summary = _summary(reply.text)
                draft.rationale = (f"{mode} rewrite of {label.split(',')[0]} by {reply.model or session.config.model}"
                                   + (f": {summary}" if summary else ""))[:480]
                draft.meta = {"llm": True, "agent": self.name, "mode": mode, "model": reply.model or session.config.model,
                              "provider": session.config.provider, "prompt_id": prompt_id,
                              "prompt": [{"role": r, "text": t} for r, t in messages], "answer": reply.text,
                              "tokens_in": reply.tokens_in, "tokens_out": reply.tokens_out,
                              "latency_ms": round(reply.latency_ms, 1), "cost": reply.cost, "attempt": attempt + 1}
                drafts.append(draft)
                break
        return drafts


def _summary(answer: str) -> str:
    """The model's own first line about its change (before any code), as the rationale."""
    for line in answer.splitlines():
        line = line.strip().lstrip("#*- ").strip()
        if line.startswith(("```", "<<<<<<<")):
            return ""
        if line:
            return line[:200]
    return ""
