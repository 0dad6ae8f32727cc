from typing import Any

from celery import shared_task

from apps.jobs.services import job_execute


# acks_late with reject_on_worker_lost (settings): the message is acknowledged only once the
# job has ended, so a job whose worker died is delivered again, and job_execute decides
# whether to run it again (its worker is gone) or not (it is running or has finished).
@shared_task(name="deidweb.run_job", bind=True)  # type: ignore[untyped-decorator]  # celery has no type hints
def run_job(self: Any, job_id: str) -> bool:
    return job_execute(job_id=job_id, worker=str(self.request.hostname or ""))
