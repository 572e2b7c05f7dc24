"""Celery tasks: thin. They take ids, call one service, and are safe to run twice."""
from celery import shared_task

from int21web.runs import services


@shared_task(name="runs.evaluate_candidate", acks_late=True, reject_on_worker_lost=True)
def evaluate_candidate(candidate_id: int, attempt: int = 1) -> None:
    """Runs on the queue of the goal's target (target.cpu, target.cuda)."""
    services.candidate_evaluate(candidate_id=candidate_id, attempt=attempt)
