"""What the swarm stores. The swarm engine reads and writes these only through
``int21web.runs.store`` (its RunStore/KnowledgeStore/EventSink adapters)."""
import json

from django.conf import settings
from django.db import models


class Goal(models.Model):
    """A saved goal: the spec is ``swarm.types.Goal`` as JSON."""

    name = models.CharField(max_length=200)
    spec = models.JSONField()
    required_approvals = models.PositiveSmallIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True, help_text="out of the list, kept for its runs")

    def __str__(self):
        return self.name


class Run(models.Model):
    STATES = [(s, s) for s in ("created", "running", "paused", "finished", "failed")]
    ENDED = ("finished", "failed")      # no driver, guidance, pause or resume applies any more

    goal = models.ForeignKey(Goal, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    spec = models.JSONField(help_text="the goal as it was when the run started")
    state = models.CharField(max_length=16, choices=STATES, default="created")
    generation = models.PositiveIntegerField(default=0)
    agent_stats = models.JSONField(default=dict)
    best = models.ForeignKey("Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    active_seconds = models.FloatField(default=0.0)
    stagnant = models.PositiveIntegerField(default=0)
    guidance_seen = models.BigIntegerField(default=0)
    finish_reason = models.CharField(max_length=300, blank=True)
    event_seq = models.BigIntegerField(default=0)
    fingerprint = models.CharField(max_length=64, blank=True)
    llm_usage = models.JSONField(default=dict, blank=True,
                                 help_text="LLM spend: requests, tokens_in/out, cost, unusable, errors, paused")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # The driver's lease: one process drives a run at a time (services.run_drive).
    lease_holder = models.CharField(max_length=200, blank=True, help_text="host:pid:token of the driver")
    lease_until = models.DateTimeField(null=True, blank=True)
    # Drivers that died holding the lease (never released it) during the same generation, in a
    # row: a crash that kills its process would otherwise be resumed into again at every restart.
    driver_deaths = models.PositiveSmallIntegerField(default=0)
    driver_death_generation = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"run {self.pk} ({self.spec.get('workload')} on {self.spec.get('target')})"


class Generation(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="generations")
    index = models.PositiveIntegerField()
    allocation = models.JSONField()
    summary = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_row_per_generation")]
        ordering = ["run", "index"]


class Candidate(models.Model):
    STATES = [(s, s) for s in ("proposed", "queued", "running", "evaluated")]

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="candidates")
    generation = models.PositiveIntegerField()
    key = models.CharField(max_length=64, help_text="hash of normalised source + params")
    params = models.JSONField()
    agent = models.CharField(max_length=40)
    rationale = models.CharField(max_length=500)
    source = models.TextField()
    parents = models.JSONField(default=list)
    diff = models.TextField(blank=True, help_text="unified diff against the first parent")
    meta = models.JSONField(default=dict, blank=True,
                            help_text="an LLM-written candidate: model, prompt, raw answer, tokens, latency")
    state = models.CharField(max_length=16, choices=STATES, default="proposed")
    attempt = models.PositiveSmallIntegerField(default=0, help_text="the attempt most recently queued")
    status = models.CharField(max_length=24, blank=True)
    score = models.FloatField(default=0.0)
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="candidate_once_per_run")]
        ordering = ["run", "id"]

    @property
    def speed(self) -> dict:
        """The one speed number every page shows (templates/runs/_speed.html): the score (once
        confirmed, the median of its measurements) with the spread, or marked as one measurement."""
        measured = [x for x in (self.result or {}).get("measurements") or [] if x is not None]
        if len(measured) < 2:
            return {"score": self.score, "n": 1, "single": True}
        return {"score": self.score, "n": len(measured), "low": min(measured), "high": max(measured), "single": False}


class Evaluation(models.Model):
    """Every attempt at judging a candidate, with all its stage reports.

    The row is the claim: a worker that inserts it evaluates; a second delivery of the same
    attempt finds it and does nothing. The evaluating process beats ``heartbeat_at``; the
    orchestrator marks an attempt whose heartbeat went stale as lost and queues the next one.
    Only one attempt per candidate ever gets ``finished_at`` (a lost one's late result is refused)."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="evaluations")
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=24, blank=True)
    outcome = models.JSONField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    lost_at = models.DateTimeField(null=True, blank=True, help_text="given up: its worker stopped beating")
    evaluator_seconds = models.FloatField(null=True, blank=True, help_text="time inside the evaluator")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["candidate", "attempt"], name="one_row_per_attempt")]


class Remeasurement(models.Model):
    """A fresh measurement of a candidate already judged: a run confirms its best few before it
    ends (``swarm.generation.Engine._confirm``). The row is the claim, as for ``Evaluation``: a
    second delivery of the same round finds it and does nothing. A round whose worker vanished
    is not retried; the run waits ``INT21_REMEASURE_TIMEOUT_SECONDS`` and goes on without it."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="remeasurements")
    round = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=24, blank=True)
    score = models.FloatField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["candidate", "round"], name="one_row_per_remeasure_round")]


class ResultCache(models.Model):
    """Outcomes reused across runs on the same target fingerprint and settings."""

    cache_key = models.CharField(max_length=64, unique=True)
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)


class Lesson(models.Model):
    kind = models.CharField(max_length=24)
    workload = models.CharField(max_length=64)
    target = models.CharField(max_length=32)
    fingerprint = models.CharField(max_length=64, blank=True)
    shape_bucket = models.CharField(max_length=64, blank=True)
    subject = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    data = models.JSONField(default=dict)
    evidence = models.JSONField(default=list)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="lessons")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["workload", "target"])]


class Guidance(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="guidance")
    directive = models.JSONField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    author_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    @property
    def text(self) -> str:
        """The directive as the run page shows it, live (run.js: JSON.stringify) and after reload."""
        return json.dumps(self.directive, separators=(",", ":"), ensure_ascii=False)


class Event(models.Model):
    """Append-only, one sequence per run; stored before it is published."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    kind = models.CharField(max_length=40)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_seq_per_run")]
        ordering = ["run", "seq"]
