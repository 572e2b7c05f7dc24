"""Every registered agent, through the same checks (a new agent is one file, one line)."""
import random

import pytest

from kernels import workloads
from kernels.spec import Shape
from swarm import registry
from swarm.agents.base import Context
from swarm.types import Candidate, Goal, Lesson, candidate_key
from tests.swarm.fakes import landscape
from tests.swarm.llm_fakes import TWO_PASS, Answer, ScriptedClient, fenced

WL = workloads.get("softmax")
TPL = WL.template("cpu")


def make_ctx(history_size=12, lessons=()):
    rng = random.Random(7)
    shapes = [Shape.of(rows=512, cols=4096)]
    history = []
    for i in range(history_size):
        params = TPL.space.sample(rng, shapes)
        src = TPL.source(params["ALGO"])
        history.append(Candidate(id=i + 1, run_id=1, generation=0, key=candidate_key(src, params), params=params,
                                 agent="explorer", rationale="", source=src, result=landscape(params)))
    elites = sorted([c for c in history if c.result.ok], key=lambda c: -c.score)[:6]
    return Context(goal=Goal(workload="softmax"), workload=WL, template=TPL, space=TPL.space, shapes=shapes,
                   history=history, elites=elites, lessons=list(lessons), rng=rng, generation=1,
                   seen={c.key for c in history})


LESSON = Lesson(kind="best_config", workload="softmax", target="cpu", fingerprint="", shape_bucket="2^9x2^12",
                text="", data={"params": {"ALGO": "two_pass", "THREADS": 2, "VEC": 16, "FAST_EXP": 1, "CHUNK": 4},
                               "score": 5.0}, id=1)


# Agents that write lessons instead of proposing kernels (llm_analyst) are tested in test_llm_units.py.
PROPOSERS = [n for n in registry.AGENTS if not hasattr(registry.get(n), "reflect")]


def with_model(ctx, name):
    """Model-backed agents get a session whose scripted model answers with a real rewrite."""
    if getattr(registry.get(name), "needs_model", False):
        from swarm.llm.config import LLMConfig
        from swarm.llm.session import LLMSession
        rewrite = fenced(TWO_PASS.replace("float inv = 1.0f / s;", "const float inv = 1.0f / s;"))
        ctx.llm = LLMSession(LLMConfig(provider="openai", model="scripted"), client=ScriptedClient([Answer(rewrite)]))
    return ctx


@pytest.mark.parametrize("name", PROPOSERS)
def test_every_agent_proposes_legal_fresh_explained_drafts(name):
    agent = registry.get(name)
    ctx = with_model(make_ctx(lessons=[LESSON]), name)
    assert agent.cannot_act(ctx) is None
    drafts = agent.propose(ctx, 4)
    assert 1 <= len(drafts) <= 4
    for d in drafts:
        assert d.agent == name and d.rationale.strip()
        assert ctx.legal(d.params), d.params
        assert ctx.fresh_draft(d)
    assert len({ctx.draft_key(d) for d in drafts}) == len(drafts)


@pytest.mark.parametrize("name", ["mutator", "crossover", "seeded", "llm_coder", "llm_analyst"])
def test_an_agent_that_cannot_act_says_why_and_proposes_nothing(name):
    agent = registry.get(name)
    ctx = make_ctx(history_size=0)
    why = agent.cannot_act(ctx)
    assert why and agent.propose(ctx, 3) == []


def test_an_unknown_agent_is_a_clear_error():
    with pytest.raises(registry.UnknownAgent, match="unknown agent 'wizard'"):
        registry.get("wizard")


def test_the_variant_agent_stops_switching_to_a_template_measured_well_below_the_best():
    from dataclasses import replace
    ctx = make_ctx(history_size=0)
    ctx.natural = {"THREADS": 2, "VEC": 16}
    opening = registry.get("variant").propose(ctx, 4)
    assert {d.params["ALGO"] for d in opening} == {"two_pass", "online", "staged"}
    assert all(d.params["THREADS"] == 2 and d.params["VEC"] == 16 for d in opening)   # where they would run
    assert all("natural" in d.rationale for d in opening)

    ctx = make_ctx(history_size=40)
    agent = registry.get("variant")
    assert agent.cannot_act(ctx) is None
    # Every online measurement at a quarter of the best: the online template is ruled out.
    best = max(c.score for c in ctx.history if c.params["ALGO"] == "two_pass")
    ctx.history = [c if c.params["ALGO"] == "two_pass" else
                   replace(c, result=replace(c.result, score=best / 4)) for c in ctx.history]
    assert sum(c.params["ALGO"] == "online" for c in ctx.history) >= 3
    ctx.elites = sorted([c for c in ctx.history if c.result.ok], key=lambda c: -c.score)[:6]
    assert "well below the best" in agent.cannot_act(ctx)
    assert agent.propose(ctx, 4) == []


def test_the_tuner_leaves_the_first_generation_to_the_explorer():
    ctx = make_ctx(history_size=0)
    assert "nothing measured yet" in registry.get("tuner").cannot_act(ctx)
    assert registry.get("tuner").cannot_act(make_ctx(history_size=12)) is None
