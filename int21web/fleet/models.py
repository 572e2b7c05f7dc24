"""What the fleet knows about its workers (written only by the workers themselves)."""
from django.db import models


class Worker(models.Model):
    name = models.CharField(max_length=200, unique=True, help_text="Celery node name, e.g. cpu@host")
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField(default=0)
    queues = models.JSONField(default=list)
    targets = models.JSONField(default=list, help_text="hardware targets it evaluates for")
    concurrency = models.PositiveSmallIntegerField(default=1)
    fingerprint = models.JSONField(default=dict, help_text="per target: CPU model/flags, GPU, compilers")
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name
