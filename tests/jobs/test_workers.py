"""Dead workers are noticed within seconds and their jobs run again (issue 23, item 6: a
worker killed during a search and during an apply left both "running" for 600 s; its two
reserved jobs stayed "queued" for 50 minutes); a job that waits says whether any worker
takes its queue, and a worker started without `-Q` takes every queue (issue 22, item 4)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.jobs import workers
from apps.jobs.kinds import job_queue
from apps.jobs.models import Job, JobStatus, Worker
from apps.jobs.queueing import job_create
from apps.jobs.selectors import job_get

pytestmark = pytest.mark.django_db
HOST = socket.gethostname()


@pytest.fixture
def sent(monkeypatch, django_capture_on_commit_callbacks):
    """The messages sent (job id, queue), once their transaction commits."""
    messages: list[tuple[str, str]] = []
    monkeypatch.setattr(
        workers, "job_send", lambda *, job_id, queue: messages.append((job_id, queue))
    )
    return messages


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def worker_row(
    name: str,
    *,
    seconds_ago: float,
    queues=("heavy", "interactive"),
    concurrency=2,
    host="elsewhere",
):
    seen = timezone.now() - timedelta(seconds=seconds_ago)
    return Worker.objects.create(
        name=name,
        hostname=host,
        pid=4242,
        queues=list(queues),
        concurrency=concurrency,
        started_at=seen,
        seen_at=seen,
    )


def running(custodian, worker: str, *, attempts: int = 1, kind: str = "profile") -> Job:
    job = job_create(organization=custodian, kind=kind, enqueue=False)
    Job.objects.filter(id=job.id).update(
        status=JobStatus.RUNNING,
        worker=worker,
        attempts=attempts,
        queue="heavy",
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        progress=40,
    )
    job.refresh_from_db()
    return job


def recover(django_capture_on_commit_callbacks, node="w2@box", queues=("heavy",), concurrency=1):
    with django_capture_on_commit_callbacks(execute=True):
        workers.jobs_recover(node=node, queues=list(queues), concurrency=concurrency)


def test_a_job_whose_worker_process_died_is_queued_again_at_once(
    custodian, sent, django_capture_on_commit_callbacks
):
    job = running(custodian, f"w1@box {HOST} {dead_pid()}")
    # pages say so at once, not after DEIDWEB_JOB_STALE_SECONDS (600 s)
    shown = job_get(organization=custodian, job_id=job.id)
    assert (shown.status, shown.message) == (JobStatus.FAILED, "Worker lost")
    assert shown.error == (
        "The worker running this job stopped (it was restarted, killed or ran out of memory) "
        "before the job ended. Run it again."
    )
    recover(django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert (job.status, job.worker, job.progress, job.attempts) == (JobStatus.QUEUED, "", 0, 1)
    assert job.message == "Waiting for a worker: the worker running it stopped, it will run again"
    assert sent == [(str(job.id), "heavy")]
    restart = AuditEvent.objects.get(object_id=str(job.id), action="job.restart")
    assert restart.details["attempt"] == 2 and restart.details["lost_worker"].startswith("w1@box")
    # once is enough: a second sweep finds nothing to do
    recover(django_capture_on_commit_callbacks)
    assert len(sent) == 1


def test_a_job_lost_as_often_as_allowed_fails_with_a_message(
    custodian, sent, settings, django_capture_on_commit_callbacks
):
    job = running(
        custodian, f"w1@box {HOST} {dead_pid()}", attempts=settings.DEIDWEB_JOB_MAX_ATTEMPTS
    )
    recover(django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.FAILED, "Worker lost")
    assert job.error == (
        "The worker stopped while running this job, 2 times (it was restarted, killed or ran "
        "out of memory). Run it again."
    )
    assert sent == []


def test_a_worker_elsewhere_is_dead_when_its_heartbeat_stops(
    custodian, sent, settings, django_capture_on_commit_callbacks
):
    settings.DEIDWEB_WORKER_LOST_SECONDS = 10
    worker_row("alive@far", seconds_ago=3)
    worker_row("silent@far", seconds_ago=11)
    kept = running(custodian, "alive@far elsewhere 77")
    lost = running(custodian, "silent@far elsewhere 78")
    gone = running(custodian, "vanished@far elsewhere 79")  # no row at all: it stopped
    assert job_get(organization=custodian, job_id=kept.id).status == JobStatus.RUNNING
    recover(django_capture_on_commit_callbacks)
    statuses = {j.id: Job.objects.get(id=j.id).status for j in (kept, lost, gone)}
    assert statuses == {kept.id: "running", lost.id: "queued", gone.id: "queued"}
    assert not Worker.objects.filter(name="silent@far").exists()


def test_the_messages_a_dead_worker_held_are_sent_again(
    custodian, sent, settings, django_capture_on_commit_callbacks
):
    settings.DEIDWEB_WORKER_LOST_SECONDS = 10
    worker_row("dead@far", seconds_ago=60, queues=["heavy"], concurrency=1)
    waiting = [job_create(organization=custodian, kind="profile") for _ in range(3)]
    other = job_create(organization=custodian, kind="assessment-risk")
    sent.clear()
    recover(django_capture_on_commit_callbacks, node="w2@box", queues=["interactive"])
    # as many as it could hold (concurrency × prefetch), oldest first, on its queue only
    assert sent == [(str(waiting[0].id), "heavy")]
    assert Job.objects.get(id=other.id).status == JobStatus.QUEUED


def test_a_worker_restarted_under_its_old_name_resends_what_the_old_one_held(
    custodian, sent, django_capture_on_commit_callbacks
):
    worker_row("w1@box", seconds_ago=1, queues=["heavy"], concurrency=2, host=HOST)
    waiting = [job_create(organization=custodian, kind="profile") for _ in range(3)]
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        workers.worker_replaced("w1@box")
    assert sent == [(str(j.id), "heavy") for j in waiting[:2]]


def test_a_job_that_waited_too_long_while_this_worker_idles_is_sent_again(
    custodian, sent, settings, django_capture_on_commit_callbacks
):
    settings.DEIDWEB_JOB_REDISPATCH_SECONDS = 30
    old = job_create(organization=custodian, kind="profile")
    new = job_create(organization=custodian, kind="profile")
    Job.objects.filter(id=old.id).update(dispatched_at=timezone.now() - timedelta(seconds=31))
    sent.clear()
    # busy: its one slot runs a job
    busy = running(custodian, f"w2@box {HOST} {os.getpid()}")
    recover(django_capture_on_commit_callbacks, node="w2@box", queues=["heavy"], concurrency=1)
    assert sent == []
    Job.objects.filter(id=busy.id).update(status=JobStatus.SUCCEEDED)
    recover(django_capture_on_commit_callbacks, node="w2@box", queues=["heavy"], concurrency=1)
    assert sent == [(str(old.id), "heavy")]
    recover(django_capture_on_commit_callbacks, node="w2@box", queues=["heavy"], concurrency=1)
    assert sent == [(str(old.id), "heavy")]  # sent again only after another 30 s
    assert new.status == JobStatus.QUEUED


def waited(text: str) -> str:
    """The text with how long the job has waited (8 s here, 9 on a slow machine) as N."""
    return re.sub(r"Waiting for (8|9) s", "Waiting for N s", text)


def test_a_waiting_job_says_whether_a_worker_takes_its_queue(
    custodian, analyst, client_for, settings
):
    settings.DEIDWEB_JOB_WAIT_NOTICE_SECONDS = 5
    job = job_create(organization=custodian, kind="profile", created_by=analyst)
    client = client_for(analyst)
    page = reverse("job-detail", kwargs={"org": custodian.slug, "job_id": job.id})
    assert "Waiting for a worker" in client.get(page).content.decode()  # just queued

    Job.objects.filter(id=job.id).update(dispatched_at=timezone.now() - timedelta(seconds=8))
    notice = (
        "Waiting for N s: no worker is running that takes this job (its queue: heavy). Ask "
        "your administrator to start one (celery -A deidweb worker)."
    )
    assert notice in waited(client.get(page).content.decode())
    body = client.get(f"/api/v1/jobs/{job.id}/").json()
    assert (waited(body["message"]), body["queue"], body["workers_listening"]) == (
        notice,
        "heavy",
        0,
    )

    worker_row("interactive@box", seconds_ago=1, queues=["interactive"], concurrency=1)
    worker_row("all@box", seconds_ago=1, queues=["deidweb", "heavy", "interactive"], concurrency=2)
    running(custodian, "all@box elsewhere 99")
    body = client.get(f"/api/v1/jobs/{job.id}/").json()
    assert body["workers_listening"] == 1
    assert waited(body["message"]) == (
        "Waiting for N s for a free worker: 1 worker takes this job (2 at a time, 1 running "
        "now); 1 job waits in this queue."
    )
    listed = client.get(f"/api/v1/jobs/?organization={custodian.slug}").json()["results"]
    assert {j["id"]: j["workers_listening"] for j in listed}[str(job.id)] == 1


def test_the_heartbeat_records_the_worker_and_its_end_removes_it(settings):
    started = timezone.now()
    workers.worker_beat(name="w9@box", queues=["heavy"], concurrency=3, started_at=started)
    row = Worker.objects.get(name="w9@box")
    assert (row.hostname, row.pid, row.queues, row.concurrency) == (HOST, os.getpid(), ["heavy"], 3)
    beat = workers.Heartbeat(name="w9@box", queues=["heavy"], concurrency=3)
    beat.stop()
    assert not Worker.objects.filter(name="w9@box").exists()


def test_a_worker_without_q_consumes_every_queue(settings):
    from deidweb.celery import app

    consumed = set(app.amqp.queues.consume_from)
    assert {settings.CELERY_TASK_DEFAULT_QUEUE, "interactive", "heavy"} <= consumed
    assert job_queue("assessment-risk") in consumed
