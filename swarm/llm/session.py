"""A run's conversation budget: every request is checked against it, counted, and told
as an event (``llm_call``); when it is spent the LLM agents pause (``llm_paused``), the
run carries on with the others.

``usage`` is the run's ledger (JSON, stored with the run, shown on the run page)::

    {"requests": 3, "tokens_in": 5120, "tokens_out": 2048, "cost": 0.0, "cost_reported": false,
     "unusable": 1, "errors": 0, "paused": ""}
"""
from __future__ import annotations

import time
from typing import Callable

from swarm.llm.client import TRANSIENT, ChatClient, LangChainClient, LLMError, Reply
from swarm.llm.config import LLMConfig

EMPTY_USAGE = {"requests": 0, "tokens_in": 0, "tokens_out": 0, "cost": 0.0, "cost_reported": False,
               "unusable": 0, "errors": 0, "paused": ""}


class BudgetSpent(Exception):
    pass


def _tokens_of(messages) -> int:
    """A rough count (4 characters a token) to keep one request inside the token budget."""
    return sum(len(text) for _, text in messages) // 4 + 16


class LLMSession:
    def __init__(self, config: LLMConfig, usage: dict | None = None, emit: Callable | None = None,
                 client: ChatClient | None = None, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.usage = {**EMPTY_USAGE, **(usage or {})}
        self.emit = emit or (lambda kind, **data: None)
        self.client = client or LangChainClient(config)
        self.sleep = sleep

    # ------------------------------------------------------------------ budget

    def spent(self, prompt_tokens: int = 0) -> str | None:
        """Why no further request may be sent (None: it may)."""
        b, u = self.config.budget, self.usage
        if b.requests is not None and u["requests"] >= b.requests:
            return f"LLM request budget of {b.requests} spent"
        if b.tokens is not None and u["tokens_in"] + u["tokens_out"] + prompt_tokens + 64 > b.tokens:
            return (f"LLM token budget of {b.tokens} spent ({u['tokens_in'] + u['tokens_out']} used"
                    + (f", the next prompt needs ~{prompt_tokens}" if prompt_tokens else "") + ")")
        if b.cost is not None and u["cost"] >= b.cost:
            return f"LLM cost budget of {b.cost:g} spent ({u['cost']:g} reported)"
        return None

    def pause(self, reason: str) -> None:
        if not self.usage["paused"]:
            self.usage["paused"] = reason
            self.emit("llm_paused", reason=reason, usage=dict(self.usage))

    def _max_tokens(self, prompt_tokens: int) -> int:
        cap = self.config.max_tokens
        if self.config.budget.tokens is not None:
            left = self.config.budget.tokens - self.usage["tokens_in"] - self.usage["tokens_out"] - prompt_tokens
            cap = min(cap, max(left, 16))
        return cap

    # ------------------------------------------------------------------ requests

    def ask(self, messages: list[tuple[str, str]], *, agent: str, purpose: str) -> Reply:
        """Send, retrying 429/5xx within budget (honouring Retry-After). Raises
        ``BudgetSpent`` (the agents pause) or ``LLMError`` (this request failed)."""
        prompt_tokens = _tokens_of(messages)
        attempt = 0
        while True:
            attempt += 1
            why = self.spent(prompt_tokens)
            if why:
                self.pause(why)
                raise BudgetSpent(why)
            self.usage["requests"] += 1
            t0 = time.monotonic()
            try:
                reply = self.client.chat(messages, max_tokens=self._max_tokens(prompt_tokens))
            except LLMError as exc:
                self.usage["errors"] += 1
                self.emit("llm_call", agent=agent, purpose=purpose, model=self.config.model, ok=False,
                          latency_ms=round((time.monotonic() - t0) * 1000, 1), error=str(exc), error_kind=exc.kind,
                          attempt=attempt)
                if exc.kind in TRANSIENT and attempt <= self.config.max_retries:
                    wait = exc.retry_after if exc.retry_after is not None else 2.0 ** (attempt - 1)
                    self.sleep(min(wait, self.config.retry_wait_cap))
                    continue
                raise
            self.usage["tokens_in"] += reply.tokens_in
            self.usage["tokens_out"] += reply.tokens_out
            if reply.cost is not None:
                self.usage["cost"] = round(self.usage["cost"] + reply.cost, 6)
                self.usage["cost_reported"] = True
            data = dict(agent=agent, purpose=purpose, model=reply.model or self.config.model, ok=True,
                        latency_ms=round(reply.latency_ms, 1), tokens_in=reply.tokens_in,
                        tokens_out=reply.tokens_out, attempt=attempt)
            if reply.cost is not None:
                data["cost"] = reply.cost
            self.emit("llm_call", **data)
            if not reply.text.strip():
                self.usage["errors"] += 1
                raise LLMError("empty", "no text in the answer")
            return reply


def open_session(goal, usage: dict | None, emit: Callable, environ=None) -> LLMSession | str:
    """The session for a run's goal, or the reason there is none (not configured, bad
    setting). Nothing is imported or contacted until the first request."""
    from swarm.llm.config import LLMConfigError, NotConfigured, resolve
    try:
        config = resolve(getattr(goal, "llm", None) or {}, environ)
    except (NotConfigured, LLMConfigError) as exc:
        return str(exc)
    return LLMSession(config, usage, emit)
