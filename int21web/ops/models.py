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
