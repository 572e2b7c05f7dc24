"""Lessons: what earlier runs learned, kept as data with evidence.

``KnowledgeStore`` is the seam (an in-memory one here for tests and the CLI; the Django one
is ``int21web.runs.store.DjangoKnowledge``). ``distil`` turns a run's history into lessons.
"""
from __future__ import annotations

import math
from typing import Protocol

from swarm.types import Lesson


class KnowledgeStore(Protocol):
    """``record`` stores a lesson (replacing an older one with the same kind and subject)
    and returns it with its id. ``relevant`` returns at most ``k`` lessons for this
    workload and target, the nearest shapes first, this host's fingerprint preferred."""

    def record(self, lesson: Lesson) -> Lesson: ...
    def relevant(self, workload: str, target: str, fingerprint: str, shapes: list, k: int = 20) -> list[Lesson]: ...


def shape_bucket(shape) -> str:
    return "x".join(f"2^{round(math.log2(max(v, 1)))}" for _, v in shape.dims)


def bucket_distance(a: str, b: str) -> float:
    """Log2 distance between two buckets (0 = same bucket); unknown layouts are far."""
    if not a or not b:
        return 8.0
    pa, pb = a.split("x"), b.split("x")
    if len(pa) != len(pb):
        return 99.0
    return sum(abs(int(x[2:]) - int(y[2:])) for x, y in zip(pa, pb))


def subject(lesson: Lesson) -> tuple:
    return (lesson.kind, lesson.workload, lesson.target, lesson.fingerprint, lesson.shape_bucket,
            lesson.data.get("subject", ""))


def rank(lessons: list[Lesson], workload: str, target: str, fingerprint: str, shapes: list, k: int) -> list[Lesson]:
    buckets = [shape_bucket(s) for s in shapes] or [""]
    scored = []
    for lesson in lessons:
        if lesson.workload != workload or lesson.target != target:
            continue
        dist = min(bucket_distance(lesson.shape_bucket, b) for b in buckets) if lesson.shape_bucket else 4.0
        host = 0.0 if lesson.fingerprint in ("", fingerprint) else 3.0
        scored.append((dist + host, -(lesson.id or 0), lesson))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [lesson for _, _, lesson in scored[:k]]


class InMemoryKnowledge:
    def __init__(self):
        self.lessons: list[Lesson] = []
        self._next = 1

    def record(self, lesson: Lesson) -> Lesson:
        self.lessons = [old for old in self.lessons if subject(old) != subject(lesson)]
        lesson.id = self._next
        self._next += 1
        self.lessons.append(lesson)
        return lesson

    def relevant(self, workload, target, fingerprint, shapes, k=20):
        return rank(self.lessons, workload, target, fingerprint, shapes, k)
