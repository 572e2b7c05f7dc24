"""Typed events: a literal ``kind``, JSON-only payloads, unknown or missing fields rejected.

Events are stored append-only with a per-run sequence number before they are published;
a page that reconnects replays what it missed from that sequence.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

EVENT_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required fields, optional fields)
    "run_started": ({"goal", "team"}, {"lessons_used", "composed"}),
    "run_paused": ({"reason"}, set()),
    "run_resumed": ({"reason"}, set()),
    "run_finished": ({"reason", "evaluations"}, {"best", "confirmations"}),
    # the driver raised (a bug, not a bad candidate): the run ends; the traceback is in the log
    "run_failed": ({"reason"}, set()),
    "generation_started": ({"generation", "allocation"}, set()),
    "generation_finished": ({"generation", "allocation", "summary"}, set()),
    "candidate_proposed": ({"candidate_id", "generation", "agent", "rationale", "params", "parents"}, set()),
    "candidate_evaluated": ({"candidate_id", "generation", "agent", "status", "reason", "score", "speedup",
                             "median_ms", "stages"}, {"cached", "attempt", "retry"}),
    # a run's best few, measured again before it ends: score = median of the measurements
    # (speedup: each baseline's median over the measurements)
    "candidate_confirmed": ({"candidate_id", "measurements", "score", "first"}, {"speedup"}),
    "lesson_recorded": ({"lesson_id", "kind", "text"}, {"evidence", "subject"}),
    "guidance_applied": ({"guidance_id", "directive", "author"}, {"effect"}),
    "new_best": ({"candidate_id", "score", "speedup", "params", "evaluations"}, {"median_ms"}),
    "agent_note": ({"agent", "text"}, set()),
    # language models (swarm/llm): every request, every unusable answer (kept raw), the pause
    "llm_call": ({"agent", "purpose", "model", "ok", "latency_ms"},
                 {"tokens_in", "tokens_out", "cost", "error", "error_kind", "attempt"}),
    "llm_proposal_failed": ({"agent", "reason", "answer"}, {"parent_id", "attempt", "prompt_id"}),
    "llm_paused": ({"reason", "usage"}, set()),
}


class EventError(ValueError):
    pass


@dataclass(frozen=True)
class Event:
    kind: str
    data: dict

    def to_json(self) -> dict:
        return {"kind": self.kind, **self.data}


def make_event(event_kind: str, /, **data) -> Event:
    kind = event_kind
    if kind not in EVENT_FIELDS:
        raise EventError(f"unknown event kind {kind!r}")
    required, optional = EVENT_FIELDS[kind]
    missing = required - set(data)
    unknown = set(data) - required - optional
    if missing or unknown:
        raise EventError(f"{kind}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    try:
        json.dumps(data)
    except (TypeError, ValueError) as exc:
        raise EventError(f"{kind}: payload is not JSON: {exc}") from None
    return Event(kind, data)


class EventSink(Protocol):
    """Receives every event of a run, in order. MUST store before publishing."""

    def emit(self, run_id: int, event: Event) -> None: ...


class ListSink:
    """Records events instead of publishing them (tests, the CLI's JSON mode)."""

    def __init__(self):
        self.events: list[tuple[int, Event]] = []

    def emit(self, run_id: int, event: Event) -> None:
        self.events.append((run_id, event))

    def kinds(self) -> list[str]:
        return [e.kind for _, e in self.events]
