"""Creating, claiming, running and cancelling jobs.

A job is claimed with a conditional update (queued → running): if the update touches no row,
another worker already has it, so delivering the same message twice is harmless. Progress is
written at most about once a second, and each write also notices a cancellation.

Cancelling is certain and quick: the row turns cancelled at once (the handler notices on its
next progress report), and the Celery task, whose id is the job's id, is revoked with
`terminate=True`, which ends the worker child even inside a long polars or numba call. A
hard time limit (`DEIDWEB_JOB_TIME_LIMIT`) ends any job that runs away.

Whatever ends a job (success, failure, cancel, a lost worker, a retry), the owner of its
subject learns it through `JOB_FINISHED`/`JOB_RETRIED`, so that a data set never stays
"profiling" after its profiling job is over.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.jobs.models import FINISHED, Job, JobStatus

logger = logging.getLogger(__name__)

# kind → dotted path of ``handler(job: Job, context: JobContext) -> dict``.
JOB_HANDLERS: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_ingest_handler",
    "profile": "apps.datasets.services.dataset_profile_handler",
    "assessment-risk": "apps.assessments.risk.assessment_risk_handler",
    "assessment-search": "apps.assessments.deidentify.assessment_search_handler",
    "assessment-apply": "apps.assessments.deidentify.assessment_apply_handler",
    "report": "apps.reports.services.report_generate_handler",
}


# kind → dotted path of ``guard(job: Job, action: str) -> None`` that raises ApplicationError
# when the job may not be run, cancelled or retried (``action``): the work of a submitted or
# decided assessment is frozen. Every path goes through ``_guard``; the handlers check again
# under a row lock before they write.
JOB_GUARDS: dict[str, str] = {
    "assessment-risk": "apps.assessments.services.assessment_job_guard",
    "assessment-search": "apps.assessments.services.assessment_job_guard",
    "assessment-apply": "apps.assessments.services.assessment_job_guard",
    "report": "apps.reports.services.report_job_guard",
}


# kind → dotted path of ``hook(job: Job) -> None`` called once the job has ended in any way
# (succeeded, failed, cancelled, worker lost), outside the handler: it must not raise.
JOB_FINISHED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_finished",
    "profile": "apps.datasets.services.dataset_profile_finished",
}
# kind → dotted path of ``hook(old: Job, new: Job) -> None`` called when a job is re-run.
JOB_RETRIED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_retried",
    "profile": "apps.datasets.services.dataset_profile_retried",
}


def _finished(job: Job) -> None:
    path = JOB_FINISHED.get(job.kind)
    if path:
        import_string(path)(job)


def _guard(job: Job, action: str) -> None:
    path = JOB_GUARDS.get(job.kind)
    if path:
        import_string(path)(job, action)


def _may_handle(job: Job, user: User | None, action: str) -> None:
    """Only the person who started a job, or an administrator, cancels or retries it."""
    if user is None or user.pk == job.created_by_id:
        return
    from apps.accounts.models import Membership, Role

    if Membership.objects.filter(
        organization_id=job.organization_id, user_id=user.pk, role=Role.ADMIN
    ).exists():
        return
    raise ApplicationError(
        f"Only the person who started this job or an administrator can {action} it.",
        status=403,
    )


class JobCancelled(Exception):
    """Raised inside a handler when the job was cancelled; unwinds the work cleanly."""


class JobContext:
    """Handed to a handler: report progress, learn about cancellation."""

    def __init__(self, job: Job, *, min_interval: float = 1.0) -> None:
        self.job = job
        self._min_interval = min_interval
        self._last_write = 0.0

    def progress(self, percent: float, message: str = "", *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < self._min_interval:
            return
        self._last_write = now
        updated = Job.objects.filter(id=self.job.id, status=JobStatus.RUNNING).update(
            progress=max(0, min(100, int(percent))),
            message=message[:300],
            heartbeat_at=timezone.now(),
        )
        if not updated:
            raise JobCancelled()

    def check_cancelled(self) -> None:
        if Job.objects.filter(id=self.job.id, status=JobStatus.CANCELLED).exists():
            raise JobCancelled()


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
    from apps.jobs.tasks import run_job

    job_id = str(job.id)
    # Only after the row is committed, or the worker could look for a job that is not there.
    # The task id is the job id, so that a cancel can revoke the task (job_cancel).
    transaction.on_commit(lambda: run_job.apply_async((job_id,), task_id=job_id))


def _terminate(job_id: str) -> None:
    """Revoke the job's task and end the worker child running it (prefork pool). Best effort:
    the row is already cancelled, and the handler stops at its next progress report anyway."""
    from deidweb.celery import app

    try:
        app.control.revoke(job_id, terminate=True, signal="SIGTERM")
    except Exception:  # a broker without broadcast (filesystem transport) or one that is down
        logger.warning("could not revoke the task of job %s", job_id, exc_info=True)


def job_execute(*, job_id: str) -> bool:
    """Run a queued job to completion. Returns False if it was not ours to run."""
    jobs_mark_lost()  # a live worker notices the jobs of dead ones
    now = timezone.now()
    claimed = Job.objects.filter(id=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, message="Started"
    )
    if not claimed:
        logger.info("job %s not claimed: missing, already running or finished", job_id)
        return False
    job = Job.objects.get(id=job_id)
    Job.objects.filter(id=job.id).update(attempts=job.attempts + 1)
    _audit(job, "job.start", {})
    handler: Callable[[Job, JobContext], dict[str, Any]] = import_string(JOB_HANDLERS[job.kind])
    context = JobContext(job)
    try:
        _guard(job, "run")
        result = handler(job, context)
    except JobCancelled:
        _finish(job, JobStatus.CANCELLED, message="Cancelled")
        return True
    except SoftTimeLimitExceeded:
        limit = int(settings.DEIDWEB_JOB_TIME_LIMIT)
        _finish(
            job,
            JobStatus.FAILED,
            message="Failed",
            error=f"The job ran longer than the limit of {limit:,} s (DEIDWEB_JOB_TIME_LIMIT) "
            "and was stopped.",
        )
        return True
    except ApplicationError as exc:
        # The details (an upload's error code, line, column) go with it, for the API.
        details = {"error": exc.extra} if exc.extra else None
        _finish(job, JobStatus.FAILED, message="Failed", error=exc.message, result=details)
        return True
    except Exception:  # the worker must survive any handler bug and say so on the job
        logger.exception("job %s failed", job_id)
        _finish(
            job,
            JobStatus.FAILED,
            message="Failed",
            error=unexpected_error_message(job),
            error_detail=traceback.format_exc(),
        )
        return True
    _finish(job, JobStatus.SUCCEEDED, message="Finished", result=result, progress=100)
    return True


def unexpected_error_message(job: Job) -> str:
    """What members read when a job fails on a bug: the traceback is in the log and, for the
    site's administrators, on the job in the Django admin (ASVS 7.4.1)."""
    return (
        "The job stopped on an unexpected error. Run it again; if it fails again, tell your "
        f"administrator, giving this reference: job {job.id}."
    )


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
    # A cancellation that raced the end of the work wins: the user asked for it.
    updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING).update(**fields)
    job.refresh_from_db(fields=["status", "message", "error"])
    _audit(job, "job.finish", {"status": job.status, "error": error[:500]})
    if updated:  # else job_cancel already told the subject
        _finished(job)


def _audit(job: Job, action: str, details: dict[str, Any]) -> None:
    from apps.audit.services import audit_record

    audit_record(
        organization=job.organization,
        actor=job.created_by,
        action=action,
        obj=job,
        details={"kind": job.kind, "subject": job.subject, **details},
    )


def job_cancel(*, job: Job, user: User | None = None) -> Job:
    _may_handle(job, user, "cancel")
    _guard(job, "cancel")
    job.refresh_from_db()  # as stored, not as a page showed it
    job = job_mark_lost(job)
    if job.status in FINISHED:
        raise ApplicationError(f"The job has already {job.status}; there is nothing to cancel.")
    cancelled = Job.objects.filter(
        id=job.id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
    ).update(status=JobStatus.CANCELLED, message="Cancelled", finished_at=timezone.now())
    job.refresh_from_db()
    if cancelled:
        job_id = str(job.id)
        transaction.on_commit(lambda: _terminate(job_id))
        _finished(job)
    from apps.audit.services import audit_record

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
        raise ApplicationError("Only a failed or cancelled job can be retried.")
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


def job_is_lost(job: Job) -> bool:
    """Running, but no progress report for longer than ``DEIDWEB_JOB_STALE_SECONDS``.

    Handlers report progress at least every few seconds while they work, so silence past
    that means the worker process is gone (killed, restarted, out of memory)."""
    if job.status != JobStatus.RUNNING:
        return False
    last = job.heartbeat_at or job.started_at
    limit = timedelta(seconds=settings.DEIDWEB_JOB_STALE_SECONDS)
    return last is not None and timezone.now() - last > limit


def job_lost_error() -> str:
    return (
        "The worker stopped while running this job (it was restarted, killed or ran out "
        f"of memory): no progress for more than {int(settings.DEIDWEB_JOB_STALE_SECONDS)} s. "
        "Run it again."
    )


def job_mark_lost(job: Job) -> Job:
    """Mark a lost job (``job_is_lost``) failed with a plain explanation, so it can be run
    again. A write: called by workers before they claim a job and by cancel and retry,
    never on a GET (pages show a lost job as failed through ``selectors.job_refresh``)."""
    if not job_is_lost(job):
        return job
    lost = Job.objects.filter(
        id=job.id, status=JobStatus.RUNNING, heartbeat_at=job.heartbeat_at
    ).update(
        status=JobStatus.FAILED,
        message="Worker lost",
        error=job_lost_error(),
        finished_at=timezone.now(),
    )
    job.refresh_from_db()
    if lost:
        _finished(job)
    return job


def jobs_mark_lost() -> int:
    """Mark every lost job failed (see ``job_mark_lost``); returns how many were."""
    limit = timezone.now() - timedelta(seconds=settings.DEIDWEB_JOB_STALE_SECONDS)
    stale = Job.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=limit)
    return sum(job_mark_lost(job).status == JobStatus.FAILED for job in stale)
