from __future__ import annotations

import copy
from uuid import UUID

from django.conf import settings
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from apps.accounts.models import Organization
from apps.jobs.kinds import job_queue
from apps.jobs.liveness import (
    WorkerState,
    job_is_lost,
    live_workers,
    worker_state,
    workers_listening,
)
from apps.jobs.messages import job_lost_error
from apps.jobs.models import Job, JobStatus, Worker

__all__ = [
    "job_get",
    "job_refresh",
    "job_subject_url",
    "job_waiting_notice",
    "job_workers_listening",
]


def job_refresh(job: Job) -> Job:
    """The job as pages and the API show it. Never writes (a GET must not change state):

    - running on a worker that is gone (``job_is_lost``): failed, with the explanation, or
      about to run again when a live worker takes its queue (it re-runs it within seconds,
      ``apps.jobs.workers``);
    - queued for longer than ``DEIDWEB_JOB_WAIT_NOTICE_SECONDS``: whether any worker takes
      its queue, and if so how busy they are (``job_waiting_notice``)."""
    if job.status == JobStatus.RUNNING and job_is_lost(job):
        shown = copy.copy(job)  # the caller's instance stays as stored
        if _will_run_again(job):
            shown.message = (
                "The worker running it stopped; another worker will run it again in a moment"
            )
        else:
            shown.status, shown.message, shown.error = (
                JobStatus.FAILED,
                "Worker lost",
                job_lost_error(job),
            )
        return shown
    notice = job_waiting_notice(job)
    if notice:
        shown = copy.copy(job)
        shown.message = notice
        return shown
    return job


def _will_run_again(job: Job) -> bool:
    return (
        worker_state(job.worker) == WorkerState.DEAD
        and job.attempts < int(settings.DEIDWEB_JOB_MAX_ATTEMPTS)
        and bool(workers_listening(job.queue or job_queue(job.kind)))
    )


def job_workers_listening(job: Job, workers: list[Worker] | None = None) -> int | None:
    """How many live workers take the queue of a queued job (None for other jobs)."""
    if job.status != JobStatus.QUEUED:
        return None
    return len(workers_listening(job.queue or job_queue(job.kind), workers))


def job_waiting_notice(job: Job) -> str:
    """For a job queued longer than a few seconds: why it waits, in words. Empty otherwise."""
    if job.status != JobStatus.QUEUED:
        return ""
    since = job.dispatched_at or job.created_at
    waited = (timezone.now() - since).total_seconds() if since else 0.0
    if waited < int(settings.DEIDWEB_JOB_WAIT_NOTICE_SECONDS):
        return ""
    queue = job.queue or job_queue(job.kind)
    workers = workers_listening(queue, live_workers())
    if not workers:
        return (
            f"Waiting for {int(waited)} s: no worker is running that takes this job (its "
            f"queue: {queue}). Ask your administrator to start one (celery -A deidweb worker)."
        )
    theirs = Q()
    for worker in workers:
        theirs |= Q(worker__startswith=f"{worker.name} ")
    busy = Job.objects.filter(theirs, status=JobStatus.RUNNING).count()
    waiting = Job.objects.filter(status=JobStatus.QUEUED, queue=queue).count()
    slots = sum(w.concurrency for w in workers)
    return (
        f"Waiting for {int(waited)} s for a free worker: {len(workers)} "
        f"{'worker takes' if len(workers) == 1 else 'workers take'} this job "
        f"({slots} at a time, {busy} running now); {waiting} "
        f"{'job waits' if waiting == 1 else 'jobs wait'} in this queue."
    )


def job_get(*, organization: Organization, job_id: UUID | str) -> Job:
    job = Job.objects.filter(organization=organization, id=job_id).first()
    if job is None:
        raise Http404("No such job.")
    return job_refresh(job)


def job_subject_url(job: Job) -> str | None:
    """Where the job's result is shown, for the link on the job page."""
    from django.urls import reverse

    if job.subject.startswith("datasets.dataset:"):
        return reverse(
            "dataset-detail",
            kwargs={"org": job.organization.slug, "dataset_id": job.subject.split(":", 1)[1]},
        )
    if job.subject.startswith("assessments.assessment:"):
        slug = {
            "assessment-risk": "data-risk",
            "assessment-search": "deidentify",
            "assessment-apply": "deidentify",
            "assessment-synthetic": "deidentify",
            "assessment-table": "deidentify",
        }.get(job.kind, "")
        kwargs = {"org": job.organization.slug, "assessment_id": job.subject.split(":", 1)[1]}
        if slug:
            return reverse("assessment-step", kwargs={**kwargs, "slug": slug})
        return reverse("assessment-detail", kwargs=kwargs)
    return None
