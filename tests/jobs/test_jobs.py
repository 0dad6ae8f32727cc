import pytest

from apps.core.errors import ApplicationError
from apps.jobs import kinds
from apps.jobs.cancel_retry import job_cancel, job_retry
from apps.jobs.claiming import job_execute
from apps.jobs.context import JobCancelled, JobContext
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create


@pytest.fixture
def handlers(monkeypatch):
    """Test handlers registered under their own kinds, resolved like real ones."""
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-ok", "tests.jobs.handlers.ok")
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-boom", "tests.jobs.handlers.boom")
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-rule", "tests.jobs.handlers.rule")
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-cancel", "tests.jobs.handlers.cancel_midway")


def make(custodian, kind, **params):
    return job_create(organization=custodian, kind=kind, params=params, enqueue=False)


def test_a_job_runs_once_even_when_delivered_twice(db, custodian, handlers):
    job = make(custodian, "t-ok", n=3)
    assert job_execute(job_id=str(job.id)) is True
    assert job_execute(job_id=str(job.id)) is False  # already claimed: harmless
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.result == {"squares": [0, 1, 4]}
    assert job.progress == 100
    assert job.attempts == 1
    assert job.started_at <= job.finished_at


def test_unexpected_exception_marks_the_job_failed_with_its_message(db, custodian, handlers):
    job = make(custodian, "t-boom")
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == (
        "The job stopped on an unexpected error. Run it again; if it fails again, tell your "
        f"administrator, giving this reference: job {job.id}."
    )
    assert job.error_detail.startswith("Traceback (most recent call last)")
    assert job.error_detail.rstrip().endswith("ZeroDivisionError: division by zero")


def test_a_traceback_reaches_the_log_and_site_administrators_never_members(
    custodian, analyst, admin_user, handlers, client_for, caplog, django_user_model
):
    from django.urls import reverse

    from apps.audit.models import AuditEvent

    job = make(custodian, "t-boom")
    with caplog.at_level("ERROR", logger="apps.jobs.running"):
        job_execute(job_id=str(job.id))
    assert "ZeroDivisionError" in caplog.text
    page = reverse("job-detail", kwargs={"org": custodian.slug, "job_id": job.id})
    for member in (analyst, admin_user):
        client = client_for(member)
        for url in (
            page,
            f"/api/v1/jobs/{job.id}/",
            f"/api/v1/audit/?organization={custodian.slug}",
        ):
            text = client.get(url).content.decode()
            assert "ZeroDivisionError" not in text and "Traceback" not in text, url
        assert f"reference: job {job.id}" in client.get(page).content.decode()
    finished = AuditEvent.objects.get(action="job.finish", object_id=str(job.id))
    assert "Traceback" not in str(finished.details)
    staff = django_user_model.objects.create_superuser("site-admin", password="pw-site-admin")
    assert (
        "ZeroDivisionError"
        in client_for(staff).get(f"/admin/jobs/job/{job.id}/change/").content.decode()
    )


def test_rule_violation_is_reported_as_plain_message(db, custodian, handlers):
    job = make(custodian, "t-rule")
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.FAILED, "The column 'age' is empty.")


def test_cancellation_while_running_stops_at_the_next_progress_report(db, custodian, handlers):
    job = make(custodian, "t-cancel")
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert job.result is None


def test_cancel_queued_then_retry(db, custodian, handlers):
    job = make(custodian, "t-ok", n=2)
    job_cancel(job=job)
    assert job.status == JobStatus.CANCELLED
    assert job_execute(job_id=str(job.id)) is False  # a cancelled job is never started
    with pytest.raises(ApplicationError, match="already cancelled"):
        job_cancel(job=job)
    again = job_retry(job=job)
    assert again.id != job.id and again.status == JobStatus.QUEUED and again.params == {"n": 2}
    job_execute(job_id=str(again.id))
    again.refresh_from_db()
    assert again.result == {"squares": [0, 1]}


def test_unknown_kind_is_refused(db, custodian):
    with pytest.raises(ApplicationError, match="Unknown job kind 'nope'"):
        job_create(organization=custodian, kind="nope")


def test_job_cancelled_exception_is_raised_by_progress_after_cancel(db, custodian, handlers):
    job = make(custodian, "t-ok")
    Job.objects.filter(id=job.id).update(status=JobStatus.RUNNING)
    context = JobContext(job, min_interval=0)
    context.progress(10, "working")
    job.refresh_from_db()
    assert (job.progress, job.message) == (10, "working")
    Job.objects.filter(id=job.id).update(status=JobStatus.CANCELLED)
    with pytest.raises(JobCancelled):
        context.progress(20, "more")


def test_a_job_past_the_time_limit_fails_with_a_plain_message(db, custodian, settings, monkeypatch):
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-long", "tests.jobs.handlers.runs_too_long")
    settings.DEIDWEB_JOB_TIME_LIMIT = 3600
    job = make(custodian, "t-long")
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == (
        "The job ran longer than the limit of 3,600 s (DEIDWEB_JOB_TIME_LIMIT) and was stopped."
    )


def test_the_time_limits_reach_celery():
    from django.conf import settings

    from deidweb.celery import app

    assert app.conf.task_soft_time_limit == settings.DEIDWEB_JOB_TIME_LIMIT == 6 * 3600
    assert app.conf.task_time_limit == settings.DEIDWEB_JOB_TIME_LIMIT + 60
