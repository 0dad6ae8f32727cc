"""The job page and its polled fragment: reads that never write, never cached, polling soon
at first and less often as a job ages, and the final state shown before the page reloads."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create


@pytest.fixture
def job(custodian, analyst):
    return job_create(organization=custodian, kind="profile", created_by=analyst, enqueue=False)


def url(name, job, query=""):
    return reverse(name, kwargs={"org": job.organization.slug, "job_id": job.id}) + query


def age(job, seconds, status=JobStatus.RUNNING):
    moment = timezone.now() - timedelta(seconds=seconds)
    Job.objects.filter(id=job.id).update(
        status=status, created_at=moment, started_at=moment, heartbeat_at=moment
    )
    job.refresh_from_db()
    return job


def test_polling_starts_at_half_a_second_and_backs_off_to_5_s(client_for, analyst, job):
    client = client_for(analyst)
    fragment = client.get(url("job-progress", job)).content.decode()
    assert 'hx-trigger="load delay:500ms"' in fragment and 'hx-swap="outerHTML"' in fragment
    assert age(job, 20).poll_interval_ms == 2000
    assert 'hx-trigger="load delay:2000ms"' in client.get(url("job-progress", job)).content.decode()
    assert age(job, 300).poll_interval_ms == 5000
    page = client.get(url("job-detail", job)).content.decode()
    assert 'hx-trigger="load delay:5000ms"' in page
    age(job, 1, status=JobStatus.SUCCEEDED)
    assert "hx-get" not in client.get(url("job-progress", job)).content.decode()
    assert "hx-get" not in client.get(url("job-detail", job)).content.decode()


def test_job_pages_are_never_cached(client_for, analyst, job):
    client = client_for(analyst)
    for name in ("job-detail", "job-progress"):
        assert "no-store" in client.get(url(name, job))["Cache-Control"]


def test_the_final_state_is_swapped_in_before_the_page_reloads(client_for, analyst, job):
    client = client_for(analyst)
    age(job, 1, status=JobStatus.SUCCEEDED)
    polled = client.get(url("job-progress", job, "?reload=1"), headers={"HX-Request": "true"})
    assert "HX-Refresh" not in polled  # that reloads before the swap, keeping the old state
    text = polled.content.decode()
    assert 'data-status="succeeded"' in text and "data-reload-page" in text
    # Rendered in a page (not polled), it does not reload again.
    assert (
        "data-reload-page" not in client.get(url("job-progress", job, "?reload=1")).content.decode()
    )
    assert "data-reload-page" not in client.get(url("job-detail", job)).content.decode()


def test_reading_a_lost_job_writes_nothing(client_for, analyst, job, settings):
    settings.DEIDWEB_JOB_STALE_SECONDS = 60
    lost = age(job, 61)
    client = client_for(analyst)
    fragment = client.get(url("job-progress", job)).content.decode()
    assert 'data-status="failed"' in fragment and "Worker lost" in fragment
    assert "Worker lost" in client.get(url("job-detail", job)).content.decode()
    assert client.get(f"/api/v1/jobs/{job.id}/").json()["status"] == "failed"
    stored = Job.objects.get(id=job.id)
    assert (stored.status, stored.message, stored.updated_at) == (
        JobStatus.RUNNING,
        lost.message,
        lost.updated_at,
    )
