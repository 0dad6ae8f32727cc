"""A data set whose job (reading the upload, then profiling it) ends badly (failed,
cancelled, worker lost) can be acted on: its page says what happened and offers to run the
job again or to delete the data set."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.services import dataset_upload
from apps.datasets.storage import delete_quietly
from apps.jobs.cancel_retry import job_cancel
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.jobs.selectors import job_get
from tests.conftest import read_now

CSV = b"name,age,sex\nAlice,34,F\nBob,51,M\n"


@pytest.fixture
def dataset(custodian, analyst):
    return dataset_upload(
        organization=custodian, user=analyst, upload=SimpleUploadedFile("p.csv", CSV)
    )


def page(client, dataset) -> str:
    url = reverse(
        "dataset-detail", kwargs={"org": dataset.organization.slug, "dataset_id": dataset.id}
    )
    return client.get(url).content.decode()


def test_a_cancelled_upload_leaves_the_data_set_failed_and_it_can_be_read_again(
    client_for, analyst, dataset
):
    assert dataset.status == DatasetStatus.CONVERTING
    job_cancel(job=dataset.profile_job, user=analyst)
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.FAILED
    client = client_for(analyst)
    text = page(client, dataset)
    assert "Reading the file was cancelled." in text and 'data-testid="profile-again"' in text
    assert "Read again" in text and "Delete this data set" in text

    retry = reverse(
        "job-retry", kwargs={"org": dataset.organization.slug, "job_id": dataset.profile_job.id}
    )
    assert client.post(retry).status_code == 302
    old_job = dataset.profile_job
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.CONVERTING and dataset.profile_job != old_job
    job_execute(job_id=str(dataset.profile_job.id))
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY and dataset.rows == 2


def test_a_cancel_while_running_leaves_the_data_set_failed(analyst, dataset):
    Job.objects.filter(id=dataset.profile_job.id).update(status=JobStatus.RUNNING)
    job_cancel(job=dataset.profile_job, user=analyst)
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.FAILED


def test_a_failed_profile_says_why(client_for, analyst, dataset):
    dataset = read_now(dataset)
    delete_quietly(dataset.parquet_path)  # the stored file is gone
    again = job_create(
        organization=dataset.organization,
        kind="profile",
        params={"dataset_id": str(dataset.id)},
        enqueue=False,
    )
    Dataset.objects.filter(id=dataset.id).update(profile_job=again, status="profiling")
    job_execute(job_id=str(again.id))
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.FAILED
    assert dataset.profile_job.status == JobStatus.FAILED
    text = page(client_for(analyst), dataset)
    assert "Profiling failed:" in text and "Profile again" in text


def test_a_file_that_cannot_be_read_says_why(client_for, analyst, custodian):
    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("p.csv", b"a,b\n1,2\n3\n"),
    )
    job_execute(job_id=str(dataset.profile_job_id))
    text = page(client_for(analyst), dataset)
    assert "The file could not be read: Line 3 has 1 fields but the header has 2" in text


def test_a_profile_whose_worker_was_lost_leaves_the_data_set_failed(
    client_for, analyst, custodian, dataset, settings
):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    long_ago = timezone.now() - timedelta(seconds=61)
    Job.objects.filter(id=dataset.profile_job.id).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    assert job_get(organization=custodian, job_id=dataset.profile_job.id).status == "failed"
    # Shown failed at once (a read writes nothing), with the button to profile again.
    text = page(client_for(analyst), dataset)
    assert 'data-testid="profile-again"' in text and "Worker lost" not in text
    assert "The file could not be read: The worker stopped" in text and "hx-get" not in text
    assert Dataset.objects.get(id=dataset.id).status == DatasetStatus.CONVERTING
    # The next job a worker claims marks it, and its data set, failed.
    job_execute(job_id=str(job_create(organization=custodian, kind="profile", enqueue=False).id))
    assert Dataset.objects.get(id=dataset.id).status == DatasetStatus.FAILED


def test_a_reviewer_sees_the_state_but_no_button(client_for, reviewer, analyst, dataset):
    job_cancel(job=dataset.profile_job, user=analyst)
    text = page(client_for(reviewer), dataset)
    assert "Reading the file was cancelled." in text and "profile-again" not in text
