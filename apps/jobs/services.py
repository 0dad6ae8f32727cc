"""Creating, claiming, running and cancelling jobs.

A job is claimed with a conditional update (queued → running) that records the worker
("<node> <host> <pid>"): if the update touches no row, another worker already has it, so
delivering the same message twice is harmless. Everything from the claim on runs inside the
job's error handling, so a job ends failed with its real cause whatever fails, its first
write included; the final write is retried while the database is locked.

A worker runs each job in a child process of its own (``apps.jobs.isolation``) that it
watches: over the memory ceiling, past the time limit or cancelled, the child is ended and
the job fails (or is cancelled) with a message while the worker goes on. A worker that dies
is noticed within seconds by the others (heartbeats, ``apps.jobs.workers``): its running
jobs are run again once (handlers are idempotent: they write their results under a row
lock, and files under names of their own that a re-run replaces); lost a second time, a job
fails with a message and can be retried.

Jobs go to a queue by kind (``job_queue``): short interactive ones (risk, search) to
``interactive``, long ones (ingest, profile, apply, report) to ``heavy``, so a worker can be
kept for the interactive queue and a newcomer's search never waits behind a 2 GB upload.
Within a queue, a worker takes the fairest job, not the oldest (``apps.jobs.scheduling``),
and a member may have only ``DEIDWEB_JOB_USER_HEAVY_LIMIT`` long jobs queued or running.

Cancelling is certain and quick: the row turns cancelled at once, and the worker watching
the job's process ends it within a second. A hard time limit (``DEIDWEB_JOB_TIME_LIMIT``)
ends any job that runs away.

Whatever ends a job (success, failure, cancel, a lost worker, a retry), the owner of its
subject learns it through `JOB_FINISHED`/`JOB_RETRIED`, so that a data set never stays
"profiling" after its profiling job is over.

The kinds and what each app registers for them are in ``apps.jobs.kinds``, the handler's
context in ``apps.jobs.context``, the failure messages in ``apps.jobs.messages``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.accounts.models import Membership, Organization, Role
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.core.hooks import Provided
from apps.jobs.context import JobCancelled, JobContext, running_in_process
from apps.jobs.kinds import (
    JOB_FINISHED,
    JOB_GUARDS,
    JOB_HANDLERS,
    JOB_RETRIED,
    check_user_limit,
    job_queue,
)
from apps.jobs.liveness import WorkerState, job_is_lost, worker_state
from apps.jobs.messages import (
    database_busy_error,
    job_lost_again_error,
    job_lost_error,
    out_of_memory_error,
    time_limit_error,
    unexpected_error_message,
)
from apps.jobs.models import FINISHED, Job, JobStatus

__all__ = [
    "JOB_FINISHED",
    "JOB_GUARDS",
    "JOB_HANDLERS",
    "JOB_RETRIED",
    "JobCancelled",
    "JobContext",
    "job_cancel",
    "job_claim",
    "job_create",
    "job_enqueue",
    "job_execute",
    "job_fail",
    "job_fail_lost",
    "job_housekeeping",
    "job_is_lost",
    "job_lost_error",
    "job_mark_lost",
    "job_may_cancel",
    "job_message_send",
    "job_queue",
    "job_retry",
    "job_run_claimed",
    "job_send",
    "job_take_over_lost",
    "jobs_mark_lost",
    "worker_id",
]

logger = logging.getLogger(__name__)


def _finished(job: Job) -> None:
    path = JOB_FINISHED.get(job.kind)
    if not path:
        return
    try:
        import_string(path)(job)
    except Exception:  # a hook must not raise; if one does, the job's end still stands
        logger.exception("job %s: the hook on its end failed", job.id)


def _guard(job: Job, action: str) -> None:
    path = JOB_GUARDS.get(job.kind)
    if path:
        import_string(path)(job, action)


def _may_handle(job: Job, user: User | None, action: str) -> None:
    """Only the person who started a job, or an administrator, cancels or retries it."""
    if user is None or user.pk == job.created_by_id:
        return
    if Membership.objects.filter(
        organization_id=job.organization_id, user_id=user.pk, role=Role.ADMIN
    ).exists():
        return
    raise ApplicationError(
        f"Only the person who started this job or an administrator can {action} it.",
        status=403,
    )


def job_may_cancel(job: Job) -> bool:
    """Whether the job's rules allow cancelling it now (for pages, which offer the button)."""
    if job.is_finished:
        return False
    try:
        _guard(job, "cancel")
    except ApplicationError:
        return False
    return True


def job_create(
    *,
    organization: Organization,
    kind: str,
    subject: str = "",
    params: dict[str, Any] | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Job:
    if kind not in JOB_HANDLERS:
        raise ApplicationError(f"Unknown job kind '{kind}'.")
    with transaction.atomic():
        if created_by is not None:
            check_user_limit(user=created_by, kind=kind)
        job = Job.objects.create(
            organization=organization,
            kind=kind,
            subject=subject,
            params=params or {},
            created_by=created_by,
            message="Waiting for a worker",
        )
        if enqueue:
            job_enqueue(job=job)
    return job


def job_enqueue(*, job: Job) -> None:
    """Send the job's message to its queue once the row is committed (or the worker could
    look for a job that is not there)."""
    queue = job_queue(job.kind)
    job.queue, job.dispatched_at = queue, timezone.now()
    Job.objects.filter(id=job.id).update(queue=job.queue, dispatched_at=job.dispatched_at)
    job_id = str(job.id)
    transaction.on_commit(lambda: job_send(job_id=job_id, queue=queue))


@Provided.declare
def job_message_send(*, job_id: str, queue: str) -> None:
    """Put the job's message on the broker: ``apps.jobs.tasks`` provides it (the Celery task
    sits above these services, ``JobsConfig.ready``)."""


def job_send(*, job_id: str, queue: str) -> None:
    """A message for the job on `queue` (the task id is the job id). A broker that does not
    answer leaves the job queued: a live worker sends its message again once it is free
    (``apps.jobs.workers``), and the job's page says it waits."""
    try:
        job_message_send(job_id=job_id, queue=queue)
    except Exception:
        logger.exception("job %s: its message could not be sent to queue %s", job_id, queue)


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
    _audit(job, "job.restart", {"attempt": job.attempts, "lost_worker": lost_worker})
    logger.warning("job %s: worker %s lost, running it again", job_id, lost_worker)
    return job


def job_fail_lost(job: Job, *, error: str) -> bool:
    """Fail a running job whose worker is gone (if it still is as `job` shows it)."""
    failed = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, worker=job.worker).update(
        status=JobStatus.FAILED, message="Worker lost", error=error, finished_at=timezone.now()
    )
    if failed:
        job.refresh_from_db()
        _audit(job, "job.finish", {"status": job.status, "error": job.error[:500]})
        _finished(job)
    return bool(failed)


def job_housekeeping() -> None:
    """A live worker notices the jobs of dead ones; never a reason not to run the job."""
    try:
        jobs_mark_lost()
    except Exception:
        logger.exception("could not look for lost jobs")


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


# Database errors whose cause is another process holding the database, not this job.
_BUSY = ("database is locked", "database table is locked", "could not obtain lock")


def _database_busy(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and any(b in str(exc).lower() for b in _BUSY)


def job_run_claimed(job: Job) -> None:
    """Run a job this process has claimed, to its end: every statement from here on is
    inside the error handling, so the job ends failed with its real cause, never left
    "running" by an error in its first write."""
    context = JobContext(job)
    try:
        if job.attempts <= 1:  # a run again after a lost worker was recorded as job.restart
            _audit(job, "job.start", {})
        _guard(job, "run")
        path = settings.DEIDWEB_JOB_HANDLERS.get(job.kind) or JOB_HANDLERS[job.kind]
        handler: Callable[[Job, JobContext], dict[str, Any]] = import_string(path)
        with running_in_process(str(job.id)):
            result = handler(job, context)
    except JobCancelled:
        # The handler saw the cancel itself (a progress report, a check) before the worker
        # watching this process (apps.jobs.isolation) ended it.
        logger.info("job %s: cancelled; it stopped at its own check of the row", job.id)
        _finish(job, JobStatus.CANCELLED, message="Cancelled")
        return
    except SoftTimeLimitExceeded:
        _finish(job, JobStatus.FAILED, message="Failed", error=time_limit_error())
        return
    except ApplicationError as exc:
        # The details (an upload's error code, line, column) go with it, for the API.
        details = {"error": exc.extra} if exc.extra else None
        _finish(job, JobStatus.FAILED, message="Failed", error=exc.message, result=details)
        return
    except MemoryError:
        logger.exception("job %s ran out of memory", job.id)
        _finish(
            job,
            JobStatus.FAILED,
            message="Failed",
            error=out_of_memory_error(),
            error_detail=traceback.format_exc(),
        )
        return
    except Exception as exc:  # the worker must survive any handler bug and say so on the job
        logger.exception("job %s failed", job.id)
        error = database_busy_error(exc) if _database_busy(exc) else unexpected_error_message(job)
        _finish(
            job,
            JobStatus.FAILED,
            message="Failed",
            error=error,
            error_detail=traceback.format_exc(),
        )
        return
    _finish(job, JobStatus.SUCCEEDED, message="Finished", result=result, progress=100)


# The final write of a job waits this long, in all, for a database another process locks.
FINISH_RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)


def _finish(
    job: Job,
    status: str,
    *,
    message: str,
    error: str = "",
    error_detail: str = "",
    result: dict[str, Any] | None = None,
    progress: int | None = None,
) -> None:
    """Record the job's end (with its audit event, in one transaction), retried while the
    database is locked: the end of the work must not be lost to a busy database."""
    for pause in (*FINISH_RETRY_SECONDS, None):
        try:
            updated = _finish_once(
                job,
                status,
                message=message,
                error=error,
                error_detail=error_detail,
                result=result,
                progress=progress,
            )
            break
        except OperationalError as exc:
            if pause is None or not _database_busy(exc):
                raise
            logger.warning("job %s: database busy recording its end, trying again", job.id)
            time.sleep(pause)
    if updated:  # else job_cancel already told the subject
        _finished(job)


def job_fail(
    job: Job, *, error: str, detail: str = "", result: dict[str, Any] | None = None
) -> None:
    """Fail a job this worker runs, from outside its handler (the process watching it)."""
    _finish(
        job, JobStatus.FAILED, message="Failed", error=error, error_detail=detail, result=result
    )


def _finish_once(
    job: Job,
    status: str,
    *,
    message: str,
    error: str,
    error_detail: str,
    result: dict[str, Any] | None,
    progress: int | None,
) -> bool:
    fields: dict[str, Any] = {
        "status": status,
        "message": message,
        "error": error,
        "error_detail": error_detail,
        "finished_at": timezone.now(),
    }
    if result is not None:
        fields["result"] = result
    if progress is not None:
        fields["progress"] = progress
    mine = job.worker
    with transaction.atomic():
        # A cancellation that raced the end of the work wins: the user asked for it. A job
        # taken over by another worker (this one was thought lost) is that worker's to end.
        updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, worker=mine).update(
            **fields
        )
        job.refresh_from_db(fields=["status", "message", "error", "worker"])
        if not updated and job.worker != mine:
            return False
        _audit(job, "job.finish", {"status": job.status, "error": error[:500]})
    return bool(updated)


def _audit(job: Job, action: str, details: dict[str, Any]) -> None:
    audit_record(
        organization=job.organization,
        actor=job.created_by,
        action=action,
        obj=job,
        details={"kind": job.kind, "subject": job.subject, **details},
    )


def job_cancel(*, job: Job, user: User | None = None) -> Job:
    """Cancel a queued or running job. The row turns cancelled at once; the worker watching
    a running job's process ends it within a second (``apps.jobs.isolation``), and a
    handler run in-process stops at its next progress report."""
    _may_handle(job, user, "cancel")
    _guard(job, "cancel")
    job.refresh_from_db()  # as stored, not as a page showed it
    job = job_mark_lost(job)
    if job.status in FINISHED:
        raise ApplicationError(
            f"The job has already {job.status}; there is nothing to cancel.", status=409
        )
    cancelled = Job.objects.filter(
        id=job.id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
    ).update(status=JobStatus.CANCELLED, message="Cancelled", finished_at=timezone.now())
    job.refresh_from_db()
    if cancelled:
        _finished(job)
    audit_record(
        organization=job.organization,
        actor=user,
        action="job.cancel",
        obj=job,
        details={"kind": job.kind, "subject": job.subject},
    )
    return job


def job_retry(*, job: Job, user: User | None = None) -> Job:
    """A failed or cancelled job is re-run as a new job with the same inputs."""
    _may_handle(job, user, "retry")
    _guard(job, "retry")
    job.refresh_from_db()  # as stored, not as a page showed it
    job = job_mark_lost(job)
    if job.status not in {JobStatus.FAILED, JobStatus.CANCELLED}:
        raise ApplicationError("Only a failed or cancelled job can be retried.", status=409)
    with transaction.atomic():
        new_job = job_create(
            organization=job.organization,
            kind=job.kind,
            subject=job.subject,
            params=job.params,
            created_by=user,
        )
        path = JOB_RETRIED.get(job.kind)
        if path:
            import_string(path)(job, new_job)
    return new_job


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
