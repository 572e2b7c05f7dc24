"""Whole runs with the scripted OpenAI-protocol server: the coder's rewrite is evaluated,
wins, becomes a variant of the design space; the analyst's lessons cite evidence; a later
run without any model starts from the rewrite."""
import re

import pytest

from swarm.events import ListSink
from swarm.generation import Engine
from swarm.knowledge import InMemoryKnowledge
from swarm.store import InMemoryStore
from swarm.types import Budget, Goal, Result
from tests.swarm.fakes import landscape
from tests.swarm.llm_fakes import GARBAGE, Answer, OpenAIServer, Status, online_rewrite, system_text

MARK = "rewritten by the model"


class RewriteAwareExecutor:
    """The synthetic landscape, where the model's online rewrite is genuinely 3x better."""

    def __init__(self):
        self.sources = {}

    def evaluate(self, goal, candidates):
        for c in candidates:
            self.sources[c.id] = c.source
            r = landscape(c.params)
            if r.ok and MARK in c.source:
                r = Result(status="ok", reason="synthetic rewrite", score=r.score * 3, median_ms=r.median_ms / 3,
                           speedup={k: v * 3 for k, v in r.speedup.items()})
            yield c.id, r, {"status": r.status, "reason": r.reason, "stages": []}


def responder(body):
    """The coder gets the online rewrite; the analyst gets lessons citing candidates it saw."""
    if "analyst" in system_text(body):
        ids = re.findall(r"#(\d+)", body["messages"][-1]["content"])[:2]
        return Answer(f"- The online rewrite beats every template kernel [#{ids[0]}]\n"
                      f"- An uncited claim is dropped\n- THREADS=2 pays off [{', '.join('#' + i for i in ids)}]\n")
    return Answer(online_rewrite())


def use_model(monkeypatch, server):
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("LLM_MODEL", "coder-7b")
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LLM_API_KEY", "sk-test")


def no_model(monkeypatch):
    for k in ("LLM_PROVIDER", "LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY", "LLM_API_KEY_FILE"):
        monkeypatch.delenv(k, raising=False)


def goal(team, evaluations=24, **kw):
    return Goal(workload="softmax", shapes=["512x4096"], population=6, seed=5, team=team,
                budget=Budget(evaluations=evaluations, stagnation_generations=None), **kw)


@pytest.fixture
def world():
    return InMemoryStore(), InMemoryKnowledge()


def test_the_rewrite_wins_becomes_a_variant_and_a_run_without_a_model_starts_from_it(monkeypatch, world):
    store, knowledge = world
    with OpenAIServer(responder) as server:
        use_model(monkeypatch, server)
        sink = ListSink()
        eng = Engine(store, RewriteAwareExecutor(), knowledge, sink, fingerprint="host-a")
        rid = eng.start(goal(["explorer", "mutator", "llm_coder", "llm_analyst"]))
        run = eng.run(rid)
    assert run.state == "finished"
    cands = store.candidates(rid)
    best = max((c for c in cands if c.result.ok), key=lambda c: c.score)
    assert best.agent == "llm_coder" and MARK in best.source
    assert best.meta["answer"] == online_rewrite() and best.meta["prompt"][0]["role"] == "system"
    # the run's ledger and the events tell the LLM story
    assert run.llm_usage["requests"] >= 2 and run.llm_usage["tokens_in"] > 0
    assert "llm_call" in sink.kinds() and "new_best" in sink.kinds()
    # the analyst's lessons cite candidates of the run; an uncited line is dropped
    insights = [lsn for lsn in knowledge.lessons if lsn.kind == "insight"]
    assert insights and all(lsn.evidence and set(lsn.evidence) <= {c.id for c in cands} for lsn in insights)
    assert not any("uncited" in lsn.text for lsn in insights)
    # the winner joined the design space, with its provenance
    [variant] = [lsn for lsn in knowledge.lessons if lsn.kind == "variant"]
    name = f"llm_r{rid}_c{best.id}"
    assert variant.data["variant"] == name and variant.data["source"] == best.source
    assert variant.data["provenance"]["candidate_id"] == best.id and variant.data["provenance"]["model"] == "coder-7b"
    assert any(lsn.kind == "best_config" and lsn.data["params"]["ALGO"] == name for lsn in knowledge.lessons)

    # A later run, no model anywhere: the seeded agent starts from the rewrite.
    no_model(monkeypatch)
    sink2 = ListSink()
    eng2 = Engine(store, RewriteAwareExecutor(), knowledge, sink2, fingerprint="host-a")
    rid2 = eng2.start(goal(["seeded", "explorer", "variant", "llm_coder"], evaluations=6))
    eng2.run(rid2, max_generations=1)
    first = [c for c in store.candidates(rid2) if c.generation == 0]
    reused = [c for c in first if c.params["ALGO"] == name]
    assert reused and reused[0].agent == "seeded" and reused[0].source == best.source
    templates_best = max(c.score for c in cands if MARK not in c.source)
    assert reused[0].result.ok and reused[0].score > templates_best      # it starts above the templates
    notes = [e.data for _, e in sink2.events if e.kind == "agent_note"]
    assert any(n["agent"] == "llm_coder" and "stands aside" in n["text"] and "LLM_PROVIDER" in n["text"]
               for n in notes)
    assert not any(e.kind == "llm_call" for _, e in sink2.events)


def test_a_cold_run_ignores_learned_variants(monkeypatch, world):
    store, knowledge = world
    with OpenAIServer(responder) as server:
        use_model(monkeypatch, server)
        eng = Engine(store, RewriteAwareExecutor(), knowledge, ListSink(), fingerprint="host-a")
        eng.run(eng.start(goal(["explorer", "llm_coder"], evaluations=12)))
    assert any(lsn.kind == "variant" for lsn in knowledge.lessons)
    no_model(monkeypatch)
    eng2 = Engine(store, RewriteAwareExecutor(), knowledge, ListSink(), fingerprint="host-a")
    rid = eng2.start(goal(["explorer", "variant"], evaluations=12, cold=True))
    eng2.run(rid)
    assert not any(str(c.params["ALGO"]).startswith("llm_") for c in store.candidates(rid))


def test_a_model_that_fails_every_way_never_stops_the_run(monkeypatch, world):
    store, knowledge = world
    script = [Status(500, "down"), Status(429, "later", {"retry-after": "0"}), Answer(GARBAGE), Status(401, "no")]
    with OpenAIServer(script) as server:
        use_model(monkeypatch, server)
        sink = ListSink()
        eng = Engine(store, RewriteAwareExecutor(), knowledge, sink, fingerprint="host-a")
        rid = eng.start(goal(["explorer", "llm_coder"], evaluations=18))
        run = eng.run(rid)
    assert run.state == "finished" and "budget of 18" in run.finish_reason
    assert len([c for c in store.candidates(rid) if c.result]) == 18     # the explorer topped up
    failed = [e.data for _, e in sink.events if e.kind == "llm_proposal_failed"]
    assert failed and failed[0]["answer"] == GARBAGE


def test_the_llm_budget_pauses_the_llm_agents_not_the_run(monkeypatch, world):
    store, knowledge = world
    with OpenAIServer(responder) as server:
        use_model(monkeypatch, server)
        sink = ListSink()
        eng = Engine(store, RewriteAwareExecutor(), knowledge, sink, fingerprint="host-a")
        rid = eng.start(goal(["explorer", "llm_coder"], evaluations=24, llm={"budget": {"requests": 2}}))
        run = eng.run(rid)
        assert len(server.requests) == 2
    assert run.state == "finished" and "evaluation budget" in run.finish_reason
    assert run.llm_usage["requests"] == 2 and "request budget of 2 spent" in run.llm_usage["paused"]
    assert sink.kinds().count("llm_paused") == 1
    later = [g["allocation"].get("llm_coder", 0) for (r, i), g in sorted(store.generations.items()) if i >= 2]
    assert later and all(n == 0 for n in later)
