"""Reviews (the approval gate), promoted kernels, comments and the audit trail.

Written only through ``int21web.library.services``; the runs app's rows (Candidate,
Evaluation, Goal, Run) are read here, never migrated here."""
from django.conf import settings
from django.db import models
from django.db.models import Q


class Comment(models.Model):
    """A remark on a candidate, shown on its page (engineers and reviewers may comment)."""

    candidate = models.ForeignKey("runs.Candidate", on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    author_name = models.CharField(max_length=150)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class EngineProposal(models.Model):
    """An engine proposed for promotion as one unit: its phases' champion candidates, each
    a phase :class:`Proposal` (``phases``) that goes through the same gate as a kernel's —
    the goal's approvals, no approving a run you started, dismissal on a different result,
    the held-out re-check in a fresh sandbox — approved and decided together. When every
    phase's re-check has passed, one :class:`EngineVersion` is promoted."""

    STATES = [(s, s) for s in ("open", "changes_requested", "rechecking", "recheck_failed", "promoted")]
    OPEN_STATES = ("open", "rechecking")

    engine = models.ForeignKey("ops.Engine", on_delete=models.CASCADE, related_name="proposals")
    state = models.CharField(max_length=20, choices=STATES, default="open")
    note = models.TextField(blank=True)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=500, blank=True, help_text="why it is in its state, in words")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["engine"], condition=Q(state__in=["open", "rechecking"]),
                                               name="one_open_proposal_per_engine")]


class Proposal(models.Model):
    """A candidate proposed for promotion into the library: a pull request for a kernel.

    open → (approvals reach the goal's count) → rechecking (held-out shapes, fresh sandbox)
    → promoted | recheck_failed; a reviewer may instead request changes (changes_requested).
    """

    STATES = [(s, s) for s in ("open", "changes_requested", "rechecking", "recheck_failed", "promoted")]
    OPEN_STATES = ("open", "rechecking")

    candidate = models.ForeignKey("runs.Candidate", on_delete=models.CASCADE, related_name="proposals")
    state = models.CharField(max_length=20, choices=STATES, default="open")
    note = models.TextField(blank=True)
    shape_bucket = models.CharField(max_length=64)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    evaluation = models.ForeignKey("runs.Evaluation", null=True, on_delete=models.SET_NULL, related_name="+",
                                   help_text="the evaluation the candidate was proposed on")
    recheck = models.ForeignKey("runs.Evaluation", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+", help_text="the held-out re-evaluation before promotion")
    reason = models.CharField(max_length=500, blank=True, help_text="why it is in its state, in words")
    engine_proposal = models.ForeignKey(EngineProposal, null=True, blank=True, on_delete=models.CASCADE,
                                        related_name="phases", help_text="set when it is one phase of an engine's")
    phase = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["candidate"], condition=Q(state__in=["open", "rechecking"]),
                                               name="one_open_proposal_per_candidate")]


class Review(models.Model):
    """A reviewer's decision. An approval keeps the result it was given on (status, score
    and the evaluation); it is dismissed when the candidate is re-evaluated with another."""

    VERDICTS = [("approve", "approve"), ("changes", "request changes")]

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reviewer_name = models.CharField(max_length=150)
    verdict = models.CharField(max_length=10, choices=VERDICTS)
    comment = models.TextField(blank=True)
    evaluation = models.ForeignKey("runs.Evaluation", null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=24)
    score = models.FloatField(default=0.0)
    dismissed_at = models.DateTimeField(null=True, blank=True)
    dismissed_reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class KernelVersion(models.Model):
    """A promoted kernel: versioned per (workload, target); one champion per shape bucket."""

    workload = models.CharField(max_length=64)
    target = models.CharField(max_length=32)
    version = models.PositiveIntegerField()
    shape_bucket = models.CharField(max_length=64)
    champion = models.BooleanField(default=False)
    candidate = models.ForeignKey("runs.Candidate", null=True, on_delete=models.SET_NULL, related_name="+")
    proposal = models.OneToOneField(Proposal, null=True, on_delete=models.SET_NULL, related_name="kernel")
    source = models.TextField()
    params = models.JSONField()
    score = models.FloatField(default=0.0)
    manifest = models.JSONField(help_text="the evidence bundle: reports, fingerprint, approvals")
    promoted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workload", "target", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["workload", "target", "version"], name="version_per_workload_target"),
            models.UniqueConstraint(fields=["workload", "target", "shape_bucket"], condition=Q(champion=True),
                                    name="one_champion_per_bucket"),
        ]

    def __str__(self):
        return f"{self.workload} on {self.target} v{self.version}"


class EngineVersion(models.Model):
    """A promoted engine: versioned per engine name; its phases' sources and params, and the
    manifest (model, phases with their digests and shapes, weights layout, approvals, every
    phase's evidence). The weights are written beside it in the library folder."""

    engine_name = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    engine = models.ForeignKey("ops.Engine", null=True, on_delete=models.SET_NULL, related_name="versions")
    proposal = models.OneToOneField(EngineProposal, null=True, on_delete=models.SET_NULL, related_name="version")
    sources = models.JSONField(help_text="{phase: source}")
    params = models.JSONField(help_text="{phase: params}")
    manifest = models.JSONField()
    promoted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["engine_name", "-version"]
        constraints = [models.UniqueConstraint(fields=["engine_name", "version"], name="version_per_engine")]

    def __str__(self):
        return f"engine {self.engine_name} v{self.version}"


class AuditEntry(models.Model):
    """Append-only: every decision at the gate (who, what, when, before → after)."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150, help_text="the user, or 'system' for the worker")
    action = models.CharField(max_length=40)
    candidate = models.ForeignKey("runs.Candidate", null=True, on_delete=models.SET_NULL, related_name="+")
    proposal = models.ForeignKey(Proposal, null=True, on_delete=models.SET_NULL, related_name="audit")
    engine_proposal = models.ForeignKey(EngineProposal, null=True, on_delete=models.SET_NULL, related_name="audit")
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
