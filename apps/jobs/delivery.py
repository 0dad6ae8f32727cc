"""What a worker does with a message: run a job, the fairest of the message's queue.

The message names a job; if that job is running on a worker that is gone (the message
came back because its worker died), it is taken over, once. Otherwise the worker takes the
fairest queued job of the same queue (``apps.jobs.scheduling``). A job is run in a watched
child process (``apps.jobs.isolation``), in-process when isolation is off or the task runs
eagerly (in the web process: no forking there).
"""

from __future__ import annotations

import logging

from django.conf import settings

from apps.jobs.claiming import job_claim, job_take_over_lost, worker_id
from apps.jobs.isolation import run_isolated
from apps.jobs.lost_jobs import job_housekeeping
from apps.jobs.models import Job, JobStatus
from apps.jobs.running import job_run_claimed
from apps.jobs.scheduling import job_claim_fairest

logger = logging.getLogger(__name__)


def job_run_delivered(*, job_id: str, worker: str, queue: str = "", eager: bool = False) -> bool:
    """Run the job a message of `queue` stands for; False when there was none to run.
    ``worker`` is the Celery node name."""
    job_housekeeping()
    me = worker_id(worker)
    named = Job.objects.filter(id=job_id).values_list("status", "queue").first()
    job: Job | None = None
    if named is not None and named[0] == JobStatus.RUNNING:
        job = job_take_over_lost(job_id, me)
    if job is None:
        if named is not None and not named[1]:
            job = job_claim(job_id, me)  # sent before jobs recorded their queue: run it
        elif named is not None or queue:
            job = job_claim_fairest(named[1] if named else queue, me)
    if job is None:
        logger.info("message of job %s: no queued job to run on queue %r", job_id, queue)
        return False
    if str(job.id) != job_id:
        logger.info("message of job %s runs job %s, whose turn it is", job_id, job.id)
    if eager or not settings.DEIDWEB_JOB_ISOLATION:
        job_run_claimed(job)
    else:
        run_isolated(job)
    return True
