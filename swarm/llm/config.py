"""Which language model the LLM agents talk to: the environment, narrowed per goal.

Framework-free (no Django, no LangChain import). The environment sets the model and holds
the key; a goal may choose another provider, model, base URL, sampling settings and its own
budget (``Goal.llm``) but never carries a key. The key from the environment is only ever
sent to the environment's own base URL: a goal pointing somewhere else gets no key, so a
goal author cannot collect it.

Environment::

    LLM_PROVIDER        openai | ollama          (unset: no model; the LLM agents stand aside)
    LLM_MODEL           model name               (required once a provider is set)
    LLM_BASE_URL        OpenAI-compatible server (vLLM, llama.cpp, a proxy) or Ollama's URL
    LLM_API_KEY         the key, or LLM_API_KEY_FILE: a file holding it (one of the two)
    LLM_TEMPERATURE     0..2, default 0.2        LLM_TIMEOUT   seconds per request, default 120
    LLM_MAX_TOKENS      answer cap, default 4096 LLM_MAX_RETRIES  on 429/5xx, default 2
    LLM_BUDGET_REQUESTS per run, default 40      LLM_BUDGET_TOKENS per run, default 400000
    LLM_BUDGET_COST     per run, in the provider's reported unit (unset: no cost cap)
    LLM_ALLOWED_BASE_URLS  comma-separated servers a goal may choose (unset: any, without the key)
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Mapping

PROVIDERS = ("openai", "ollama")
DEFAULT_BASE_URL = {"openai": None, "ollama": "http://localhost:11434"}


class LLMConfigError(ValueError):
    """A model setting that cannot be used; ``field`` names it (``LLM_TIMEOUT``, ``llm.temperature``)."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field, self.message = field_name, message


class NotConfigured(LookupError):
    """No model is configured; the message says what to set."""


@dataclass(frozen=True)
class LLMBudget:
    """Per run. ``None``: no cap of that kind. Checked before every request."""

    requests: int | None = 40
    tokens: int | None = 400_000
    cost: float | None = None


@dataclass(frozen=True)
class LLMConfig:
    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.2
    timeout: float = 120.0
    max_tokens: int = 4096
    max_retries: int = 2
    retry_wait_cap: float = 30.0       # never wait longer than this on a Retry-After
    budget: LLMBudget = field(default_factory=LLMBudget)
    analyst_every: int = 1             # the analyst writes lessons after every N generations
    retries: int = 1                   # re-asks after an unusable answer, per proposal slot

    def public(self) -> dict:
        """What may be shown or stored: everything but the key (whether one is set is shown)."""
        d = asdict(self)
        d.pop("api_key")
        d["api_key_set"] = bool(self.api_key)
        return d

    def describe(self) -> str:
        where = self.base_url or "the provider's default URL"
        return f"{self.provider} model {self.model!r} at {where}"


# ------------------------------------------------------------------------ strict parsing

def _number(name: str, raw, low: float, high: float, *, integer: bool = False, allow_none: bool = False):
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        if allow_none:
            return None
        raise LLMConfigError(name, "must be set")
    if isinstance(raw, bool):
        raise LLMConfigError(name, f"must be a number, got {raw!r}")
    kind = "a whole number" if integer else "a number"
    try:
        value = float(str(raw).strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError):
        raise LLMConfigError(name, f"must be {kind}, got {raw!r}") from None
    if integer:
        if not value.is_integer():
            raise LLMConfigError(name, f"must be {kind}, got {raw!r}")
        value = int(value)
    if not math.isfinite(value) or not (low <= value <= high):
        raise LLMConfigError(name, f"must be between {low:g} and {high:g}, got {raw!r}")
    return value


def _provider(name: str, raw) -> str:
    value = str(raw).strip().lower()
    if value not in PROVIDERS:
        raise LLMConfigError(name, f"must be one of {', '.join(PROVIDERS)}, got {raw!r}")
    return value


def _url(name: str, raw) -> str | None:
    if raw is None or str(raw).strip() == "":
        return None
    value = str(raw).strip().rstrip("/")
    if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
        raise LLMConfigError(name, f"must be an http:// or https:// URL, got {raw!r}")
    return value


def _model(name: str, raw) -> str:
    value = str(raw or "").strip()
    if not value or len(value) > 200 or any(c.isspace() for c in value):
        raise LLMConfigError(name, f"must be a model name without spaces, got {raw!r}")
    return value


def _budget(prefix: str, data: Mapping, base: LLMBudget) -> LLMBudget:
    out = base
    for key, integer in (("requests", True), ("tokens", True), ("cost", False)):
        if key in data:
            out = replace(out, **{key: _number(f"{prefix}{key}", data[key], 0, 1e12, integer=integer,
                                               allow_none=True)})
    return out


def from_env(environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The environment's model. Raises ``NotConfigured`` when no provider is set and
    ``LLMConfigError`` (naming the variable) for a bad value."""
    env = os.environ if environ is None else environ
    get = lambda k: (env.get(k) or "").strip()  # noqa: E731
    if not get("LLM_PROVIDER"):
        if get("LLM_MODEL") or get("LLM_BASE_URL"):
            raise LLMConfigError("LLM_PROVIDER", "must be set (openai or ollama) when LLM_MODEL or LLM_BASE_URL is")
        raise NotConfigured("no language model is configured (set LLM_PROVIDER and LLM_MODEL)")
    provider = _provider("LLM_PROVIDER", get("LLM_PROVIDER"))
    if not get("LLM_MODEL"):
        raise LLMConfigError("LLM_MODEL", "must be set when LLM_PROVIDER is")
    key = get("LLM_API_KEY") or None
    if get("LLM_API_KEY_FILE"):
        if key:
            raise LLMConfigError("LLM_API_KEY_FILE", "set LLM_API_KEY or LLM_API_KEY_FILE, not both")
        path = Path(get("LLM_API_KEY_FILE"))
        try:
            key = path.read_text().strip() or None
        except OSError as exc:
            raise LLMConfigError("LLM_API_KEY_FILE", f"cannot read {path}: {exc.strerror}") from None
        if not key:
            raise LLMConfigError("LLM_API_KEY_FILE", f"{path} is empty")
    num = lambda k, d, lo, hi, i=False: _number(k, get(k) or d, lo, hi, integer=i)  # noqa: E731
    base = LLMBudget()
    budget = LLMBudget(
        requests=_number("LLM_BUDGET_REQUESTS", get("LLM_BUDGET_REQUESTS") or base.requests, 0, 1e9, integer=True),
        tokens=_number("LLM_BUDGET_TOKENS", get("LLM_BUDGET_TOKENS") or base.tokens, 0, 1e12, integer=True),
        cost=_number("LLM_BUDGET_COST", get("LLM_BUDGET_COST") or None, 0, 1e9, allow_none=True))
    return LLMConfig(provider=provider, model=_model("LLM_MODEL", get("LLM_MODEL")),
                     base_url=_url("LLM_BASE_URL", get("LLM_BASE_URL")) or DEFAULT_BASE_URL[provider],
                     api_key=key, temperature=num("LLM_TEMPERATURE", 0.2, 0, 2),
                     timeout=num("LLM_TIMEOUT", 120, 0.1, 3600), max_tokens=num("LLM_MAX_TOKENS", 4096, 16, 1_000_000, True),
                     max_retries=num("LLM_MAX_RETRIES", 2, 0, 10, True), budget=budget)


# ------------------------------------------------------------------------ the goal's choice

GOAL_FIELDS = {"provider", "model", "base_url", "temperature", "max_tokens", "timeout", "budget",
               "analyst_every", "retries"}
SECRET_FIELDS = {"api_key", "api_key_file", "key", "token", "password"}


def validate_goal_llm(data) -> dict:
    """Check a goal's model choice (``Goal.llm``) and return it cleaned (JSON). Raises
    ``LLMConfigError`` whose ``field`` is ``llm.<name>`` (for the goal editor's form)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise LLMConfigError("llm", "must be an object")
    out: dict = {}
    for key, raw in data.items():
        where = f"llm.{key}"
        if key in SECRET_FIELDS:
            raise LLMConfigError(where, "API keys come from the environment (LLM_API_KEY or LLM_API_KEY_FILE), "
                                        "never from a goal")
        if key not in GOAL_FIELDS:
            raise LLMConfigError(where, f"unknown setting; a goal may set {', '.join(sorted(GOAL_FIELDS))}")
        if raw is None or raw == "":
            continue
        if key == "provider":
            out[key] = _provider(where, raw)
        elif key == "model":
            out[key] = _model(where, raw)
        elif key == "base_url":
            out[key] = _url(where, raw)
        elif key == "temperature":
            out[key] = _number(where, raw, 0, 2)
        elif key == "timeout":
            out[key] = _number(where, raw, 0.1, 3600)
        elif key == "max_tokens":
            out[key] = _number(where, raw, 16, 1_000_000, integer=True)
        elif key == "analyst_every":
            out[key] = _number(where, raw, 1, 1000, integer=True)
        elif key == "retries":
            out[key] = _number(where, raw, 0, 5, integer=True)
        elif key == "budget":
            if not isinstance(raw, Mapping):
                raise LLMConfigError(where, "must be an object with requests, tokens and/or cost")
            unknown = set(raw) - {"requests", "tokens", "cost"}
            if unknown:
                raise LLMConfigError(f"{where}.{sorted(unknown)[0]}", "unknown budget; use requests, tokens, cost")
            b = _budget(f"{where}.", raw, LLMBudget(None, None, None))
            out[key] = {k: v for k, v in asdict(b).items() if k in raw}
    if "provider" in out and "model" not in out:
        raise LLMConfigError("llm.model", "a goal that chooses a provider must name its model")
    return out


def resolve(goal_llm: Mapping | None = None, environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The model a run uses: the environment's, with the goal's choices on top. Raises
    ``NotConfigured`` when neither names a model, ``LLMConfigError`` for a bad value."""
    choice = validate_goal_llm(goal_llm or {})
    try:
        base = from_env(environ)
    except NotConfigured:
        if "provider" not in choice:
            raise
        base = LLMConfig(provider=choice["provider"], model=choice["model"],
                         base_url=DEFAULT_BASE_URL[choice["provider"]])
    cfg = base
    if "provider" in choice and choice["provider"] != base.provider:
        cfg = replace(cfg, provider=choice["provider"], base_url=DEFAULT_BASE_URL[choice["provider"]])
    for key in ("model", "base_url", "temperature", "timeout", "max_tokens", "analyst_every", "retries"):
        if key in choice:
            cfg = replace(cfg, **{key: choice[key]})
    if "budget" in choice:
        cfg = replace(cfg, budget=replace(cfg.budget, **choice["budget"]))
    if (cfg.provider, cfg.base_url) != (base.provider, base.base_url):
        cfg = replace(cfg, api_key=None)   # the key goes only where the environment sends it
        allowed = allowed_base_urls(environ)
        if allowed is not None and cfg.base_url not in allowed | {base.base_url}:
            raise LLMConfigError("llm.base_url", f"{cfg.base_url} is not one of the servers this factory may "
                                                 f"use (LLM_ALLOWED_BASE_URLS)")
    return cfg


def goal_llm_problems(goal_llm, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """What is wrong with a goal's model choice, as ``[("llm.<field>", message)]`` (empty: nothing):
    its own values, and a server it names that this factory may not use (LLM_ALLOWED_BASE_URLS).
    No model configured anywhere is not a problem of the goal (its model agents stand aside and
    say why), nor is a bad LLM_* setting of the server's own (``manage.py llm check`` reports it)."""
    try:
        resolve(goal_llm, environ)          # validates the goal's choice first
    except NotConfigured:
        return []
    except LLMConfigError as exc:
        return [(exc.field, exc.message)] if exc.field.split(".")[0] == "llm" else []
    return []


def allowed_base_urls(environ: Mapping[str, str] | None = None) -> set | None:
    """``LLM_ALLOWED_BASE_URLS`` (comma-separated): the servers a goal may choose; unset: any."""
    env = os.environ if environ is None else environ
    raw = (env.get("LLM_ALLOWED_BASE_URLS") or "").strip()
    if not raw:
        return None
    return {_url("LLM_ALLOWED_BASE_URLS", part) for part in raw.split(",") if part.strip()}


def status(goal_llm: Mapping | None = None, environ: Mapping[str, str] | None = None) -> dict:
    """For pages and the API: ``{"configured": bool, "reason": str, "config": public dict}``."""
    try:
        cfg = resolve(goal_llm, environ)
    except (NotConfigured, LLMConfigError) as exc:
        return {"configured": False, "reason": str(exc), "config": None}
    return {"configured": True, "reason": "", "config": cfg.public()}
