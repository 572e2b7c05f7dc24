"""One request to a chat model through LangChain, its failures as plain-words values.

LangChain (``langchain-openai``, ``langchain-ollama``) is imported on the first request,
so the swarm imports and runs without it. Retries are ours, not the SDK's (its own are
switched off), so every HTTP request counts against the run's budget and a 429's
``Retry-After`` is honoured the same way for every provider.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from swarm.llm.config import LLMConfig

# kind → what a person is told (the exception's own text follows)
ERROR_KINDS = {
    "not_configured": "no language model is configured",
    "missing_library": "the LangChain integration for this provider is not installed",
    "connection": "could not connect to the model server",
    "auth": "the model server refused the API key",
    "model_missing": "the model server does not have this model",
    "rate_limited": "the model server is rate-limiting requests",
    "server": "the model server failed",
    "timeout": "the model did not answer in time",
    "bad_request": "the model server rejected the request",
    "empty": "the model answered with nothing",
    "error": "the request failed",
}
TRANSIENT = {"rate_limited", "server"}


class LLMError(Exception):
    def __init__(self, kind: str, detail: str = "", *, status: int | None = None, retry_after: float | None = None):
        self.kind, self.detail, self.status, self.retry_after = kind, detail, status, retry_after
        text = ERROR_KINDS.get(kind, kind)
        if status:
            text += f" (HTTP {status})"
        super().__init__(f"{text}: {detail}" if detail else text)


@dataclass
class Reply:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float | None = None          # only when the provider reports it
    latency_ms: float = 0.0
    model: str = ""
    raw_usage: dict = field(default_factory=dict)


class ChatClient(Protocol):
    """``chat`` sends the messages (``[(role, text)]``, role system|user|assistant) and
    returns the answer, or raises ``LLMError`` with a kind from ``ERROR_KINDS``. It MUST NOT
    retry by itself (the session does, within budget)."""

    def chat(self, messages: list[tuple[str, str]], *, max_tokens: int) -> Reply: ...


class LangChainClient:
    """Any LangChain chat model. ``model`` (tests: a fake chat model) skips the provider
    classes entirely."""

    def __init__(self, config: LLMConfig, model=None):
        self.config, self._model = config, model

    def _chat_model(self, max_tokens: int):
        if self._model is not None:
            return self._model
        cfg = self.config
        try:
            if cfg.provider == "openai":
                from langchain_openai import ChatOpenAI
                # Servers without auth (vLLM, llama.cpp) still need a non-empty key in the SDK.
                return ChatOpenAI(model=cfg.model, base_url=cfg.base_url, api_key=cfg.api_key or "none",
                                  temperature=cfg.temperature, timeout=cfg.timeout, max_retries=0,
                                  max_tokens=max_tokens)
            from langchain_ollama import ChatOllama
            kwargs = {"timeout": cfg.timeout}
            if cfg.api_key:
                kwargs["headers"] = {"Authorization": f"Bearer {cfg.api_key}"}
            return ChatOllama(model=cfg.model, base_url=cfg.base_url, temperature=cfg.temperature,
                              num_predict=max_tokens, client_kwargs=kwargs)
        except ImportError as exc:
            raise LLMError("missing_library", f"{exc.name or exc} (pip install langchain-openai langchain-ollama)")

    def chat(self, messages, *, max_tokens: int) -> Reply:
        model = self._chat_model(max_tokens)
        t0 = time.monotonic()
        try:
            msg = model.invoke(list(messages))
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 — every SDK failure becomes a kind
            raise classify(exc) from exc
        latency = (time.monotonic() - t0) * 1000
        text = msg.content if isinstance(msg.content, str) else "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in msg.content)
        usage = getattr(msg, "usage_metadata", None) or {}
        meta = getattr(msg, "response_metadata", None) or {}
        raw = dict(meta.get("token_usage") or {})
        cost = raw.get("cost")
        return Reply(text=text, tokens_in=int(usage.get("input_tokens") or raw.get("prompt_tokens") or 0),
                     tokens_out=int(usage.get("output_tokens") or raw.get("completion_tokens") or 0),
                     cost=float(cost) if isinstance(cost, (int, float)) else None, latency_ms=latency,
                     model=str(meta.get("model_name") or meta.get("model") or self.config.model),
                     raw_usage={k: v for k, v in raw.items() if isinstance(v, (int, float, str))})


def _retry_after(exc) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    raw = headers.get("retry-after") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def classify(exc: BaseException) -> LLMError:
    """An SDK exception (openai, ollama, httpx) as an ``LLMError`` of one kind."""
    names = {c.__name__ for c in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    cause, seen = exc.__cause__ or exc.__context__, 0
    while cause is not None and (cause.__cause__ or cause.__context__) is not None and seen < 5:
        cause, seen = cause.__cause__ or cause.__context__, seen + 1   # the socket's own words
    if names & {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout", "TimeoutError"}:
        return LLMError("timeout", text)
    if names & {"APIConnectionError", "ConnectError", "ConnectionError"} and not isinstance(status, int):
        detail = str(cause) if cause and str(cause) else text
        if isinstance(cause, BaseException) and {c.__name__ for c in type(cause).__mro__} & {
                "TimeoutException", "ReadTimeout"}:
            return LLMError("timeout", detail)
        return LLMError("connection", detail)
    if isinstance(status, int):
        if status in (401, 403):
            return LLMError("auth", text, status=status)
        if status == 404:
            return LLMError("model_missing", text, status=status)
        if status == 429:
            return LLMError("rate_limited", text, status=status, retry_after=_retry_after(exc))
        if status >= 500:
            return LLMError("server", text, status=status, retry_after=_retry_after(exc))
        return LLMError("bad_request", text, status=status)
    return LLMError("error", f"{type(exc).__name__}: {text}")
