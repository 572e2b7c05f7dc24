"""The engine: runs and generations.

Each generation: share the proposal slots among agents (bandit) → agents propose → drop
illegal, steered-out and duplicate drafts → reuse cached outcomes → evaluate the rest
through the executor → record results → credit agents → distil lessons → emit events.
A run stops on its evaluation budget, wall-clock budget, target speedup, stagnation, or
a human stop; it can be paused and resumed, and a run interrupted by a crash resumes
from its stored state without re-evaluating finished candidates.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Protocol

from kernels import targets, workloads
from swarm import registry
from swarm.agents.base import Context
from swarm.events import make_event
from swarm.goals import GoalError, check_goal  # noqa: F401  (GoalError: callers import it from here too)
from swarm.guidance import Steering, validate
from swarm.knowledge import groups, subject
from swarm.knowledge.distil import distil, ranked
from swarm.knowledge.variants import promote, template_for
from swarm.llm.session import LLMSession, open_session
from swarm.selection import elites
from swarm.selection.bandit import AgentStats, allocate
from swarm.space import goal_space
from swarm.stopping import stop_reason
from swarm.types import Candidate, CandidateDraft, Goal, Result, candidate_key


@dataclass
class RunRecord:
    id: int
    goal: Goal
    state: str = "created"          # created | running | paused | finished | failed
    generation: int = 0             # generations completed
    agent_stats: dict = field(default_factory=dict)
    best_id: int | None = None
    active_seconds: float = 0.0
    stagnant: int = 0
    guidance_seen: int = 0          # id of the last directive applied
    finish_reason: str = ""
    llm_usage: dict = field(default_factory=dict)   # the run's LLM ledger (swarm.llm.session)


class RunStore(Protocol):
    """Persistence of runs. Implementations: ``swarm.store.InMemoryStore`` and the Django
    store. ``save_run`` MUST NOT change the state: only ``transition`` does, and only from
    one of ``from_states`` (so a pause taken mid-generation is never overwritten).
    ``add_candidate`` MUST refuse a key already in the run (returns None);
    ``record_result`` MUST be conditional (a second result for a candidate is ignored,
    returning False)."""

    def create_run(self, goal: Goal, **meta) -> RunRecord: ...   # meta: who started it, from which goal
    def load_run(self, run_id: int) -> RunRecord: ...
    def save_run(self, run: RunRecord) -> None: ...      # everything but the state
    def transition(self, run_id: int, from_states: tuple, to_state: str) -> bool: ...  # conditional
    def add_candidate(self, run_id: int, generation: int, draft: CandidateDraft, source: str,
                      key: str) -> Candidate | None: ...
    def candidates(self, run_id: int) -> list[Candidate]: ...
    def record_result(self, candidate_id: int, result: Result, outcome: dict | None) -> bool: ...
    def cached_result(self, cache_key: str) -> Result | None: ...
    def remember_result(self, cache_key: str, result: Result) -> None: ...
    def save_generation(self, run_id: int, index: int, allocation: dict, summary: dict) -> None: ...
    def guidance_after(self, run_id: int, after_id: int) -> list[tuple[int, dict, str]]: ...
    def record_confirmation(self, candidate_id: int, measurements: list[float],
                            speedups: list[dict] | None = None) -> Result: ...   # Result.confirmed


class Executor(Protocol):
    """Evaluates candidates and yields ``(candidate_id, Result, outcome_json)`` as each
    finishes, in any order. It MUST NOT raise for a bad candidate (that is a Result).

    An executor that can also *re-measure* has ``remeasure(goal, candidates, round)``,
    yielding ``(candidate_id, Result)`` from a fresh evaluation of each (round 1, 2, …; the
    same round asked twice may answer from the first); a candidate it could not re-measure
    in time is left out. The engine uses it to confirm a run's best few before it ends."""

    def evaluate(self, goal: Goal, candidates: list[Candidate]) -> Iterable[tuple[int, Result, dict | None]]: ...


# A run's best few are measured this many more times before it ends (see Engine._confirm).
CONFIRM_EXTRA = 2
CONFIRM_PASSES = 4


class Engine:
    def __init__(self, store: RunStore, executor: Executor, knowledge, sink, fingerprint: str = "",
                 clock=time.monotonic, llm_factory=None):
        self.store, self.executor, self.knowledge, self.sink = store, executor, knowledge, sink
        self.fingerprint = fingerprint
        self.clock = clock
        self.llm_factory = llm_factory or open_session   # (goal, usage, emit) -> LLMSession | reason

    # ------------------------------------------------------------------ lifecycle

    def start(self, goal: Goal, **meta) -> int:
        check_goal(goal)
        run = self.store.create_run(goal, **meta)
        run.agent_stats = {a: AgentStats().to_json() for a in goal.team}
        self.store.save_run(run)
        self.store.transition(run.id, ("created",), "running")
        lessons = [] if goal.cold else self._lessons(goal)
        self._emit(run.id, "run_started", goal=goal.to_json(), team=goal.team,
                   lessons_used=[lsn.id for lsn in lessons if lsn.id is not None],
                   composed=[lsn.text for lsn in lessons if lsn.data.get("composed")])
        return run.id

    def pause(self, run_id: int, reason: str = "paused by a person") -> None:
        if self.store.transition(run_id, ("running",), "paused"):
            self._emit(run_id, "run_paused", reason=reason)

    def resume(self, run_id: int, reason: str = "resumed by a person") -> None:
        if self.store.transition(run_id, ("paused",), "running"):
            self._emit(run_id, "run_resumed", reason=reason)

    def run(self, run_id: int, max_generations: int | None = None) -> RunRecord:
        """Drive generations until the run stops, is paused, or ``max_generations`` ran."""
        done = 0
        self._finish_interrupted(run_id)
        while True:
            run = self.store.load_run(run_id)
            if run.state != "running":
                return run
            if max_generations is not None and done >= max_generations:
                return run
            self.step(run_id)
            done += 1

    # ------------------------------------------------------------------ one generation

    def step(self, run_id: int) -> None:
        """One generation: plan it (or finish the run when a stop rule holds) → admit the
        agents' drafts as candidates → evaluate them → credit the agents → close it."""
        t0 = self.clock()
        run = self.store.load_run(run_id)
        goal = run.goal
        wl = workloads.get(goal.workload)
        tpl = self._template(goal, wl)
        shapes = wl.goal_shapes(goal.shapes)
        base_space = goal_space(goal, wl, tpl, shapes)
        steering = self._steering(run, base_space)
        history = self.store.candidates(run_id)
        evaluated = [c for c in history if c.result is not None]
        ctx = self._context(run, wl, tpl, shapes, steering, base_space, history, evaluated)
        stop = stop_reason(run, evaluated, steering, ctx)
        if stop:
            return self._finish(run, evaluated, stop)
        gen = self._plan(run, ctx, steering, evaluated)
        cands = self._admit(gen, self._proposals(run_id, gen.ctx, gen.agents, gen.ordered, gen.slots))
        self._evaluate(run, cands, evaluated)
        history = self.store.candidates(run_id)
        improved = self._credit(gen.stats, history, cands, evaluated)
        self._reflect(run_id, gen.ctx, gen.agents, history, cands)
        self._close(run_id, gen, history, cands, improved, t0)

    # ------------------------------------------------------------------ a generation's phases

    def _context(self, run: RunRecord, wl, tpl, shapes, steering: Steering, base_space, history: list[Candidate],
                 evaluated: list[Candidate]) -> Context:
        """What the agents see this generation: the space as steered, the history and its
        elites, the lessons, the run's model when an agent needs one."""
        goal, run_id = run.goal, run.id
        space = steering.restrict(base_space)
        ctx = Context(goal=goal, workload=wl, template=tpl, space=space, shapes=shapes, history=evaluated,
                      elites=elites(evaluated, max(4, goal.population)),
                      lessons=[] if goal.cold else self._lessons(goal, shapes),
                      rng=random.Random(f"{goal.seed}:{run.generation}"),
                      generation=run.generation, seen={c.key for c in history}, notes=steering.notes,
                      run_id=run_id, emit=lambda kind, **data: self._emit(run_id, kind, **data),
                      outcome=getattr(self.store, "outcome", lambda candidate_id: None),
                      natural=self._natural(goal.target, space))
        return ctx

    def _plan(self, run: RunRecord, ctx: Context, steering: Steering, evaluated: list[Candidate]) -> _Generation:
        """Who proposes how many: the agents able to act share the generation's slots by their
        payoff (the bandit), the favoured first. Emits ``generation_started``."""
        goal, run_id = run.goal, run.id
        stats = {a: AgentStats(**{k: v for k, v in s.items() if k != "payoff"}) for a, s in run.agent_stats.items()}
        slots = min(goal.population, goal.budget.evaluations - len(evaluated))
        agents = {name: registry.get(name) for name in goal.team}
        if any(getattr(a, "needs_model", False) for a in agents.values()):
            ctx.llm = self.llm_factory(goal, run.llm_usage, ctx.emit)
        able = [a for a in goal.team if not agents[a].cannot_act(ctx)]
        if run.generation == 0 and isinstance(ctx.llm, str):   # say once why the model's agents stand aside
            for a in goal.team:
                if getattr(agents[a], "needs_model", False):
                    self._emit(run_id, "agent_note", agent=a, text=f"stands aside: {ctx.llm}")
        favoured = set(steering.favoured)
        if run.generation == 0 and "seeded" in able:
            favoured.add("seeded")   # a warm start begins where the last run ended
        allocation = allocate(stats, able, slots, favoured=favoured, muted=steering.muted)
        allocation.update({a: 0 for a in goal.team if a not in allocation})
        self._emit(run_id, "generation_started", generation=run.generation, allocation=allocation)
        # The favoured agents' proposals go first: the generation is evaluated in this order
        # (one worker evaluates one candidate after another), so a warm start's remembered
        # best, or the agent a person favoured, is measured before the rest.
        ordered = {a: allocation[a] for a in sorted(allocation, key=lambda a: a not in favoured)}
        return _Generation(ctx=ctx, agents=agents, stats=stats, allocation=allocation, ordered=ordered, slots=slots)

    def _admit(self, gen: _Generation, drafts: list[CandidateDraft]) -> list[Candidate]:
        """The drafts as the run's new candidates, each announced; a draft whose key the run
        already has is dropped (the store refuses it)."""
        ctx = gen.ctx
        cands = []
        for d in drafts:
            source = d.source or ctx.template.source(ctx.template.variant_of(d.params))
            key = candidate_key(source, d.params)
            c = self.store.add_candidate(ctx.run_id, ctx.generation, d, source, key)
            if c is None:
                continue
            ctx.seen.add(key)
            cands.append(c)
            self._emit(ctx.run_id, "candidate_proposed", candidate_id=c.id, generation=ctx.generation,
                       agent=c.agent, rationale=c.rationale, params=c.params, parents=c.parents)
        return cands

    def _credit(self, stats: dict, history: list[Candidate], cands: list[Candidate],
                evaluated_before: list[Candidate]) -> bool:
        """Each agent's payoff, decayed, plus this generation's judged candidates: a new best of
        the run counts 1, a clear gain over a parent 0.5. True when the run's best improved."""
        best_before = max((c.score for c in evaluated_before), default=0.0)
        by_id = {c.id: c for c in history}
        improved = False
        for a in stats.values():
            a.decay()
        for c in (by_id[x.id] for x in cands):
            if c.result is None:
                continue
            s = stats.setdefault(c.agent, AgentStats())
            s.evaluations += 1
            s.total_evaluations += 1
            parent_best = max((by_id[p].score for p in c.parents if p in by_id), default=0.0)
            gain = 1.0 if c.score > best_before * 1.01 else (0.5 if c.score > parent_best * 1.02 and c.parents else 0.0)
            if c.score > best_before * 1.01:
                improved = True
            s.improvements += gain
            s.total_improvements += int(gain > 0)
        return improved

    def _close(self, run_id: int, gen: _Generation, history: list[Candidate], cands: list[Candidate],
               improved: bool, t0: float) -> None:
        """Store the run's new state (agent stats, LLM ledger, stagnation, best, time spent)
        and the generation's summary; emit ``generation_finished``; lessons every 5th."""
        evaluated_now = [c for c in history if c.result is not None]
        by_id = {c.id: c for c in history}
        run = self.store.load_run(run_id)
        run.agent_stats = {a: s.to_json() for a, s in gen.stats.items()}
        if isinstance(gen.ctx.llm, LLMSession):
            run.llm_usage = dict(gen.ctx.llm.usage)
        run.stagnant = 0 if improved else run.stagnant + 1
        best = next(iter(ranked(evaluated_now)), None)
        run.best_id = best.id if best else None
        run.generation += 1
        run.active_seconds += self.clock() - t0
        summary = {
            "proposed": len(cands),
            "statuses": dict(Counter(c.result.status for c in (by_id[x.id] for x in cands) if c.result)),
            "best_score": best.score if best else 0.0,
            "evaluations": len(evaluated_now),
            "payoff": {a: round(s.payoff(), 4) for a, s in gen.stats.items()},
        }
        self.store.save_generation(run_id, run.generation - 1, gen.allocation, summary)
        self.store.save_run(run)
        self._emit(run_id, "generation_finished", generation=run.generation - 1, allocation=gen.allocation,
                   summary=summary)
        if run.generation % 5 == 0:
            self._distil(run, evaluated_now)

    # ------------------------------------------------------------------ parts

    def _proposals(self, run_id, ctx: Context, agents: dict, allocation: dict, slots: int) -> list[CandidateDraft]:
        drafts: list[CandidateDraft] = []
        for name, n in allocation.items():
            if n <= 0:
                continue
            try:
                proposed = agents[name].propose(ctx, n)[:n]
            except Exception as exc:  # an agent bug must not stop the run; it is reported
                self._emit(run_id, "agent_note", agent=name, text=f"proposal failed: {type(exc).__name__}: {exc}")
                proposed = []
            for d in proposed:
                if ctx.fresh_draft(d) and ctx.draft_key(d) not in [ctx.draft_key(x) for x in drafts]:
                    drafts.append(d)
        if len(drafts) < slots:  # top up, so a generation never shrinks because an agent could not act
            filler = registry.get("explorer").propose(ctx, slots - len(drafts) + 2)
            for d in filler:
                if len(drafts) >= slots:
                    break
                if d.params not in [x.params for x in drafts]:
                    d.rationale = "top-up: " + d.rationale
                    drafts.append(d)
        return drafts[:slots]

    def _evaluate(self, run: RunRecord, cands: list[Candidate], evaluated: list[Candidate]) -> None:
        goal = run.goal
        todo = []
        best = max((c.score for c in evaluated), default=0.0)
        count = len(evaluated)
        for c in cands:
            hit = self.store.cached_result(self._cache_key(goal, c))
            if hit is not None:
                hit.cached = True
                best, count = self._record(run, c, hit, None, best, count)
            else:
                todo.append(c)
        by_id = {c.id: c for c in todo}
        for cid, result, outcome in self.executor.evaluate(goal, todo):
            c = by_id.get(cid)
            if c is None:
                continue
            if result.status not in ("timeout", "crashed") or result.cached:
                self.store.remember_result(self._cache_key(goal, c), result)
            best, count = self._record(run, c, result, outcome, best, count)

    def _record(self, run, c: Candidate, result: Result, outcome, best: float, count: int):
        if not self.store.record_result(c.id, result, outcome):
            return best, count
        count += 1
        # An executor that re-queued the candidate (its worker vanished) says which attempt counted.
        attempt = (outcome or {}).get("attempt", 1) if isinstance(outcome, dict) else 1
        retry = {"attempt": attempt, "retry": True} if attempt > 1 else {}
        self._emit(run.id, "candidate_evaluated", candidate_id=c.id, generation=c.generation, agent=c.agent,
                   status=result.status, reason=result.reason, score=result.score, speedup=result.speedup,
                   median_ms=result.median_ms, stages=result.stages, cached=result.cached, **retry)
        if result.ok and result.score > best:
            best = result.score
            self._emit(run.id, "new_best", candidate_id=c.id, score=result.score, speedup=result.speedup,
                       params=c.params, evaluations=count, median_ms=result.median_ms)
        return best, count

    def _finish_interrupted(self, run_id: int) -> None:
        """Candidates proposed before a crash but never judged are evaluated now, once."""
        run = self.store.load_run(run_id)
        if run.state != "running":
            return
        history = self.store.candidates(run_id)
        pending = [c for c in history if c.result is None]
        if pending:
            self._evaluate(run, pending, [c for c in history if c.result is not None])

    def _finish(self, run: RunRecord, evaluated: list[Candidate], reason: str) -> None:
        evaluated, confirmations = self._confirm(run, evaluated)
        self._distil(run, evaluated)
        best = next(iter(ranked(evaluated)), None)   # a confirmed one, once any was confirmed
        run = self.store.load_run(run.id)
        run.finish_reason = reason
        run.best_id = best.id if best else None
        self.store.save_run(run)
        if not self.store.transition(run.id, ("running", "paused"), "finished"):
            return
        self._emit(run.id, "run_finished", reason=reason, evaluations=len(evaluated), confirmations=confirmations,
                   best=None if best is None else {"candidate_id": best.id, "score": best.score,
                                                   "params": best.params, "speedup": best.result.speedup,
                                                   "median_ms": best.result.median_ms,
                                                   "measurements": best.result.measurements})

    def _confirm(self, run: RunRecord, evaluated: list[Candidate]) -> tuple[list[Candidate], int]:
        """Before a run ends, its best few (``goal.confirm_top``) are measured again in fresh
        evaluations (``CONFIRM_EXTRA`` more each, round-robin so a slow phase of the host is
        shared out) and each is scored by the median of its measurements. One measurement is
        one draw from a noisy host, and the highest of a run's draws is an optimist: without
        this, the run's best, and the lesson the next run starts from, is often a lucky draw.
        Further passes (at most ``CONFIRM_PASSES``) confirm single-measurement candidates that
        an earlier pass lifted into the top. Returns the history as it now stands and the
        number of re-measurements."""
        remeasure = getattr(self.executor, "remeasure", None)
        top_n = max(0, run.goal.confirm_top)
        done = 0
        for _ in range(CONFIRM_PASSES if remeasure and top_n else 0):
            top = sorted((c for c in evaluated if c.result.ok), key=lambda c: -c.score)[:top_n]
            todo = [c for c in top if not c.result.measurements]
            if not todo:
                break
            scores = {c.id: [c.result.score] for c in todo}
            speeds = {c.id: [c.result.speedup] for c in todo}
            for rnd in range(1, CONFIRM_EXTRA + 1):
                for cid, result in remeasure(run.goal, todo, rnd):
                    if cid in scores:
                        # Failing a later measurement scores 0 there: a kernel that is correct
                        # only sometimes is not a best.
                        scores[cid].append(result.score if result.ok else 0.0)
                        speeds[cid].append(result.speedup if result.ok else {})
                        done += 1
            for c in todo:
                confirmed = self.store.record_confirmation(c.id, scores[c.id], speeds[c.id])
                self.store.remember_result(self._cache_key(run.goal, c), confirmed)
                self._emit(run.id, "candidate_confirmed", candidate_id=c.id, measurements=scores[c.id],
                           score=confirmed.score, first=scores[c.id][0], speedup=confirmed.speedup)
            evaluated = [c for c in self.store.candidates(run.id) if c.result is not None]
        return evaluated, done

    def _distil(self, run: RunRecord, evaluated: list[Candidate]) -> None:
        goal = run.goal
        wl = workloads.get(goal.workload)
        shapes = wl.goal_shapes(goal.shapes)
        lessons = distil(evaluated, workload=goal.workload, target=goal.target, fingerprint=self.fingerprint,
                         shapes=shapes, run_id=run.id)
        lessons += groups.project(list(wl.groups), lessons)
        lessons += promote(evaluated, lessons, self._template(goal, wl), run_id=run.id, shapes=shapes,
                           workload=goal.workload, target=goal.target)
        for lesson in lessons:
            self._learn(run.id, lesson)

    def _learn(self, run_id: int, lesson) -> None:
        """Store a lesson (the store keeps one per subject) and say so, with its subject: the
        run page shows a lesson re-learnt on the same subject in place of the earlier one."""
        stored = self.knowledge.record(lesson)
        self._emit(run_id, "lesson_recorded", lesson_id=stored.id, kind=stored.kind, text=stored.text,
                   evidence=stored.evidence, subject=json.dumps(subject(stored), default=str))

    def _reflect(self, run_id: int, ctx: Context, agents: dict, history: list[Candidate], new: list[Candidate]):
        """Agents with a ``reflect(ctx, new) -> lessons`` hook (the analyst) read the generation."""
        hooks = {n: a.reflect for n, a in agents.items() if hasattr(a, "reflect")}
        if not hooks:
            return
        ctx.history = [c for c in history if c.result is not None]
        ctx.elites = elites(ctx.history, max(4, ctx.goal.population))
        ids = {c.id for c in new}
        for name, hook in hooks.items():
            try:
                lessons = hook(ctx, [c for c in ctx.history if c.id in ids])
            except Exception as exc:  # an agent bug must not stop the run; it is reported
                self._emit(run_id, "agent_note", agent=name, text=f"reflection failed: {type(exc).__name__}: {exc}")
                continue
            for lesson in lessons:
                self._learn(run_id, lesson)

    def _natural(self, target: str, space) -> dict:
        """The target's natural starting values (one thread per core, its widest vectors)."""
        try:
            return dict(targets.get(target).natural_values(space))
        except Exception:   # a target without conventions, or one that cannot describe its host
            return {}

    def _template(self, goal: Goal, wl):
        """The workload's template plus the variants earlier runs' rewrites won (not when cold)."""
        return template_for(goal, wl, self.knowledge, self.fingerprint)

    def _steering(self, run: RunRecord, space) -> Steering:
        steering = Steering()
        for k, v in run.goal.pins.items():
            steering.apply({"op": "pin", "param": k, "value": v}, space)
        newest = run.guidance_seen
        for gid, directive, author in self.store.guidance_after(run.id, 0):
            try:
                directive = validate(directive, space, run.goal.team)
            except ValueError:
                continue
            effect = steering.apply(directive, space)
            if gid > run.guidance_seen:
                self._emit(run.id, "guidance_applied", guidance_id=gid, directive=directive, author=author,
                           effect=effect)
                newest = max(newest, gid)
        if newest != run.guidance_seen:
            run.guidance_seen = newest
            self.store.save_run(run)
        return steering

    def _lessons(self, goal: Goal, shapes=None):
        wl = workloads.get(goal.workload)
        shapes = shapes or wl.goal_shapes(goal.shapes)
        own = self.knowledge.relevant(goal.workload, goal.target, self.fingerprint, shapes, 20)
        if not wl.groups or goal.target not in wl.templates:
            return own
        return own + groups.seeds(list(wl.groups), wl.template(goal.target).space, self.knowledge, goal.target,
                                  self.fingerprint, shapes, champions=_champions)

    def _cache_key(self, goal: Goal, c: Candidate) -> str:
        blob = json.dumps([c.key, goal.target, goal.shapes, goal.metric, goal.eval_settings, self.fingerprint],
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:40]

    def _emit(self, run_id: int, event_kind: str, **data) -> None:
        self.sink.emit(run_id, make_event(event_kind, **data))



def _champions(workload: str, target: str) -> list:
    """A built-in workload's library champions as ``[(bucket, params)]`` (none when unreadable)."""
    from kernels import library
    try:
        return [(bucket, m.get("params") or {}) for bucket, m in library.champions(workload, target).items()]
    except (OSError, ValueError, library.LibraryError):
        return []


@dataclass
class _Generation:
    """A planned generation: the agents' context, the agents, their stats (credited in place),
    the slots each was given (``allocation``; ``ordered``: the favoured first)."""

    ctx: Context
    agents: dict
    stats: dict
    allocation: dict
    ordered: dict
    slots: int
