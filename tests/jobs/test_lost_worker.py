"""A job whose worker died is noticed and can be run again."""

from datetime import timedelta

from django.utils import timezone

from apps.jobs.cancel_retry import job_retry
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create
from apps.jobs.selectors import job_get, job_refresh


def test_silent_running_job_is_marked_failed_and_can_be_retried(db, custodian, settings):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    job = job_create(
        organization=custodian, kind="profile", params={"dataset_id": "x"}, enqueue=False
    )
    long_ago = timezone.now() - timedelta(seconds=61)
    Job.objects.filter(id=job.id).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )

    job = job_get(organization=custodian, job_id=job.id)  # pages and the API read jobs this way
    assert job.status == JobStatus.FAILED
    assert job.message == "Worker lost"
    assert "no progress for more than 60 s" in job.error and "Run it again" in job.error
    # Shown so, but a read never writes: the row changes on the retry.
    assert Job.objects.get(id=job.id).status == JobStatus.RUNNING
    again = job_retry(job=job)
    assert again.status == JobStatus.QUEUED and again.params == {"dataset_id": "x"}
    stored = Job.objects.get(id=job.id)
    assert (stored.status, stored.message) == (JobStatus.FAILED, "Worker lost")


def test_the_next_job_a_worker_claims_marks_lost_ones(db, custodian, settings):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    lost = job_create(organization=custodian, kind="profile", enqueue=False)
    long_ago = timezone.now() - timedelta(seconds=61)
    Job.objects.filter(id=lost.id).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    other = job_create(organization=custodian, kind="profile", enqueue=False)
    job_execute(job_id=str(other.id))
    assert Job.objects.get(id=lost.id).status == JobStatus.FAILED


def test_a_job_that_reported_progress_recently_is_left_alone(db, custodian, settings):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    job = job_create(organization=custodian, kind="profile", enqueue=False)
    recent = timezone.now() - timedelta(seconds=30)
    Job.objects.filter(id=job.id).update(
        status=JobStatus.RUNNING, started_at=recent, heartbeat_at=recent
    )
    job.refresh_from_db()
    assert job_refresh(job).status == JobStatus.RUNNING


def test_the_api_reports_a_lost_job_as_failed(db, custodian, analyst, client_for, settings):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    job = job_create(organization=custodian, kind="profile", enqueue=False)
    long_ago = timezone.now() - timedelta(minutes=5)
    Job.objects.filter(id=job.id).update(
        status=JobStatus.RUNNING, started_at=long_ago, heartbeat_at=long_ago
    )
    body = client_for(analyst).get(f"/api/v1/jobs/{job.id}/").json()
    assert (body["status"], body["message"]) == ("failed", "Worker lost")
