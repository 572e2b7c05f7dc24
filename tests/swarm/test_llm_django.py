"""LLM runs through the Django adapters: the exchange is stored on the candidate, the spend
on the run, the events in order, the winning rewrite as a variant lesson that a later run
(without a model) reuses."""
import pytest

from int21web.runs import llm as llm_reads
from int21web.runs import models as m
from int21web.runs import services
from swarm.types import Budget, Goal
from tests.swarm.llm_fakes import OpenAIServer, online_rewrite
from tests.swarm.test_llm_runs import MARK, RewriteAwareExecutor, no_model, responder, use_model

pytestmark = pytest.mark.django_db


def goal(team, evaluations):
    return Goal(workload="softmax", shapes=["512x4096"], population=6, seed=5, team=team,
                budget=Budget(evaluations=evaluations, stagnation_generations=None))


def test_an_llm_run_is_stored_with_its_exchange_spend_and_variant(monkeypatch):
    with OpenAIServer(responder) as server:
        use_model(monkeypatch, server)
        rid = services.run_start(goal=goal(["explorer", "llm_coder", "llm_analyst"], 12),
                                 executor=RewriteAwareExecutor())
        services.run_drive(run_id=rid, executor=RewriteAwareExecutor())
    run = m.Run.objects.get(pk=rid)
    assert run.state == "finished" and run.best.agent == "llm_coder"
    assert run.best.meta["answer"] == online_rewrite() and run.best.meta["tokens_in"] == 900
    assert run.llm_usage["requests"] >= 2 and run.llm_usage["tokens_out"] > 0
    assert "sk-test" not in str(run.llm_usage) and "sk-test" not in str(run.best.meta)
    assert m.Event.objects.filter(run=run, kind="llm_call").exists()
    variant = m.Lesson.objects.get(kind="variant")
    assert variant.data["provenance"]["candidate_id"] == run.best.id
    assert m.Lesson.objects.filter(kind="insight", run=run).exists()

    no_model(monkeypatch)
    rid2 = services.run_start(goal=goal(["seeded", "explorer", "llm_coder"], 6), executor=RewriteAwareExecutor())
    services.run_drive(run_id=rid2, executor=RewriteAwareExecutor(), max_generations=1)
    first = m.Candidate.objects.filter(run_id=rid2, generation=0)
    assert any(c.params["ALGO"] == variant.data["variant"] and MARK in c.source for c in first)
    assert m.Event.objects.filter(run_id=rid2, kind="agent_note", data__agent="llm_coder").exists()


def test_the_pages_read_spend_failures_exchange_and_variants_without_the_key(monkeypatch):
    from tests.swarm.llm_fakes import GARBAGE, Answer
    answers = iter([Answer(GARBAGE)])

    def script(body):
        return next(answers, None) or responder(body)
    with OpenAIServer(script) as server:
        use_model(monkeypatch, server)
        rid = services.run_start(goal=goal(["explorer", "llm_coder"], 12), executor=RewriteAwareExecutor())
        services.run_drive(run_id=rid, executor=RewriteAwareExecutor())
    spend = llm_reads.run_llm_spend(run_id=rid)
    assert spend["configured"] and spend["model"] == "coder-7b" and spend["budget"]["requests"] == 40
    assert spend["per_agent"]["llm_coder"]["requests"] == spend["usage"]["requests"] >= 2
    failures = llm_reads.run_llm_failures(run_id=rid)
    [failure] = [f for f in failures if f["answer"] == GARBAGE]     # later ones: the rewrite offered again
    assert "no code" in failure["reason"] and failures[-1] == failure   # newest first
    best = m.Run.objects.get(pk=rid).best
    exchange = llm_reads.candidate_llm_exchange(candidate_id=best.id)
    assert exchange["answer"] == online_rewrite() and exchange["prompt"][1]["role"] == "user"
    [variant] = llm_reads.learned_variants(workload="softmax", target="cpu")
    assert variant["provenance"]["candidate_id"] == best.id
    assert "sk-test" not in str([spend, failure, exchange, variant, llm_reads.llm_status()])
    assert llm_reads.goal_llm_errors({"temperature": 7}) == {"llm.temperature": "must be between 0 and 2, got 7"}
    assert llm_reads.goal_llm_errors({"model": "other"}) == {}
