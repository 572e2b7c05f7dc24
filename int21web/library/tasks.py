"""Celery tasks of the review gate: thin, take ids, safe to run twice."""
from celery import shared_task

from int21web.library import services


@shared_task(name="library.run_evaluation", acks_late=True, reject_on_worker_lost=True)
def run_evaluation(evaluation_id: int) -> None:
    """Runs on the queue of the goal's target (target.cpu, target.cuda): candidate code is
    judged in the worker's sandbox children, never in the web process."""
    services.evaluation_run(evaluation_id=evaluation_id)
