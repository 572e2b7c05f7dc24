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
