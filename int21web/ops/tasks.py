"""Celery tasks of the ops app: thin, as every task here."""
from celery import shared_task

from int21web.ops import jobs


@shared_task(name="ops.engine_job_step", acks_late=True, reject_on_worker_lost=True)
def engine_job_step(job_id: int, cursor: int) -> None:
    """One step of an engine job (int21web.ops.jobs), on the queue the step needs."""
    jobs.job_step(job_id, cursor)
