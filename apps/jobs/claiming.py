"""Which worker runs a job: claiming a queued one, taking over one whose worker is gone.

A job is claimed with a conditional update (queued → running) that records the worker
("<node> <host> <pid>"): if the update touches no row, another worker already has it, so
delivering the same message twice is harmless. A running job delivered again is taken
over, once, if its worker is gone (``apps.jobs.liveness``); lost a second time, it fails and
can be retried (``apps.jobs.lost_jobs``).
"""

from __future__ import annotations

import logging
import os
import socket

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from apps.jobs.liveness import WorkerState, worker_state
from apps.jobs.lost_jobs import job_fail_lost, job_housekeeping
from apps.jobs.messages import job_lost_again_error
from apps.jobs.models import Job, JobStatus
from apps.jobs.running import job_audit, job_run_claimed

__all__ = ["job_claim", "job_execute", "job_take_over_lost", "worker_id"]

logger = logging.getLogger(__name__)


def worker_id(node: str) -> str:
    """Who runs a job: the Celery node, this machine and this process."""
    return f"{node or 'local'} {socket.gethostname()} {os.getpid()}"


def job_claim(job_id: str, me: str) -> Job | None:
    """Claim a queued job for the worker `me` (queued → running); None if it was not queued
    (another worker has it, it has ended, or it was cancelled)."""
    now = timezone.now()
    claimed = Job.objects.filter(id=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        message="Started",
        worker=me,
        attempts=F("attempts") + 1,
    )
    return Job.objects.get(id=job_id) if claimed else None


def job_take_over_lost(job_id: str, me: str) -> Job | None:
    """A running job delivered again: take it over if its worker is gone (once; lost a
    second time, it fails and can be retried). None if it is not ours to run."""
    job = Job.objects.filter(id=job_id).first()
    if job is None or job.status != JobStatus.RUNNING:
        return None
    # This process runs one job at a time: one recorded as ours is not running now.
    if job.worker != me and worker_state(job.worker) != WorkerState.DEAD:
        return None
    lost_worker = job.worker
    if job.attempts >= int(settings.DEIDWEB_JOB_MAX_ATTEMPTS):
        job_fail_lost(job, error=job_lost_again_error(job.attempts))
        return None
    now = timezone.now()
    taken = Job.objects.filter(
        id=job.id, status=JobStatus.RUNNING, worker=lost_worker, attempts=job.attempts
    ).update(
        worker=me,
        heartbeat_at=now,
        progress=0,
        message="Started again: the worker running it was lost",
        attempts=F("attempts") + 1,
    )
    if not taken:
        return None
    job.refresh_from_db()
    job_audit(job, "job.restart", {"attempt": job.attempts, "lost_worker": lost_worker})
    logger.warning("job %s: worker %s lost, running it again", job_id, lost_worker)
    return job


def job_execute(*, job_id: str, worker: str = "") -> bool:
    """Run this job here, in this process: a queued one, or a running one whose worker is
    gone (once more). Returns False if it was not ours to run. ``worker`` is the Celery node
    name (a worker runs jobs through ``apps.jobs.delivery``; tests and commands call this)."""
    job_housekeeping()
    me = worker_id(worker)
    job = job_claim(job_id, me) or job_take_over_lost(job_id, me)
    if job is None:
        logger.info("job %s not claimed: missing, running or finished", job_id)
        return False
    job_run_claimed(job)
    return True
