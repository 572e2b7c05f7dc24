"""In-memory implementations of the engine's seams (tests, benchmarks, scripted runs)."""
from __future__ import annotations

import copy
import itertools

from swarm.generation import RunRecord
from swarm.types import Candidate, CandidateDraft, Goal, Result


class InMemoryStore:
    def __init__(self):
        self.runs: dict[int, RunRecord] = {}
        self.cands: dict[int, Candidate] = {}
        self.outcomes: dict[int, dict] = {}
        self.cache: dict[str, Result] = {}
        self.generations: dict[tuple[int, int], dict] = {}
        self.guidance: list[tuple[int, int, dict, str]] = []   # (id, run_id, directive, author)
        self._ids = itertools.count(1)
        self._cids = itertools.count(1)

    def create_run(self, goal: Goal, **meta) -> RunRecord:
        run = RunRecord(id=next(self._ids), goal=goal)
        self.runs[run.id] = run
        return copy.deepcopy(run)

    def load_run(self, run_id: int) -> RunRecord:
        return copy.deepcopy(self.runs[run_id])

    def save_run(self, run: RunRecord) -> None:
        state = self.runs[run.id].state
        self.runs[run.id] = copy.deepcopy(run)
        self.runs[run.id].state = state

    def transition(self, run_id, from_states, to_state) -> bool:
        if self.runs[run_id].state not in from_states:
            return False
        self.runs[run_id].state = to_state
        return True

    def add_candidate(self, run_id, generation, draft: CandidateDraft, source, key):
        if any(c.run_id == run_id and c.key == key for c in self.cands.values()):
            return None
        c = Candidate(id=next(self._cids), run_id=run_id, generation=generation, key=key, params=dict(draft.params),
                      agent=draft.agent, rationale=draft.rationale, source=source, parents=list(draft.parents),
                      meta=copy.deepcopy(draft.meta))
        self.cands[c.id] = c
        return copy.deepcopy(c)

    def candidates(self, run_id):
        return [copy.deepcopy(c) for c in self.cands.values() if c.run_id == run_id]

    def record_result(self, candidate_id, result, outcome):
        c = self.cands[candidate_id]
        if c.result is not None:
            return False
        c.result = copy.deepcopy(result)
        self.outcomes[candidate_id] = outcome
        return True

    def record_confirmation(self, candidate_id, measurements, speedups=None):
        c = self.cands[candidate_id]
        c.result = c.result.confirmed(measurements, speedups)
        return copy.deepcopy(c.result)

    def outcome(self, candidate_id):
        return copy.deepcopy(self.outcomes.get(candidate_id))

    def cached_result(self, cache_key):
        hit = self.cache.get(cache_key)
        return copy.deepcopy(hit) if hit else None

    def remember_result(self, cache_key, result):
        self.cache[cache_key] = copy.deepcopy(result)

    def save_generation(self, run_id, index, allocation, summary):
        self.generations[(run_id, index)] = {"allocation": allocation, "summary": summary}

    def add_guidance(self, run_id: int, directive: dict, author: str = "tester") -> int:
        gid = len(self.guidance) + 1
        self.guidance.append((gid, run_id, directive, author))
        return gid

    def guidance_after(self, run_id, after_id):
        return [(gid, d, a) for gid, rid, d, a in self.guidance if rid == run_id and gid > after_id]
