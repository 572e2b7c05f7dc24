"""Celery tasks: thin. They take ids, call one service, and are safe to run twice."""
from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from int21web.runs import services


@shared_task(name="runs.evaluate_candidate", bind=True, acks_late=True, reject_on_worker_lost=True)
def evaluate_candidate(self, candidate_id: int, attempt: int = 1) -> None:
    """Runs on the queue of the goal's target (target.cpu, target.cuda)."""
    services.candidate_evaluate(candidate_id=candidate_id, attempt=attempt, worker=self.request.hostname or "")


@shared_task(name="runs.remeasure_candidate", acks_late=True, reject_on_worker_lost=True)
def remeasure_candidate(candidate_id: int, round: int) -> None:
    """A fresh measurement of a judged candidate (a run confirming its best), on its target's queue."""
    services.candidate_remeasure(candidate_id=candidate_id, round=round)


@shared_task(name="runs.drive_run", acks_late=True, reject_on_worker_lost=True)
def drive_run(run_id: int) -> None:
    """Runs on the orchestrate queue: generations until the run finishes or is paused, or the
    slice (INT21_DRIVE_SLICE) is spent and a fresh drive_run takes over. A run that is not
    running, or is driven elsewhere (it holds the lease), is left alone."""
    try:
        services.run_drive(run_id=run_id, slice_seconds=settings.INT21_DRIVE_SLICE_SECONDS)
    except SoftTimeLimitExceeded:   # one generation outlasted the slice: the next task resumes it
        services.run_dispatch(run_id=run_id)
