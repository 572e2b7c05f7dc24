"""Django implementations of the swarm's seams: RunStore, KnowledgeStore, EventSink."""
from __future__ import annotations

import difflib
import json

from django.db import IntegrityError, transaction
from django.utils import timezone

from int21web.runs import models as m
from swarm.events import Event
from swarm.generation import RunRecord
from swarm.knowledge import rank, subject
from swarm.types import Candidate, CandidateDraft, Goal, Lesson, Result


def goal_from(spec: dict) -> Goal:
    return Goal.from_json(spec)


def result_from(data: dict | None) -> Result | None:
    if not data:
        return None
    return Result(**{k: v for k, v in data.items() if k in Result.__dataclass_fields__})


def candidate_from(row: m.Candidate) -> Candidate:
    return Candidate(id=row.id, run_id=row.run_id, generation=row.generation, key=row.key, params=row.params,
                     agent=row.agent, rationale=row.rationale, source=row.source, parents=list(row.parents),
                     result=result_from(row.result), meta=row.meta or {})


def unified_diff(parent: m.Candidate | None, source: str, params: dict) -> str:
    if parent is None:
        return ""
    def text(src, p):
        head = "".join(f"#define {k} {v}\n" for k, v in sorted(p.items()))
        return (head + src).splitlines(keepends=True)
    return "".join(difflib.unified_diff(text(parent.source, parent.params), text(source, params),
                                        fromfile=f"#{parent.id}", tofile="candidate"))


class DjangoStore:
    def create_run(self, goal: Goal, *, started_by=None, goal_row=None, fingerprint: str = "") -> RunRecord:
        row = m.Run.objects.create(spec=goal.to_json(), goal=goal_row, started_by=started_by,
                                   fingerprint=fingerprint)
        return self.load_run(row.id)

    def load_run(self, run_id: int) -> RunRecord:
        row = m.Run.objects.get(pk=run_id)
        return RunRecord(id=row.id, goal=goal_from(row.spec), state=row.state, generation=row.generation,
                         agent_stats=row.agent_stats, best_id=row.best_id, active_seconds=row.active_seconds,
                         stagnant=row.stagnant, guidance_seen=row.guidance_seen, finish_reason=row.finish_reason,
                         llm_usage=row.llm_usage or {})

    def save_run(self, run: RunRecord) -> None:
        fields = dict(generation=run.generation, agent_stats=run.agent_stats, best_id=run.best_id,
                      active_seconds=run.active_seconds, stagnant=run.stagnant, guidance_seen=run.guidance_seen,
                      finish_reason=run.finish_reason, llm_usage=run.llm_usage, updated_at=timezone.now())
        m.Run.objects.filter(pk=run.id).update(**fields)

    def transition(self, run_id, from_states, to_state) -> bool:
        return bool(m.Run.objects.filter(pk=run_id, state__in=from_states).update(
            state=to_state, updated_at=timezone.now()))

    def add_candidate(self, run_id, generation, draft: CandidateDraft, source, key):
        parent = m.Candidate.objects.filter(pk=draft.parents[0]).first() if draft.parents else None
        try:
            with transaction.atomic():
                row = m.Candidate.objects.create(
                    run_id=run_id, generation=generation, key=key, params=draft.params, agent=draft.agent,
                    rationale=draft.rationale[:500], source=source, parents=list(draft.parents),
                    diff=unified_diff(parent, source, draft.params), meta=draft.meta or {})
        except IntegrityError:
            return None
        return candidate_from(row)

    def candidates(self, run_id):
        return [candidate_from(r) for r in m.Candidate.objects.filter(run_id=run_id).order_by("id")]

    def record_result(self, candidate_id, result: Result, outcome):
        with transaction.atomic():
            done = m.Candidate.objects.filter(pk=candidate_id, result__isnull=True).update(
                result=result.to_json(), status=result.status, score=result.score, state="evaluated",
                evaluated_at=timezone.now())
            if done and outcome is not None and not m.Evaluation.objects.filter(
                    candidate_id=candidate_id, finished_at__isnull=False).exists():
                m.Evaluation.objects.update_or_create(
                    candidate_id=candidate_id, attempt=1,
                    defaults={"status": result.status, "outcome": outcome, "worker": "in-process",
                              "finished_at": timezone.now()})
        return bool(done)

    def record_confirmation(self, candidate_id, measurements, speedups=None):
        with transaction.atomic():
            row = m.Candidate.objects.select_for_update().get(pk=candidate_id)
            result = result_from(row.result).confirmed(measurements, speedups)
            row.result, row.score = result.to_json(), result.score
            row.save(update_fields=["result", "score"])
        return result

    def outcome(self, candidate_id):
        ev = (m.Evaluation.objects.filter(candidate_id=candidate_id, finished_at__isnull=False)
              .order_by("-attempt").first())
        return ev.outcome if ev else None

    def cached_result(self, cache_key):
        row = m.ResultCache.objects.filter(cache_key=cache_key).first()
        return result_from(row.result) if row else None

    def remember_result(self, cache_key, result):
        m.ResultCache.objects.update_or_create(cache_key=cache_key, defaults={"result": result.to_json()})

    def save_generation(self, run_id, index, allocation, summary):
        m.Generation.objects.update_or_create(run_id=run_id, index=index,
                                              defaults={"allocation": allocation, "summary": summary})

    def guidance_after(self, run_id, after_id):
        return [(g.id, g.directive, g.author_name or (g.author.username if g.author else "someone"))
                for g in m.Guidance.objects.filter(run_id=run_id, id__gt=after_id).select_related("author")]


class DjangoKnowledge:
    def record(self, lesson: Lesson) -> Lesson:
        subj = json.dumps(subject(lesson), default=str)[:200]
        with transaction.atomic():
            m.Lesson.objects.filter(subject=subj, kind=lesson.kind, workload=lesson.workload,
                                    target=lesson.target).delete()
            row = m.Lesson.objects.create(kind=lesson.kind, workload=lesson.workload, target=lesson.target,
                                          fingerprint=lesson.fingerprint, shape_bucket=lesson.shape_bucket,
                                          subject=subj, text=lesson.text, data=lesson.data,
                                          evidence=lesson.evidence, run_id=lesson.run_id)
        lesson.id = row.id
        return lesson

    def relevant(self, workload, target, fingerprint, shapes, k=20):
        rows = m.Lesson.objects.filter(workload=workload, target=target).order_by("-id")[:500]
        lessons = [Lesson(kind=r.kind, workload=r.workload, target=r.target, fingerprint=r.fingerprint,
                          shape_bucket=r.shape_bucket, text=r.text, data=r.data, evidence=r.evidence, id=r.id,
                          run_id=r.run_id) for r in rows]
        return rank(lessons, workload, target, fingerprint, shapes, k)


class DjangoEventSink:
    """Stores each event with the run's next sequence number, then publishes it on commit."""

    publishers: list = []   # callables (run_id, seq, kind, data), e.g. the websocket layer

    def __init__(self, also=None):
        self.also = also or []

    def emit(self, run_id: int, event: Event) -> None:
        with transaction.atomic():
            row = m.Run.objects.select_for_update().get(pk=run_id)
            seq = row.event_seq + 1
            m.Run.objects.filter(pk=run_id).update(event_seq=seq)
            m.Event.objects.create(run_id=run_id, seq=seq, kind=event.kind, data=event.data)
            for publish in list(self.publishers):
                transaction.on_commit(lambda p=publish: p(run_id, seq, event.kind, event.data))
        for sink in self.also:
            sink.emit(run_id, event)
