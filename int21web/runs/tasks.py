"""Celery tasks: thin. They take ids, call one service, and are safe to run twice."""
from celery import shared_task

from int21web.runs import services


@shared_task(name="runs.evaluate_candidate", acks_late=True, reject_on_worker_lost=True)
def evaluate_candidate(candidate_id: int, attempt: int = 1) -> None:
    """Runs on the queue of the goal's target (target.cpu, target.cuda)."""
    services.candidate_evaluate(candidate_id=candidate_id, attempt=attempt)


@shared_task(name="runs.drive_run", acks_late=True, reject_on_worker_lost=True)
def drive_run(run_id: int) -> None:
    """Runs on the orchestrate queue: generations until the run finishes or is paused.
    A run that is not running (paused, finished, driven elsewhere and done) is left alone."""
    services.run_drive(run_id=run_id)
