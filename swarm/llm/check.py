"""``manage.py llm check``: one short request to the configured model, the result in words."""
from __future__ import annotations

from swarm.llm.client import LangChainClient, LLMError
from swarm.llm.config import LLMConfigError, NotConfigured, resolve
from swarm.llm.prompts import render

EXIT = {"ok": 0, "not_configured": 2, "config": 2, "connection": 3, "auth": 4, "model_missing": 5, "timeout": 6,
        "rate_limited": 7, "server": 7, "bad_request": 7, "empty": 7, "error": 7, "missing_library": 8}

HINTS = {
    "connection": "is the server running, and is LLM_BASE_URL right (OpenAI-compatible servers usually end in /v1)?",
    "auth": "check LLM_API_KEY or LLM_API_KEY_FILE.",
    "model_missing": "check LLM_MODEL (for Ollama: `ollama pull <model>`).",
    "timeout": "the server is slow or overloaded; raise LLM_TIMEOUT or use a smaller model.",
    "rate_limited": "wait, or lower the request rate of the account.",
    "missing_library": "pip install langchain-openai langchain-ollama",
}


def check(goal_llm: dict | None = None, environ=None, client=None) -> tuple[int, str]:
    """``(exit code, one paragraph)``; 0 only when the model answered."""
    try:
        cfg = resolve(goal_llm, environ)
    except NotConfigured as exc:
        return EXIT["not_configured"], f"Not configured: {exc}."
    except LLMConfigError as exc:
        return EXIT["config"], f"Bad setting: {exc}."
    client = client or LangChainClient(cfg)
    key = "with an API key" if cfg.api_key else "without an API key"
    try:
        reply = client.chat([("user", render("check").strip())], max_tokens=min(cfg.max_tokens, 64))
    except LLMError as exc:
        hint = HINTS.get(exc.kind, "")
        return EXIT.get(exc.kind, 7), f"No answer from {cfg.describe()} ({key}): {str(exc).rstrip('.')}." + (f" Hint: {hint}" if hint else "")
    if not reply.text.strip():
        return EXIT["empty"], f"{cfg.describe()} answered with nothing ({reply.tokens_out} tokens)."
    words = " ".join(reply.text.split())[:120]
    return 0, (f"OK: {cfg.describe()} answered {words!r} in {reply.latency_ms / 1000:.1f} s "
               f"({reply.tokens_in} prompt + {reply.tokens_out} answer tokens, {key}).")
