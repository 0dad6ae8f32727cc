from typing import Any

from celery import shared_task
from django.db import OperationalError

from apps.jobs import workers  # noqa: F401  # connects the worker's heartbeat to its start
from apps.jobs.delivery import job_run_delivered


# acks_late with reject_on_worker_lost (settings): the message is acknowledged only once the
# job has ended, so a job whose worker process died is delivered again, and the worker
# decides whether to run it again (its worker is gone) or not (it is running or has ended).
# A database too busy to claim a job (nothing claimed yet) sends the message again.
@shared_task(
    name="deidweb.run_job",
    bind=True,
    autoretry_for=(OperationalError,),
    retry_backoff=1,
    retry_backoff_max=30,
    max_retries=None,
)  # type: ignore[untyped-decorator]  # celery has no type hints
def run_job(self: Any, job_id: str) -> bool:
    delivery = self.request.delivery_info or {}
    return job_run_delivered(
        job_id=str(job_id),
        worker=str(self.request.hostname or ""),
        queue=str(delivery.get("routing_key") or ""),
        eager=bool(self.request.is_eager),
    )


def run_job_send(*, job_id: str, queue: str) -> None:
    """The message of a job on `queue` (the task id is the job id): ``job_message_send``."""
    run_job.apply_async((job_id,), task_id=job_id, queue=queue)
