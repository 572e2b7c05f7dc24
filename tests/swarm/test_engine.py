"""The engine against the synthetic landscape: stopping, dedupe, guidance, pause, crash
and resume, lessons."""
import pytest

from swarm.events import ListSink
from swarm.generation import Engine, GoalError
from swarm.knowledge import InMemoryKnowledge
from swarm.store import InMemoryStore
from swarm.types import Budget, Goal
from tests.swarm.fakes import FakeExecutor


def engine(store=None, knowledge=None, executor=None):
    sink = ListSink()
    return Engine(store or InMemoryStore(), executor or FakeExecutor(), knowledge or InMemoryKnowledge(), sink,
                  fingerprint="host-a"), sink


def goal(**kw):
    kw.setdefault("budget", Budget(evaluations=40, stagnation_generations=None))
    return Goal(workload="softmax", shapes=["512x4096"], population=8, seed=kw.pop("seed", 3), **kw)


def test_a_run_spends_its_budget_and_never_evaluates_a_candidate_twice():
    eng, sink = engine()
    rid = eng.start(goal())
    run = eng.run(rid)
    cands = eng.store.candidates(rid)
    assert run.state == "finished" and "budget of 40" in run.finish_reason
    assert len(cands) == 40 and all(c.result for c in cands)
    assert len({c.key for c in cands}) == 40
    assert sorted(eng.executor.evaluated) == sorted(c.id for c in cands)


def test_every_generation_records_its_allocation_and_the_events_tell_the_story():
    eng, sink = engine()
    rid = eng.start(goal())
    eng.run(rid)
    kinds = sink.kinds()
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("candidate_evaluated") == 40 and "new_best" in kinds and "lesson_recorded" in kinds
    gens = [e.data for _, e in sink.events if e.kind == "generation_finished"]
    assert len(gens) == 5 and all(sum(g["allocation"].values()) == 8 for g in gens)


def test_failures_are_values_and_the_run_carries_on():
    eng, sink = engine()
    rid = eng.start(goal(pins={"VEC": 16}))
    eng.run(rid)
    statuses = {c.result.status for c in eng.store.candidates(rid)}
    assert "ok" in statuses and statuses & {"wrong", "crashed"}


def test_a_pin_takes_effect_at_the_next_generation():
    eng, sink = engine()
    rid = eng.start(goal())
    eng.run(rid, max_generations=1)
    first = {c.params["VEC"] for c in eng.store.candidates(rid)}   # the host's natural width, mostly
    pinned = next(v for v in (8, 1, 16) if v not in first)
    eng.store.add_guidance(rid, {"op": "pin", "param": "VEC", "value": pinned}, "alice")
    eng.run(rid, max_generations=1)
    by_gen = {}
    for c in eng.store.candidates(rid):
        by_gen.setdefault(c.generation, set()).add(c.params["VEC"])
    assert by_gen[1] == {pinned} and pinned not in by_gen[0]
    applied = [e.data for _, e in sink.events if e.kind == "guidance_applied"]
    assert applied[0]["author"] == "alice" and "VEC" in applied[0]["effect"]


def test_a_human_stop_and_the_target_speedup_end_the_run():
    eng, _ = engine()
    rid = eng.start(goal())
    eng.run(rid, max_generations=1)
    eng.store.add_guidance(rid, {"op": "stop"}, "bob")
    assert "stopped by guidance" in eng.run(rid).finish_reason
    eng2, _ = engine()
    rid2 = eng2.start(goal(budget=Budget(evaluations=200, target_speedup=4.0, stagnation_generations=None)))
    run = eng2.run(rid2)
    assert "target speedup 4x reached" in run.finish_reason and len(eng2.store.candidates(rid2)) < 200


def test_pause_holds_the_run_and_resume_continues_it():
    eng, sink = engine()
    rid = eng.start(goal())
    eng.run(rid, max_generations=1)
    eng.pause(rid)
    assert eng.run(rid).state == "paused" and len(eng.store.candidates(rid)) == 8
    eng.resume(rid)
    assert eng.run(rid).state == "finished"
    assert "run_paused" in sink.kinds() and "run_resumed" in sink.kinds()


def test_a_run_interrupted_mid_generation_resumes_without_losing_or_repeating_work():
    store = InMemoryStore()
    crashing, _ = engine(store=store, executor=FakeExecutor(fail_after=13))
    rid = crashing.start(goal())
    with pytest.raises(KeyboardInterrupt):
        crashing.run(rid)
    before = {c.id for c in store.candidates(rid) if c.result}
    assert len(before) == 13
    fresh, _ = engine(store=store)
    assert fresh.run(rid).state == "finished"
    cands = store.candidates(rid)
    assert len(cands) == 40 and all(c.result for c in cands)
    assert not (set(fresh.executor.evaluated) & before)       # nothing judged twice
    assert len(crashing.executor.evaluated) + len(fresh.executor.evaluated) == 40


def test_lessons_from_a_first_run_make_a_second_run_faster():
    knowledge = InMemoryKnowledge()
    first, _ = engine(knowledge=knowledge)
    first_run = first.start(goal(seed=11))
    first.run(first_run)
    best = max(c.score for c in first.store.candidates(first_run))

    def evals_to(eng, rid, target):
        ordered = sorted(eng.store.candidates(rid), key=lambda c: c.id)
        return next((i + 1 for i, c in enumerate(ordered) if c.score >= target), len(ordered) + 1)

    warm, _ = engine(knowledge=knowledge)
    wid = warm.start(goal(seed=12))
    warm.run(wid)
    cold, _ = engine()
    cid = cold.start(goal(seed=12, cold=True))
    cold.run(cid)
    assert evals_to(warm, wid, best) <= 8 < evals_to(cold, cid, best)


def test_a_warm_run_measures_the_remembered_best_first():
    """The favoured agent's proposals lead the generation: one worker evaluates them in order."""
    knowledge = InMemoryKnowledge()
    first, _ = engine(knowledge=knowledge)
    fid = first.start(goal(seed=11))
    first.run(fid)
    top = max(c.score for c in first.store.candidates(fid))
    bests = [c.params for c in first.store.candidates(fid) if c.score == top]   # the landscape has ties
    warm, _ = engine(knowledge=knowledge)
    wid = warm.start(goal(seed=12))
    warm.run(wid, max_generations=1)
    opening = min(warm.store.candidates(wid), key=lambda c: c.id)
    assert opening.agent == "seeded" and opening.params in bests
    assert sorted(warm.executor.evaluated)[0] == opening.id


def test_a_goal_that_cannot_run_names_the_field():
    eng, _ = engine()
    with pytest.raises(GoalError, match="team: unknown agent"):
        eng.start(goal(team=["wizard"]))
    with pytest.raises(GoalError, match="pins"):
        eng.start(goal(pins={"VEC": 3}))
    with pytest.raises(GoalError, match="unknown workload"):
        eng.start(Goal(workload="nope"))
    with pytest.raises(GoalError, match="confirm_top: a whole number"):
        eng.start(goal(confirm_top=-1))


def test_a_run_confirms_its_best_few_and_its_best_and_lessons_are_the_confirmed_ones():
    from swarm.generation import CONFIRM_PASSES
    from tests.swarm.fakes import NoisyExecutor, landscape
    knowledge = InMemoryKnowledge()
    ex = NoisyExecutor()
    eng, sink = engine(executor=ex, knowledge=knowledge)
    rid = eng.start(goal())
    run = eng.run(rid)
    cands = {c.id: c for c in eng.store.candidates(rid)}
    confirmed = [e.data for _, e in sink.events if e.kind == "candidate_confirmed"]
    # The top three by first measurement, each re-measured twice (round 1 for all, then round 2),
    # and further passes for single-measurement candidates that then rose into the top three.
    assert 3 <= len(confirmed) <= 3 * CONFIRM_PASSES
    assert [r for _, r in ex.remeasured[:6]] == [1, 1, 1, 2, 2, 2]
    assert sorted(ex.remeasured) == sorted((d["candidate_id"], r) for d in confirmed for r in (1, 2))
    for d in confirmed:
        c = cands[d["candidate_id"]]
        assert len(c.result.measurements) == 3 and c.result.measurements[0] == d["first"]
        assert c.score == d["score"] == sorted(c.result.measurements)[1] == landscape(c.params).score
    # The lucky first draws did not survive: the run's best is a confirmed candidate scored by
    # its true (re-measured) score, not by the optimistic draw it was first given.
    best = cands[run.best_id]
    assert best.result.measurements and best.score == landscape(best.params).score < best.result.measurements[0]
    assert best.score >= max(c.score for c in cands.values() if c.result.measurements)
    finished = [e.data for _, e in sink.events if e.kind == "run_finished"][0]
    assert finished["best"]["candidate_id"] == best.id and finished["best"]["score"] == best.score
    assert finished["confirmations"] == len(ex.remeasured)
    rank1 = [lsn for lsn in knowledge.lessons if lsn.kind == "best_config" and lsn.data["subject"] == "rank1"][-1]
    assert rank1.data["params"] == best.params and rank1.data["score"] == best.score


def test_confirmation_can_be_turned_off_and_an_executor_without_it_is_not_asked():
    from tests.swarm.fakes import NoisyExecutor
    ex = NoisyExecutor()
    eng, sink = engine(executor=ex)
    eng.run(eng.start(goal(confirm_top=0)))
    assert ex.remeasured == [] and "candidate_confirmed" not in sink.kinds()
    eng, sink = engine()   # FakeExecutor: no remeasure
    eng.run(eng.start(goal()))
    assert "candidate_confirmed" not in sink.kinds()


def test_a_run_that_tried_every_point_says_the_space_is_used_up_not_that_it_stagnated():
    # 6 points (VEC 8/16 × THREADS 1, 2, 4), a budget far larger, stagnation on: the reason is the space
    space = {"params": [{"name": "VEC", "kind": "choice", "choices": [8, 16]},
                        {"name": "THREADS", "kind": "choice", "choices": [1, 2, 4]}]}
    eng, sink = engine()
    rid = eng.start(goal(space=space, budget=Budget(evaluations=50, stagnation_generations=2)))
    run = eng.run(rid)
    assert run.finish_reason == "the design space is used up: every legal point was tried"
    assert len(eng.store.candidates(rid)) == 6


def test_a_lesson_learnt_again_on_the_same_subject_carries_that_subject_so_pages_list_it_once():
    eng, sink = engine()
    rid = eng.start(goal())
    eng.run(rid)   # 5 generations: lessons at the 5th and again at the end, after confirmation
    lessons = [e.data for _, e in sink.events if e.kind == "lesson_recorded"]
    subjects = [d["subject"] for d in lessons]
    assert all(subjects) and len(set(subjects)) < len(subjects)    # re-learnt subjects, said so
    assert len(eng.knowledge.lessons) == len(set(subjects))         # the store keeps one per subject too
