"""Running a job a worker has claimed, to its end, and recording that end.

Everything from the claim on runs inside the job's error handling, so a job ends failed
with its real cause whatever fails, its first write included; the final write is retried
while the database is locked. A handler run in a watched child process
(``apps.jobs.isolation``) that is ended from outside is failed by the watcher through
``job_fail``.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.jobs.context import JobCancelled, JobContext, running_in_process
from apps.jobs.kinds import JOB_HANDLERS, job_guard, job_notify_finished
from apps.jobs.messages import (
    database_busy_error,
    out_of_memory_error,
    time_limit_error,
    unexpected_error_message,
)
from apps.jobs.models import Job, JobStatus

__all__ = ["FINISH_RETRY_SECONDS", "job_audit", "job_fail", "job_run_claimed"]

logger = logging.getLogger(__name__)


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
            job_audit(job, "job.start", {})
        job_guard(job, "run")
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
        job_notify_finished(job)


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
        job_audit(job, "job.finish", {"status": job.status, "error": error[:500]})
    return bool(updated)


def job_audit(job: Job, action: str, details: dict[str, Any]) -> None:
    """A job's event in the audit trail (start, restart, end), recorded as the act of the
    person who started the job, with its kind and subject."""
    audit_record(
        organization=job.organization,
        actor=job.created_by,
        action=action,
        obj=job,
        details={"kind": job.kind, "subject": job.subject, **details},
    )
