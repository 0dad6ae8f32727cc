"""Cancelling a job and retrying it: what the person who started it (or an administrator)
may do to it.

Cancelling is certain and quick: the row turns cancelled at once, and the worker watching
the job's process ends it within a second (``apps.jobs.isolation``). A hard time limit
(``DEIDWEB_JOB_TIME_LIMIT``) ends any job that runs away. A failed or cancelled job is
retried as a new job with the same inputs, and the owner of its subject learns it
(``JOB_RETRIED``).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.accounts.models import Membership, Role
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.jobs.kinds import JOB_RETRIED, job_guard, job_notify_finished
from apps.jobs.lost_jobs import job_mark_lost
from apps.jobs.models import FINISHED, Job, JobStatus
from apps.jobs.queueing import job_create

__all__ = ["job_cancel", "job_may_cancel", "job_retry"]


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
        job_guard(job, "cancel")
    except ApplicationError:
        return False
    return True


def job_cancel(*, job: Job, user: User | None = None) -> Job:
    """Cancel a queued or running job. The row turns cancelled at once; the worker watching
    a running job's process ends it within a second (``apps.jobs.isolation``), and a
    handler run in-process stops at its next progress report."""
    _may_handle(job, user, "cancel")
    job_guard(job, "cancel")
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
        job_notify_finished(job)
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
    job_guard(job, "retry")
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
