"""Jobs whose worker is gone: marked failed with a plain explanation, so they can be run
again.

A worker that dies is noticed within seconds by the others (heartbeats,
``apps.jobs.workers``): its running jobs are run again once (handlers are idempotent: they
write their results under a row lock, and files under names of their own that a re-run
replaces); lost a second time, a job fails with a message and can be retried. Where a
worker cannot be checked, a job silent too long is lost all the same (``job_is_lost``).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.jobs.kinds import job_notify_finished
from apps.jobs.liveness import WorkerState, job_is_lost, worker_state
from apps.jobs.messages import job_lost_error
from apps.jobs.models import Job, JobStatus
from apps.jobs.running import job_audit

__all__ = ["job_fail_lost", "job_housekeeping", "job_mark_lost", "jobs_mark_lost"]

logger = logging.getLogger(__name__)


def job_fail_lost(job: Job, *, error: str) -> bool:
    """Fail a running job whose worker is gone (if it still is as `job` shows it)."""
    failed = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, worker=job.worker).update(
        status=JobStatus.FAILED, message="Worker lost", error=error, finished_at=timezone.now()
    )
    if failed:
        job.refresh_from_db()
        job_audit(job, "job.finish", {"status": job.status, "error": job.error[:500]})
        job_notify_finished(job)
    return bool(failed)


def job_housekeeping() -> None:
    """A live worker notices the jobs of dead ones; never a reason not to run the job."""
    try:
        jobs_mark_lost()
    except Exception:
        logger.exception("could not look for lost jobs")


def job_mark_lost(job: Job) -> Job:
    """Mark a lost job (``job_is_lost``) failed with a plain explanation, so it can be run
    again. A write: called by workers and by cancel and retry, never on a GET (pages show a
    lost job through ``selectors.job_refresh``)."""
    if not job_is_lost(job):
        return job
    job_fail_lost(job, error=job_lost_error(job))
    job.refresh_from_db()
    return job


def jobs_mark_lost() -> int:
    """Mark failed every running job whose worker cannot be checked and that has been
    silent too long (see ``job_is_lost``); a live worker re-runs the jobs of dead ones
    (``apps.jobs.workers``). Returns how many were marked."""
    limit = timezone.now() - timedelta(seconds=settings.DEIDWEB_JOB_STALE_SECONDS)
    stale = Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=limit)
    unknown = [job for job in stale if worker_state(job.worker) == WorkerState.UNKNOWN]
    return sum(job_mark_lost(job).status == JobStatus.FAILED for job in unknown)
