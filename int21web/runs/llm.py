"""Reads (and one check) for pages and the API about language models: plain data, no side
effects, never a key. ``goal_llm_errors`` says what is wrong with a ``Goal.llm``; the run
page shows ``run_llm_spend`` and ``run_llm_failures``; the candidate page ``candidate_llm_exchange``.
Everything here is untrusted model text when it comes from a model: templates must escape it."""
from __future__ import annotations

from int21web.runs import models as m
from swarm.llm import config as llm_config


def llm_status(*, goal_llm: dict | None = None) -> dict:
    """``{"configured", "reason", "config"}`` for the environment plus a goal's choice."""
    return llm_config.status(goal_llm or {})


def goal_llm_errors(data) -> dict[str, str]:
    """``{}`` when a goal's model choice is valid, else ``{"llm.<field>": message}``
    (``swarm.llm.config.goal_llm_problems``, part of every goal's check)."""
    return dict(llm_config.goal_llm_problems(data))


def run_llm_spend(*, run_id: int) -> dict:
    """The run's ledger, its limits, and requests per agent (from the stored ``llm_call`` events)."""
    run = m.Run.objects.get(pk=run_id)
    usage = {"requests": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0, "cost_reported": False,
             "unusable": 0, "errors": 0, "paused": "", **(run.llm_usage or {})}
    status = llm_config.status((run.spec or {}).get("llm") or {})
    per_agent: dict[str, dict] = {}
    for data in m.Event.objects.filter(run_id=run_id, kind="llm_call").values_list("data", flat=True):
        row = per_agent.setdefault(data.get("agent", "?"), {"requests": 0, "failed": 0, "tokens": 0,
                                                            "latency_ms": 0.0})
        row["requests"] += 1
        row["failed"] += 0 if data.get("ok") else 1
        row["tokens"] += int(data.get("tokens_in") or 0) + int(data.get("tokens_out") or 0)
        row["latency_ms"] += float(data.get("latency_ms") or 0.0)
    return {"usage": usage, "budget": (status["config"] or {}).get("budget"), "configured": status["configured"],
            "model": (status["config"] or {}).get("model"), "per_agent": per_agent}


def run_llm_failures(*, run_id: int, limit: int = 50) -> list[dict]:
    """Unusable answers, newest first: agent, reason, the raw answer, parent, attempt."""
    rows = m.Event.objects.filter(run_id=run_id, kind="llm_proposal_failed").order_by("-seq")[:limit]
    return [{"seq": e.seq, "at": e.created_at, **e.data} for e in rows]


def candidate_llm_exchange(*, candidate_id: int) -> dict | None:
    """The prompt, raw answer, model, tokens and latency behind an LLM-written candidate."""
    meta = m.Candidate.objects.values_list("meta", flat=True).get(pk=candidate_id) or {}
    return meta if meta.get("llm") else None


def learned_variants(*, workload: str, target: str) -> list[dict]:
    """Winning rewrites that joined the design space, newest first, with their provenance."""
    rows = m.Lesson.objects.filter(kind="variant", workload=workload, target=target).order_by("-id")
    return [{"lesson_id": r.id, "variant": r.data.get("variant"), "score": r.data.get("score"),
             "speedup": r.data.get("speedup"), "provenance": r.data.get("provenance", {}), "text": r.text,
             "source": r.data.get("source", ""), "created_at": r.created_at} for r in rows]
