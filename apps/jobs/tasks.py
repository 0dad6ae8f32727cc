from celery import shared_task

from apps.jobs.services import job_execute


@shared_task(name="deidweb.run_job")  # type: ignore[untyped-decorator]  # celery has no type hints
def run_job(job_id: str) -> bool:
    return job_execute(job_id=job_id)
