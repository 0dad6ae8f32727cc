"""Creating, claiming, running and cancelling jobs.

A job is claimed with a conditional update (queued → running) that records the worker
("<node> <host> <pid>"): if the update touches no row, another worker already has it, so
delivering the same message twice is harmless. Tasks are acknowledged late (after the job
ends) and rejected when their worker process dies, so a job whose worker was killed is
delivered again: if the worker that claimed it is gone (its process is no longer there, or
its node does not list the task as active), the job is taken over and run again once; lost a
second time, it fails with a message and can be retried. Handlers are idempotent: they write
their results under a row lock, and files under names of their own that a re-run replaces.
Progress is written at most about once a second, and each write also notices a cancellation
(or that another worker took the job over).

Jobs go to a queue by kind (``job_queue``): short interactive ones (risk, search) to
``interactive``, long ones (ingest, profile, apply, report) to ``heavy``, so a worker can be
kept for the interactive queue and a newcomer's search never waits behind a 2 GB upload.

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
from django.db import transaction
from django.db.models import F
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
    "assessment-apply": "apps.assessments.release_apply.assessment_apply_handler",
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
    "assessment-apply": "apps.assessments.release_apply.assessment_apply_finished",
}
# kind → dotted path of ``hook(old: Job, new: Job) -> None`` called when a job is re-run.
JOB_RETRIED: dict[str, str] = {
    "ingest": "apps.datasets.services.dataset_profile_retried",
    "profile": "apps.datasets.services.dataset_profile_retried",
}


# kind → the class of queue its task goes to (``settings.DEIDWEB_JOB_QUEUES``).
JOB_QUEUE_CLASSES: dict[str, str] = {
    "ingest": "heavy",
    "profile": "heavy",
    "assessment-risk": "interactive",
    "assessment-search": "interactive",
    "assessment-apply": "heavy",
    "report": "heavy",
}


def job_queue(kind: str) -> str:
    """The Celery queue of a job of this kind."""
    queues: dict[str, str] = settings.DEIDWEB_JOB_QUEUES
    return queues[JOB_QUEUE_CLASSES.get(kind, "heavy")]


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
    queue = job_queue(job.kind)
    transaction.on_commit(lambda: run_job.apply_async((job_id,), task_id=job_id, queue=queue))


def _terminate(job_id: str) -> None:
    """Revoke the job's task and end the worker child running it (prefork pool). Best effort:
    the row is already cancelled, and the handler stops at its next progress report anyway."""
    from deidweb.celery import app

    try:
        app.control.revoke(job_id, terminate=True, signal="SIGTERM")
    except Exception:  # a broker without broadcast (filesystem transport) or one that is down
        logger.warning("could not revoke the task of job %s", job_id, exc_info=True)


def _worker_id(node: str) -> str:
    """Who runs a job: the Celery node, this machine and this process."""
    return f"{node or 'local'} {socket.gethostname()} {os.getpid()}"


def _worker_alive(worker: str, job_id: str) -> bool:
    """Whether the worker that claimed a job may still be running it. On this machine, its
    process must exist; elsewhere, its Celery node must answer and list the task as active.
    A job claimed before workers were recorded is taken as alive (``job_is_lost`` then)."""
    parts = worker.split(" ")
    if len(parts) != 3 or not parts[2].isdigit():
        return True
    node, host, pid = parts[0], parts[1], int(parts[2])
    if host == socket.gethostname():
        if pid == os.getpid():
            return False  # this process runs one job at a time: it is not running it now
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _zombie(pid)
    if node == "local":
        return True
    from deidweb.celery import app

    try:
        replies = app.control.inspect(destination=[node], timeout=2.0).active()
    except Exception:  # the broker cannot tell: leave it to the stale check
        logger.warning("could not ask worker %s about job %s", node, job_id, exc_info=True)
        return True
    if not replies:
        return False
    active = {str(task.get("id")) for tasks in replies.values() for task in tasks or []}
    return job_id in active


def _zombie(pid: int) -> bool:
    """A killed process that nobody has reaped yet (a container without an init) is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115, PTH123
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])


def _take_over_lost(job_id: str, me: str) -> bool:
    """A running job delivered again: take it over if its worker is gone (once; lost a
    second time, it fails and can be retried). False if it is not ours to run."""
    job = Job.objects.filter(id=job_id).first()
    if job is None or job.status != JobStatus.RUNNING:
        return False
    if _worker_alive(job.worker, job_id):
        return False
    lost_worker = job.worker
    if job.attempts >= int(settings.DEIDWEB_JOB_MAX_ATTEMPTS):
        failed = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, worker=lost_worker).update(
            status=JobStatus.FAILED,
            message="Worker lost",
            error=job_lost_again_error(job.attempts),
            finished_at=timezone.now(),
        )
        if failed:
            job.refresh_from_db()
            _audit(job, "job.finish", {"status": job.status, "error": job.error[:500]})
            _finished(job)
        return False
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
        return False
    job.refresh_from_db()
    _audit(job, "job.restart", {"attempt": job.attempts, "lost_worker": lost_worker})
    logger.warning("job %s: worker %s lost, running it again", job_id, lost_worker)
    return True


def job_execute(*, job_id: str, worker: str = "") -> bool:
    """Run a queued job to completion (or a running one whose worker is gone, once more).
    Returns False if it was not ours to run. ``worker`` is the Celery node name."""
    jobs_mark_lost()  # a live worker notices the jobs of dead ones
    me = _worker_id(worker)
    now = timezone.now()
    claimed = Job.objects.filter(id=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        message="Started",
        worker=me,
        attempts=F("attempts") + 1,
    )
    if claimed:
        job = Job.objects.get(id=job_id)
        _audit(job, "job.start", {})
    elif _take_over_lost(job_id, me):
        job = Job.objects.get(id=job_id)
    else:
        logger.info("job %s not claimed: missing, running or finished", job_id)
        return False
    path = settings.DEIDWEB_JOB_HANDLERS.get(job.kind) or JOB_HANDLERS[job.kind]
    handler: Callable[[Job, JobContext], dict[str, Any]] = import_string(path)
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
    # A cancellation that raced the end of the work wins: the user asked for it. A job taken
    # over by another worker (this one was thought lost) is that worker's to finish.
    updated = Job.objects.filter(id=job.id, status=JobStatus.RUNNING, worker=job.worker).update(
        **fields
    )
    mine = job.worker
    job.refresh_from_db(fields=["status", "message", "error", "worker"])
    if not updated and job.worker != mine:
        return
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
        raise ApplicationError(
            f"The job has already {job.status}; there is nothing to cancel.", status=409
        )
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


def job_lost_again_error(attempts: int) -> str:
    return (
        f"The worker stopped while running this job, {attempts} times (it was restarted, "
        "killed or ran out of memory). Run it again."
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
