"""Creating a job and sending its message to its queue.

Jobs go to a queue by kind (``job_queue``): short interactive ones (risk, search) to
``interactive``, long ones (ingest, profile, apply, report) to ``heavy``, so a worker can be
kept for the interactive queue and a newcomer's search never waits behind a 2 GB upload.
Within a queue, a worker takes the fairest job, not the oldest (``apps.jobs.scheduling``),
and a member may have only ``DEIDWEB_JOB_USER_HEAVY_LIMIT`` long jobs queued or running.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.core.hooks import Provided
from apps.jobs.kinds import JOB_HANDLERS, check_user_limit, job_queue
from apps.jobs.models import Job

__all__ = ["job_create", "job_enqueue", "job_message_send", "job_send"]

logger = logging.getLogger(__name__)


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
