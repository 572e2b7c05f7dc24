"""LLM runs through the Django adapters: the exchange is stored on the candidate, the spend
on the run, the events in order, the winning rewrite as a variant lesson that a later run
(without a model) reuses."""
import pytest

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
