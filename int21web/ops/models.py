from django.conf import settings
from django.db import models


class ImportedOp(models.Model):
    """One imported problem. The workload itself lives in the content-addressed store
    (INT21_OPS_DIR, read by kernels.workloads); this row says who imported it and when, and
    keeps the import's summary for the pages."""

    name = models.CharField(max_length=64, unique=True)
    digest = models.CharField(max_length=64)
    summary = models.JSONField(default=dict)
    source = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Engine(models.Model):
    """One engine (kernels.engine): a model's phases imported as problems. The record itself
    lives beside the imports (INT21_OPS_DIR/engines/<name>.json, written by kernels.engine);
    this row says who made it and when, keeps a copy of the record for the pages, and the
    runs that searched each phase (``runs``: {phase: [run ids]}; ``results``: the last
    ``engine run``'s per-phase summary, peers' final session included)."""

    name = models.CharField(max_length=64, unique=True)
    record = models.JSONField(default=dict)
    runs = models.JSONField(default=dict)
    results = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="engines")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class EngineJob(models.Model):
    """One long operation on an engine asked for through the API (``int21web.ops.jobs``): a
    check, a greedy-decode check, a run (search every phase, then time the best against the
    peers) or a breakdown. It runs as a chain of tasks, one step each (``steps``, ``cursor``),
    so that no task outlives the workers' time limits; ``progress`` says where it is,
    ``result`` is what the command line's ``--json`` prints, ``reason`` why it failed."""

    STATES = [(s, s) for s in ("queued", "running", "done", "failed")]
    ACTIVE = ("queued", "running")

    engine = models.ForeignKey(Engine, on_delete=models.CASCADE, related_name="jobs")
    action = models.CharField(max_length=16)
    options = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=STATES, default="queued")
    steps = models.JSONField(default=list)
    cursor = models.IntegerField(default=0)
    data = models.JSONField(default=dict)
    progress = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="engine_jobs")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} of {self.engine_id} ({self.state})"
