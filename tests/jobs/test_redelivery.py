"""A job delivered again (acks_late: its worker died before acknowledging it) is run again
once if the worker that claimed it is gone, left alone if that worker still runs it, and
failed with a message (retryable) when it has been lost too often. Jobs go to a queue by
kind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from apps.audit.models import AuditEvent
from apps.jobs.cancel_retry import job_retry
from apps.jobs.claiming import job_execute
from apps.jobs.kinds import job_queue
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create

pytestmark = pytest.mark.django_db


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def claimed_by(job: Job, pid: int, *, attempts: int = 1, host: str | None = None) -> None:
    Job.objects.filter(id=job.id).update(
        status=JobStatus.RUNNING,
        worker=f"w1@box {host or socket.gethostname()} {pid}",
        attempts=attempts,
    )


@pytest.fixture
def ok_handler(settings):  # type: ignore[no-untyped-def]
    settings.DEIDWEB_JOB_HANDLERS = {"profile": "tests.jobs.handlers.ok"}


def actions(job: Job) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_id=str(job.id))
        .order_by("sequence")
        .values_list("action", flat=True)
    )


def test_a_job_whose_worker_process_is_gone_is_run_again_once(db, custodian, ok_handler):
    job = job_create(organization=custodian, kind="profile", params={"n": 3}, enqueue=False)
    claimed_by(job, dead_pid())
    assert job_execute(job_id=str(job.id), worker="w2@box") is True
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == ("succeeded", 2, {"squares": [0, 1, 4]})
    assert job.worker == f"w2@box {socket.gethostname()} {os.getpid()}"
    assert actions(job) == ["job.restart", "job.finish"]
    restart = AuditEvent.objects.get(object_id=str(job.id), action="job.restart")
    assert restart.details["attempt"] == 2 and restart.details["lost_worker"].startswith("w1@box")
    # delivered yet again: it has finished, nothing happens
    assert job_execute(job_id=str(job.id)) is False
    assert Job.objects.get(id=job.id).attempts == 2


def test_a_job_whose_worker_still_runs_it_is_left_alone(db, custodian, ok_handler):
    job = job_create(organization=custodian, kind="profile", enqueue=False)
    claimed_by(job, os.getppid())  # a live process
    assert job_execute(job_id=str(job.id)) is False
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 1)


def test_a_job_claimed_before_workers_were_recorded_is_left_to_the_stale_check(
    db, custodian, ok_handler
):
    job = job_create(organization=custodian, kind="profile", enqueue=False)
    Job.objects.filter(id=job.id).update(status=JobStatus.RUNNING, worker="", attempts=1)
    assert job_execute(job_id=str(job.id)) is False
    assert Job.objects.get(id=job.id).status == JobStatus.RUNNING


def test_a_job_lost_again_fails_with_a_message_and_can_be_retried(db, custodian, ok_handler):
    job = job_create(organization=custodian, kind="profile", params={"n": 2}, enqueue=False)
    claimed_by(job, dead_pid(), attempts=django_settings.DEIDWEB_JOB_MAX_ATTEMPTS)
    assert job_execute(job_id=str(job.id)) is False
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.FAILED, "Worker lost")
    assert "2 times" in job.error and "Run it again" in job.error
    assert actions(job) == ["job.finish"]
    again = job_retry(job=job)
    assert again.status == JobStatus.QUEUED and again.params == {"n": 2}


def test_a_worker_on_another_machine_is_known_by_its_heartbeat(db, custodian, ok_handler, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.jobs.models import Worker

    settings.DEIDWEB_WORKER_LOST_SECONDS = 10
    job = job_create(organization=custodian, kind="profile", enqueue=False)
    claimed_by(job, 12345, host="elsewhere")
    now = timezone.now()
    row = Worker.objects.create(
        name="w1@box", hostname="elsewhere", pid=1, queues=["heavy"], started_at=now, seen_at=now
    )
    # its heartbeat is recent: left alone
    assert job_execute(job_id=str(job.id)) is False
    # silent for longer than DEIDWEB_WORKER_LOST_SECONDS: taken over
    Worker.objects.filter(pk=row.pk).update(seen_at=now - timedelta(seconds=11))
    assert job_execute(job_id=str(job.id)) is True
    assert Job.objects.get(id=job.id).status == JobStatus.SUCCEEDED


def test_jobs_go_to_a_queue_by_kind():
    assert job_queue("assessment-risk") == job_queue("assessment-search") == "interactive"
    for kind in ("ingest", "profile", "assessment-apply", "report"):
        assert job_queue(kind) == "heavy"


def test_tasks_are_acknowledged_late_and_the_broker_waits_past_the_time_limit():
    from deidweb.settings import jobs

    assert jobs.CELERY_TASK_ACKS_LATE is True
    assert jobs.CELERY_TASK_REJECT_ON_WORKER_LOST is True
    assert jobs.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert jobs.DEIDWEB_BROKER_VISIBILITY_TIMEOUT > jobs.CELERY_TASK_TIME_LIMIT
    options = jobs.redis_transport_options()
    assert options["visibility_timeout"] == jobs.DEIDWEB_BROKER_VISIBILITY_TIMEOUT
