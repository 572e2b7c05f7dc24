"""llm_coder against a real HTTP server on loopback (OpenAI chat completions and Ollama
/api/chat, scripted): every path ends as specified, and nothing stops the run."""
import pytest

from swarm.llm.config import LLMBudget, LLMConfig
from swarm.llm.session import LLMSession
from swarm.registry import get
from tests.swarm.llm_fakes import (EDIT_NOT_APPLYING, EDIT_SCALE, GARBAGE, WRONG_ENTRY, Answer, OllamaServer,
                                   OpenAIServer, Status, online_rewrite)
from tests.swarm.test_agents_contract import make_ctx

PARENT_REPORT = {"status": "wrong", "reason": "y differs at 512x4096/masked", "stages": [
    {"name": "verify", "status": "failed", "summary": "3 of 40 cases wrong",
     "details": {"failures": [{"shape": "512x4096", "distribution": "masked", "max_abs_err": 0.5}]}}],
    "timings": {"candidate": {"median_ms": 1.2}, "torch": {"median_ms": 1.5}}, "speedup": {"torch": 1.25}}


def coder_ctx(server, events, *, budget=None, timeout=5.0, retries=1, provider="openai", key="sk-test"):
    ctx = make_ctx()
    cfg = LLMConfig(provider=provider, model="coder-7b", base_url=server.base_url, api_key=key, timeout=timeout,
                    retries=retries, budget=budget or LLMBudget())
    ctx.emit = lambda kind, **data: events.append((kind, data))
    ctx.llm = LLMSession(cfg, emit=ctx.emit, sleep=lambda s: events.append(("slept", {"seconds": s})))
    ctx.outcome = lambda cid: PARENT_REPORT
    return ctx


def kinds(events):
    return [k for k, _ in events]


def test_a_good_rewrite_becomes_a_draft_with_its_prompt_answer_tokens_and_latency():
    events = []
    with OpenAIServer([Answer(online_rewrite(), tokens_in=1200, tokens_out=700)]) as server:
        ctx = coder_ctx(server, events)
        drafts = get("llm_coder").propose(ctx, 1)
        request = server.requests[0]
    assert len(drafts) == 1
    d = drafts[0]
    assert "rewritten by the model" in d.source and d.parents == [ctx.elites[0].id]
    assert d.params == ctx.elites[0].params and ctx.fresh_draft(d)
    assert d.meta["answer"] == online_rewrite() and d.meta["tokens_in"] == 1200 and d.meta["tokens_out"] == 700
    assert d.meta["latency_ms"] > 0 and d.meta["mode"] == "whole" and d.meta["model"] == "coder-7b"
    prompt = d.meta["prompt"][1]["text"]
    assert "void kernel(const float *x, float *y, int64_t rows, int64_t cols)" in prompt
    assert "atol 1e-05, rtol 0.0001" in prompt and "512x4096" in prompt
    assert "3 of 40 cases wrong" in prompt and "masked" in prompt     # the parent's stage report
    assert ctx.elites[0].source.splitlines()[0] in prompt              # the parent kernel
    assert request["json"]["model"] == "coder-7b"
    assert {k.lower(): v for k, v in request["headers"].items()}["authorization"] == "Bearer sk-test"
    assert ctx.llm.usage["requests"] == 1 and ctx.llm.usage["tokens_out"] == 700
    assert kinds(events) == ["llm_call"]


def test_a_broken_patch_is_recorded_with_its_raw_answer_and_asked_again():
    events = []
    with OpenAIServer([Answer(EDIT_NOT_APPLYING), Answer(EDIT_SCALE)]) as server:
        ctx = coder_ctx(server, events)
        ctx.elites = [c for c in ctx.elites if c.params["ALGO"] == "two_pass"][:1]
        drafts = get("llm_coder").propose(ctx, 1)
        second = server.requests[1]["json"]["messages"]
    failed = [d for k, d in events if k == "llm_proposal_failed"]
    assert len(failed) == 1 and failed[0]["answer"] == EDIT_NOT_APPLYING
    assert "does not match the kernel" in failed[0]["reason"]
    assert second[-2]["content"] == EDIT_NOT_APPLYING and "could not be used" in second[-1]["content"]
    assert len(drafts) == 1 and drafts[0].meta["mode"] == "edits" and drafts[0].meta["attempt"] == 2
    assert ctx.llm.usage["unusable"] == 1


@pytest.mark.parametrize("answer, reason", [(GARBAGE, "no code"), (WRONG_ENTRY, "wrong entry point")])
def test_an_unusable_answer_is_a_recorded_failure_and_no_candidate(answer, reason):
    events = []
    with OpenAIServer([Answer(answer)]) as server:
        ctx = coder_ctx(server, events, retries=1)
        drafts = get("llm_coder").propose(ctx, 1)
    failed = [d for k, d in events if k == "llm_proposal_failed"]
    assert drafts == [] and len(failed) == 2          # the first try and one retry
    assert all(reason in f["reason"] and f["answer"] == answer for f in failed)


def test_a_slow_model_times_out_and_the_agent_gives_up_for_this_generation():
    events = []
    with OpenAIServer([Answer(online_rewrite(), delay=3)]) as server:
        ctx = coder_ctx(server, events, timeout=0.5)
        assert get("llm_coder").propose(ctx, 2) == []
    calls = [d for k, d in events if k == "llm_call"]
    assert len(calls) == 1 and calls[0]["error_kind"] == "timeout" and calls[0]["ok"] is False
    assert any(k == "agent_note" and "did not answer in time" in d["text"] for k, d in events)


def test_a_429_is_retried_after_the_wait_the_server_asked_for():
    events = []
    with OpenAIServer([Status(429, "slow down", {"retry-after": "0.25"}), Answer(online_rewrite())]) as server:
        ctx = coder_ctx(server, events)
        drafts = get("llm_coder").propose(ctx, 1)
    assert len(drafts) == 1
    assert ("slept", {"seconds": 0.25}) in events
    assert [d["ok"] for k, d in events if k == "llm_call"] == [False, True]
    assert ctx.llm.usage["requests"] == 2


def test_a_server_error_is_retried_then_given_up_without_a_candidate():
    events = []
    with OpenAIServer([Status(500, "internal")]) as server:
        ctx = coder_ctx(server, events)
        assert get("llm_coder").propose(ctx, 1) == []
        assert len(server.requests) == 1 + ctx.llm.config.max_retries
    assert all(d["error_kind"] == "server" for k, d in events if k == "llm_call")


def test_a_refused_key_is_reported_and_nothing_is_proposed():
    events = []
    with OpenAIServer([Status(401, "invalid api key")]) as server:
        ctx = coder_ctx(server, events)
        assert get("llm_coder").propose(ctx, 1) == []
        assert len(server.requests) == 1            # a 401 is not retried
    assert any(k == "agent_note" and "refused the API key" in d["text"] for k, d in events)


def test_the_budget_stops_requests_and_pauses_the_agent():
    events = []
    with OpenAIServer([Answer(GARBAGE)]) as server:
        ctx = coder_ctx(server, events, budget=LLMBudget(requests=2), retries=5)
        assert get("llm_coder").propose(ctx, 3) == []
        assert len(server.requests) == 2
    paused = [d for k, d in events if k == "llm_paused"]
    assert len(paused) == 1 and "request budget of 2 spent" in paused[0]["reason"]
    assert "budget" in get("llm_coder").cannot_act(ctx)


def test_the_token_budget_counts_what_the_server_reported():
    events = []
    with OpenAIServer([Answer(online_rewrite(), tokens_in=3000, tokens_out=2000)]) as server:
        ctx = coder_ctx(server, events, budget=LLMBudget(requests=None, tokens=6000))
        assert len(get("llm_coder").propose(ctx, 3)) == 1
    assert "token budget of 6000 spent" in ctx.llm.usage["paused"]


def test_a_reported_cost_is_added_up():
    events = []
    with OpenAIServer([Answer(online_rewrite(), cost=0.002)]) as server:
        ctx = coder_ctx(server, events)
        get("llm_coder").propose(ctx, 1)
    assert ctx.llm.usage["cost"] == 0.002 and ctx.llm.usage["cost_reported"]


def test_ollama_speaks_its_own_protocol():
    events = []
    with OllamaServer([Answer(online_rewrite(), tokens_in=800, tokens_out=400)]) as server:
        ctx = coder_ctx(server, events, provider="ollama", key=None)
        drafts = get("llm_coder").propose(ctx, 1)
        assert server.requests[0]["path"] == "/api/chat"
    assert len(drafts) == 1 and drafts[0].meta["provider"] == "ollama"
    assert ctx.llm.usage["tokens_in"] == 800 and ctx.llm.usage["tokens_out"] == 400


def test_ollama_without_the_model_is_a_clear_error():
    events = []
    with OllamaServer([Status(404, "model 'coder-7b' not found, try pulling it first")]) as server:
        ctx = coder_ctx(server, events, provider="ollama", key=None)
        assert get("llm_coder").propose(ctx, 1) == []
    assert any(k == "agent_note" and "does not have this model" in d["text"] for k, d in events)


def test_without_a_model_the_coder_stands_aside_and_imports_nothing():
    ctx = make_ctx()
    ctx.llm = "no language model is configured (set LLM_PROVIDER and LLM_MODEL)"
    assert "LLM_PROVIDER" in get("llm_coder").cannot_act(ctx)
    assert get("llm_coder").propose(ctx, 2) == []
