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
from apps.jobs.liveness import WorkerState, worker_state
from apps.jobs.models import FINISHED, Job, JobStatus

logger = logging.getLogger(__name__)

# kind → dotted path of ``handler(job: Job, context: JobContext) -> dict``.
JOB_HANDLERS: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_ingest_handler",
    "ingest-tables": "apps.datasets.table_upload.dataset_tables_ingest_handler",
    "profile": "apps.datasets.services.dataset_profile_handler",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_handler",
    "assessment-risk": "apps.assessments.risk.assessment_risk_handler",
    # person-keyed data in persons (longitudinal_*), else records: an upload's release
    # (release_apply) or a cluster table's (cluster_release)
    "assessment-search": "apps.assessments.longitudinal_search.assessment_search_dispatch",
    "assessment-apply": "apps.assessments.longitudinal_release.assessment_apply_dispatch",
    "assessment-synthetic": "apps.assessments.release_forms.jobs.assessment_synthetic_handler",
    "assessment-table": "apps.assessments.release_forms.jobs.assessment_table_handler",
    "report": "apps.reports.jobs.report_generate_handler",
}


# kind → dotted path of ``guard(job: Job, action: str) -> None`` that raises ApplicationError
# when the job may not be run, cancelled or retried (``action``): the work of a submitted or
# decided assessment is frozen. Every path goes through ``_guard``; the handlers check again
# under a row lock before they write.
JOB_GUARDS: dict[str, str] = {
    "assessment-risk": "apps.assessments.services.assessment_job_guard",
    "assessment-search": "apps.assessments.services.assessment_job_guard",
    "assessment-apply": "apps.assessments.services.assessment_job_guard",
    "assessment-synthetic": "apps.assessments.services.assessment_job_guard",
    "assessment-table": "apps.assessments.services.assessment_job_guard",
    "report": "apps.reports.jobs.report_job_guard",
}


# kind → dotted path of ``hook(job: Job) -> None`` called once the job has ended in any way
# (succeeded, failed, cancelled, worker lost), outside the handler: it must not raise.
JOB_FINISHED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_finished",
    "ingest-tables": "apps.datasets.services.dataset_profile_finished",
    "profile": "apps.datasets.services.dataset_profile_finished",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_finished",
    "assessment-apply": "apps.assessments.release_apply.assessment_apply_finished",
    "assessment-synthetic": "apps.assessments.release_apply.assessment_apply_finished",
    "assessment-table": "apps.assessments.release_apply.assessment_apply_finished",
}
# kind → dotted path of ``hook(old: Job, new: Job) -> None`` called when a job is re-run.
JOB_RETRIED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_retried",
    "ingest-tables": "apps.datasets.services.dataset_profile_retried",
    "profile": "apps.datasets.services.dataset_profile_retried",
    "cluster-profile": "apps.datasets.cluster.cluster_profile_retried",
}


# kind → the class of queue its task goes to (``settings.DEIDWEB_JOB_QUEUES``).
JOB_QUEUE_CLASSES: dict[str, str] = {
    "ingest": "heavy",
    "ingest-tables": "heavy",
    "profile": "heavy",
    "cluster-profile": "heavy",
    "assessment-risk": "interactive",
    "assessment-search": "interactive",
    "assessment-apply": "heavy",
    "assessment-synthetic": "heavy",
    "assessment-table": "heavy",
    "report": "heavy",
}


def job_queue(kind: str) -> str:
    """The Celery queue of a job of this kind."""
    queues: dict[str, str] = settings.DEIDWEB_JOB_QUEUES
    return queues[JOB_QUEUE_CLASSES.get(kind, "heavy")]


# Kinds deidweb starts by itself (a decision's report): never refused for a member's limit.
JOB_SYSTEM_KINDS = {"report"}


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


class JobCancelled(Exception):
    """Raised inside a handler when the job was cancelled; unwinds the work cleanly."""


class JobContext:
    """Handed to a handler: report progress, learn about cancellation."""

    def __init__(self, job: Job, *, min_interval: float = 1.0) -> None:
        self.job = job
        self.worker = job.worker
        self._min_interval = min_interval
        self._last_write = 0.0

    def progress(self, percent: float, message: str = "", *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < self._min_interval:
            return
        self._last_write = now
        # Only while this worker has it: cancelled, or taken over by another worker after
        # this one was thought lost, the work stops here.
        updated = Job.objects.filter(
            id=self.job.id, status=JobStatus.RUNNING, worker=self.worker
        ).update(
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
    with transaction.atomic():
        if created_by is not None:
            _check_user_limit(user=created_by, kind=kind)
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


def _user_limited(kind: str) -> bool:
    return JOB_QUEUE_CLASSES.get(kind, "heavy") == "heavy" and kind not in JOB_SYSTEM_KINDS


def _check_user_limit(*, user: User, kind: str) -> None:
    """Refuse a member's long job past ``DEIDWEB_JOB_USER_HEAVY_LIMIT`` of them queued or
    running. The member's row is locked first, so two requests at once cannot both pass."""
    if not _user_limited(kind):
        return
    User.objects.select_for_update().filter(pk=user.pk).first()
    limited = [k for k in JOB_HANDLERS if _user_limited(k)]
    pending = list(
        Job.objects.filter(
            created_by=user, kind__in=limited, status__in=[JobStatus.QUEUED, JobStatus.RUNNING]
        ).order_by("created_at")
    )
    limit = int(settings.DEIDWEB_JOB_USER_HEAVY_LIMIT)
    if len(pending) < limit:
        return
    listed = "; ".join(f"{job.kind_label} ({job.get_status_display().lower()})" for job in pending)
    raise ApplicationError(
        f"You already have {len(pending)} long jobs queued or running, the most one person "
        f"may have at once ({limit}): {listed}. Wait until one of them ends, or cancel one, "
        "then start this one again.",
        {"limit": limit, "jobs": [str(job.id) for job in pending]},
        status=429,
    )


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
        result = handler(job, context)
    except JobCancelled:
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


def unexpected_error_message(job: Job) -> str:
    """What members read when a job fails on a bug: the traceback is in the log and, for the
    site's administrators, on the job in the Django admin (ASVS 7.4.1)."""
    return (
        "The job stopped on an unexpected error. Run it again; if it fails again, tell your "
        f"administrator, giving this reference: job {job.id}."
    )


def database_busy_error(exc: BaseException) -> str:
    return (
        "The job could not write to the database: another process kept it locked for longer "
        f"than the wait allowed ({str(exc).strip()[:120]}). Run it again."
    )


def time_limit_error() -> str:
    limit = int(settings.DEIDWEB_JOB_TIME_LIMIT)
    return (
        f"The job ran longer than the limit of {limit:,} s (DEIDWEB_JOB_TIME_LIMIT) and was "
        "stopped."
    )


def out_of_memory_error() -> str:
    return (
        "The job ran out of memory and was stopped; the worker goes on. Run it on a smaller "
        "file, or ask your administrator for a worker with more memory."
    )


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


def job_is_lost(job: Job) -> bool:
    """Running, but its worker is gone: its process ended (same machine) or its heartbeat
    stopped (``apps.jobs.liveness``). Where the worker cannot be checked (a job run
    in-process elsewhere, or claimed before workers were recorded), silence longer than
    ``DEIDWEB_JOB_STALE_SECONDS`` means the same."""
    if job.status != JobStatus.RUNNING:
        return False
    state = worker_state(job.worker)
    if state != WorkerState.UNKNOWN:
        return state == WorkerState.DEAD
    last = job.heartbeat_at or job.started_at
    limit = timedelta(seconds=settings.DEIDWEB_JOB_STALE_SECONDS)
    return last is not None and timezone.now() - last > limit


def job_lost_error(job: Job) -> str:
    """Why a lost job (``job_is_lost``) failed: its worker seen gone, or silence."""
    if worker_state(job.worker) == WorkerState.UNKNOWN:
        return (
            "The worker stopped while running this job (it was restarted, killed or ran out "
            f"of memory): no progress for more than {int(settings.DEIDWEB_JOB_STALE_SECONDS)} "
            "s. Run it again."
        )
    return (
        "The worker running this job stopped (it was restarted, killed or ran out of memory) "
        "before the job ended. Run it again."
    )


def job_lost_again_error(attempts: int) -> str:
    return (
        f"The worker stopped while running this job, {attempts} times (it was restarted, "
        "killed or ran out of memory). Run it again."
    )


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
