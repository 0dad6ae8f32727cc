"""Job handlers used by the tests (resolved by dotted path like the real ones)."""

from apps.core.errors import ApplicationError
from apps.jobs.models import Job, JobStatus


def ok(job, context):
    context.progress(50, "half way", force=True)
    return {"squares": [i * i for i in range(job.params.get("n", 0))]}


def boom(job, context):
    return {"x": 1 / 0}


def rule(job, context):
    raise ApplicationError("The column 'age' is empty.")


def cancel_midway(job, context):
    context.progress(10, "started", force=True)
    Job.objects.filter(id=job.id).update(status=JobStatus.CANCELLED)  # as the cancel button does
    context.progress(20, "continuing", force=True)
    return {"never": "stored"}


def runs_too_long(job, context):
    from celery.exceptions import SoftTimeLimitExceeded

    context.progress(10, "started", force=True)
    raise SoftTimeLimitExceeded()  # as Celery raises it inside the task at the soft limit
