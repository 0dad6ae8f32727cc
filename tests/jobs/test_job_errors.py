"""Everything after a job is claimed is inside its error handling (issue 22, item 4): on
SQLite the job's first write (its `job.start` audit event) raised "database is locked",
outside the `try`, and the job showed "Running · 0 %" for 16 minutes before the page blamed
the worker. Now it ends failed with that cause, and its final write outlasts a busy
database."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from apps.audit import services as audit_services
from apps.audit.models import AuditEvent
from apps.jobs import kinds, running
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job, JobStatus
from apps.jobs.queueing import job_create


@pytest.fixture
def ok_kind(monkeypatch):
    monkeypatch.setitem(kinds.JOB_HANDLERS, "t-ok", "tests.jobs.handlers.ok")


def failing_audit(monkeypatch, action: str, times: int, message: str = "database is locked"):
    """audit_record raising an OperationalError on its first `times` calls for `action`."""
    real = audit_services.audit_record
    left = {"n": times}

    def audit_record(**kwargs):
        if kwargs["action"] == action and left["n"] > 0:
            left["n"] -= 1
            raise OperationalError(message)
        return real(**kwargs)

    monkeypatch.setattr(audit_services, "audit_record", audit_record)
    monkeypatch.setattr(running, "audit_record", audit_record)  # imported there


def test_a_job_whose_first_write_fails_ends_failed_with_that_error(
    db, custodian, ok_kind, monkeypatch
):
    job = job_create(organization=custodian, kind="t-ok", params={"n": 2}, enqueue=False)
    failing_audit(monkeypatch, "job.start", times=1)

    assert job_execute(job_id=str(job.id)) is True
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == (
        "The job could not write to the database: another process kept it locked for longer "
        "than the wait allowed (database is locked). Run it again."
    )
    assert job.error_detail.rstrip().endswith("OperationalError: database is locked")
    assert job.finished_at is not None and job.result is None
    finished = AuditEvent.objects.get(object_id=str(job.id), action="job.finish")
    assert finished.details["status"] == "failed"


def test_any_other_first_write_error_also_ends_the_job(db, custodian, ok_kind, monkeypatch):
    job = job_create(organization=custodian, kind="t-ok", enqueue=False)
    failing_audit(monkeypatch, "job.start", times=1, message="disk I/O error")
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert f"giving this reference: job {job.id}" in job.error
    assert "disk I/O error" in job.error_detail


def test_the_final_write_is_retried_while_the_database_is_locked(
    db, custodian, ok_kind, monkeypatch
):
    monkeypatch.setattr(running, "FINISH_RETRY_SECONDS", (0.01, 0.01, 0.01))
    job = job_create(organization=custodian, kind="t-ok", params={"n": 3}, enqueue=False)
    failing_audit(monkeypatch, "job.finish", times=2)
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.SUCCEEDED, {"squares": [0, 1, 4]})
    events = AuditEvent.objects.filter(object_id=str(job.id), action="job.finish")
    assert [e.details["status"] for e in events] == ["succeeded"]  # one end, recorded once


def test_a_database_locked_for_good_leaves_no_half_recorded_end(
    db, custodian, ok_kind, monkeypatch
):
    monkeypatch.setattr(running, "FINISH_RETRY_SECONDS", (0.01,))
    job = job_create(organization=custodian, kind="t-ok", enqueue=False)
    failing_audit(monkeypatch, "job.finish", times=10)
    with pytest.raises(OperationalError):
        job_execute(job_id=str(job.id))
    # the end and its audit event go together or not at all: the job is still the
    # worker's (whoever watches it fails it, apps.jobs.isolation), never "succeeded"
    # without its event
    stored = Job.objects.get(id=job.id)
    assert stored.status == JobStatus.RUNNING
    assert not AuditEvent.objects.filter(object_id=str(job.id), action="job.finish").exists()
