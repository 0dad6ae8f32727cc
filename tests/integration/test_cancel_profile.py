"""Cancelling a long profile on a real worker (prefork pool, as deployed): the job stops
within seconds, the worker is free for the next job and the data set can be acted on."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.datasets.models import Dataset, DatasetStatus
from apps.jobs.models import Job, JobStatus
from tests.conftest import running_celery_worker, wait_for_job

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def prefork_worker(django_db_setup, django_db_blocker):
    # A worker that reads files of up to 10,000 columns (the default limit is 2,000).
    extra = {"DEIDWEB_MAX_COLUMNS": "10000"}
    with running_celery_worker(("--pool=prefork", "--concurrency=1"), extra) as process:
        yield process


def wide_csv(columns: int, rows: int) -> bytes:
    header = ",".join(f"c{i}" for i in range(columns))
    lines = [",".join(str((r * 7 + c) % 97) for c in range(columns)) for r in range(rows)]
    return ("\n".join([header, *lines]) + "\n").encode()


def test_a_cancelled_profile_stops_within_seconds(prefork_worker, client_for, analyst, custodian):
    # 10,000 columns (allowed by this worker) take it about a minute to profile.
    client = client_for(analyst)
    response = client.post(
        "/api/v1/datasets/",
        {
            "organization": custodian.slug,
            "file": SimpleUploadedFile("wide.csv", wide_csv(10_000, 200)),
        },
    )
    assert response.status_code == 201, response.content
    dataset_id, job_id = response.json()["id"], response.json()["profile_job"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until it is in the middle of the columns
        job = Job.objects.get(id=job_id)
        if job.status == JobStatus.RUNNING and "of 10000" in job.message:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the profile did not get going: {job.status} {job.message!r}")

    cancelled_at = time.monotonic()
    response = client.post(f"/api/v1/jobs/{job_id}/cancel/")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    assert Dataset.objects.get(id=dataset_id).status == DatasetStatus.FAILED

    # The worker (one child) is free again: a small upload is profiled right after.
    small = client.post(
        "/api/v1/datasets/",
        {"organization": custodian.slug, "file": SimpleUploadedFile("s.csv", b"a,b\n1,2\n")},
    )
    next_job = wait_for_job(small.json()["profile_job"], timeout=30)
    assert next_job.status == JobStatus.SUCCEEDED, next_job.error
    assert time.monotonic() - cancelled_at < 30
    job = Job.objects.get(id=job_id)
    assert (job.status, job.message) == (JobStatus.CANCELLED, "Cancelled")
    assert Dataset.objects.get(id=dataset_id).status == DatasetStatus.FAILED
    # Whichever saw the cancel first stopped the work: the worker process watching the job's
    # process (apps.jobs.isolation, which reads the row every second) or the job's own next
    # progress report (also every second): which one wins is the machine's timing. The
    # watcher's own stop is shown in test_worker_reliability, by cancels that come while the
    # job's process is still starting.
    log = prefork_worker.log_path.read_text()
    assert (
        f"job {job_id}: cancelled; its process was stopped" in log
        or f"job {job_id}: cancelled; it stopped at its own check of the row" in log
    )
