"""What members read when a job fails without an error of its own: a bug, a locked
database, the time or memory limit, a lost worker.
"""

from __future__ import annotations

from django.conf import settings

from apps.jobs.liveness import WorkerState, worker_state
from apps.jobs.models import Job


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
