"""A worker killed in the middle of a job (SIGKILL to its whole process group, on PostgreSQL
and Redis, prefork pool as deployed): a live worker sees within seconds that the one running
the job is gone (its process ended; elsewhere, its heartbeat stopped) and queues the job
again, without waiting for the broker's visibility timeout (hours); the job runs again,
once. One result, one "succeeded" in the audit trail, no file left over."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments import deidentify, release_apply, services
from apps.assessments.services import assessment_create
from apps.audit.models import AuditEvent
from apps.classification.services import variables_accept_suggestions
from apps.datasets.services import dataset_upload
from apps.datasets.storage import sha256_of
from apps.jobs.models import Job, JobStatus
from tests.assessments.conftest import trade_off_people
from tests.conftest import read_now, running_celery_worker, wait_for_job
from tests.jobs.embedded_setup import ready_for_risk
from tests.reviews.conftest import run
from tests.slow_jobs import PAUSED

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

PREFORK = ("--pool=prefork", "--concurrency=1")
WORKER_ENV = {
    # a task not acknowledged 6 s after delivery goes back to the queue (looked for every s)
    "DEIDWEB_BROKER_VISIBILITY_TIMEOUT": "6",
    "DEIDWEB_BROKER_RESTORE_INTERVAL": "1",
    "DEIDWEB_TEST_JOB_HANDLERS": "assessment-search=tests.slow_jobs.slow_search,"
    "assessment-apply=tests.slow_jobs.slow_apply",
}


def prepared(custodian: Any, analyst: Any) -> Any:
    """An assessment of 400 people ready for Step 7 (the risk measured here, in-process)."""
    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("people.csv", trade_off_people().write_csv().encode()),
        )
    )
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = ready_for_risk(
        assessment_create(organization=custodian, dataset=dataset, user=analyst)
    )
    run(services.assessment_start_risk(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    return assessment


def wait_paused(job_id: Any, timeout: float = 60.0) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(id=job_id)
        if job.status == JobStatus.RUNNING and job.message == PAUSED:
            return job
        assert not job.is_finished, (job.status, job.error)
        time.sleep(0.2)
    raise AssertionError(f"the job did not get going: {job.status} {job.message!r}")


def kill_group(process: Any) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def events(job: Job, action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(object_id=str(job.id), action=action))


def assert_one_run_recorded(job: Job) -> None:
    assert (job.status, job.attempts) == (JobStatus.SUCCEEDED, 2), (job.status, job.error)
    assert len(events(job, "job.start")) == 1
    restarts = events(job, "job.restart")
    assert len(restarts) == 1 and restarts[0].details["attempt"] == 2
    finished = events(job, "job.finish")
    assert [e.details["status"] for e in finished] == ["succeeded"]


def files_under(folder: str) -> set[str]:
    found: set[str] = set()
    try:
        folders, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return found
    found.update(f"{folder}/{name}" for name in files)
    for sub in folders:
        found |= files_under(f"{folder}/{sub}")
    return found


def test_a_search_whose_worker_is_killed_is_run_again_once(custodian, analyst):
    assessment = prepared(custodian, analyst)
    queue = f"deidweb-kill-{uuid.uuid4().hex[:8]}"
    with running_celery_worker(PREFORK, WORKER_ENV, queue=queue) as first:
        job = deidentify.assessment_start_search(assessment=assessment, user=analyst)
        running = wait_paused(job.id)
        assert running.worker and running.attempts == 1
        kill_group(first)
    # as the dead worker left it, or queued again if a live worker (another test's) noticed
    assert Job.objects.get(id=job.id).status in (JobStatus.RUNNING, JobStatus.QUEUED)

    with running_celery_worker(PREFORK, WORKER_ENV, queue=queue):
        done = wait_for_job(job.id, timeout=90)
        assert_one_run_recorded(done)
        assert done.worker != running.worker
        assessment.refresh_from_db()
        assert assessment.search_result is not None and assessment.chosen_levels
        assert done.result["found"] is True
        time.sleep(8)  # past the visibility timeout: the task is not run a third time
        assert Job.objects.get(id=job.id).attempts == 2
        # queued again by a live worker (this one, or another test's) that saw it lost
        assert events(done, "job.restart")[0].details["lost_worker"] == running.worker
    assert Job.objects.filter(kind="assessment-search", subject=job.subject).count() == 1


def test_an_apply_whose_worker_is_killed_leaves_one_release_and_no_stray_files(custodian, analyst):
    assessment = prepared(custodian, analyst)
    run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    prefix = (
        f"organizations/{assessment.organization_id}/assessments/{assessment.id}"
        f"/v{assessment.version}"
    )
    queue = f"deidweb-kill-{uuid.uuid4().hex[:8]}"
    with running_celery_worker(PREFORK, WORKER_ENV, queue=queue) as first:
        job = release_apply.assessment_start_apply(assessment=assessment, user=analyst)
        wait_paused(job.id)
        kill_group(first)
    # killed after storing its first file, before swapping the result in
    left = files_under(f"{prefix}/release")
    assert len(left) == 1, left
    assessment.refresh_from_db()
    assert assessment.apply_result is None

    with running_celery_worker(PREFORK, WORKER_ENV, queue=queue):
        done = wait_for_job(job.id, timeout=120)
        assert_one_run_recorded(done)
    assessment.refresh_from_db()
    result = assessment.apply_result
    assert result is not None and result["job"] == str(job.id)
    referenced = {assessment.output_parquet_path, assessment.output_csv_path}
    referenced.discard("")
    outputs = {"parquet": assessment.output_parquet_path, "csv": assessment.output_csv_path}
    for key, name in outputs.items():
        assert default_storage.exists(name)
        assert sha256_of(Path(default_storage.path(name))) == result["sha256"][key]
    if assessment.secrets_path:
        referenced.add(assessment.secrets_path)
    # exactly the files the assessment refers to: the first attempt's file was replaced
    assert files_under(f"{prefix}/release") | files_under(f"{prefix}/secrets") == referenced
    assert Job.objects.filter(kind="assessment-apply", subject=job.subject).count() == 1


def test_a_live_worker_reruns_the_job_of_a_killed_one_within_seconds(custodian, analyst):
    """Issue 23, item 6: a search whose worker was killed showed "running" for 600 s. The
    broker would give its message back only after an hour here: the live worker's heartbeat
    is what notices."""
    assessment = prepared(custodian, analyst)
    queue = f"deidweb-kill-{uuid.uuid4().hex[:8]}"
    env = {**WORKER_ENV, "DEIDWEB_BROKER_VISIBILITY_TIMEOUT": "3600"}
    with (
        running_celery_worker(PREFORK, env, queue=queue) as one,
        running_celery_worker(PREFORK, env, queue=queue) as other,
    ):
        job = deidentify.assessment_start_search(assessment=assessment, user=analyst)
        running = wait_paused(job.id)
        by_node = {one.log_path.stem: one, other.log_path.stem: other}
        node = running.worker.split("@", 1)[0]
        victim = by_node[node]
        survivor = other if victim is one else one
        kill_group(victim)
        killed_at = time.monotonic()
        while Job.objects.get(id=job.id).attempts < 2:
            assert time.monotonic() - killed_at < 15, "the killed worker's job was not re-run"
            time.sleep(0.1)
        noticed = time.monotonic() - killed_at
        done = wait_for_job(job.id, timeout=90)
        assert_one_run_recorded(done)
        assert done.worker.split("@", 1)[0] == survivor.log_path.stem
        assert noticed < 10, noticed
