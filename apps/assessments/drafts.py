"""Only a draft changes: the checks every write to an assessment, and every job of one,
goes through. A submitted or decided version is frozen (its record is what the reviewer
decides on); a change means a new version. (The database refuses such a write too:
``apps.core.db_guards``.)"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from apps.assessments.models import Assessment, AssessmentStatus
from apps.core.errors import ApplicationError
from apps.jobs.models import Job


def _frozen_error(status: str) -> ApplicationError:
    label = AssessmentStatus(status).label.lower()
    return ApplicationError(
        f"This assessment is {label} and frozen; start a new version to change it.",
        {"status": status},
        status=409,
    )


def assessment_editable(assessment: Assessment) -> None:
    """The one check every write to an assessment goes through: only a draft changes.

    The status is read from the database, under a row lock when inside a transaction, so a
    submission that happened after the caller loaded the assessment is seen. (The database
    refuses such a write too: ``apps.core.db_guards``.)"""
    if assessment.read_only:
        raise _frozen_error(assessment.status)
    rows = Assessment.objects.filter(id=assessment.id)
    if transaction.get_connection().in_atomic_block:
        rows = rows.select_for_update()
    status = rows.values_list("status", flat=True).first()
    if status is None:
        raise ApplicationError("The assessment no longer exists.", status=404)
    if status != AssessmentStatus.DRAFT:
        assessment.status = status
        raise _frozen_error(status)


def assessment_lock_draft(assessment_id: Any) -> Assessment:
    """For a job handler about to write its result: lock the assessment's row and return it,
    or refuse when it is no longer a draft (submitted, decided). Call inside a transaction."""
    locked = Assessment.objects.select_for_update().get(id=assessment_id)
    if locked.status != AssessmentStatus.DRAFT:
        raise _frozen_error(locked.status)
    return locked


def assessment_job_guard(job: Job, action: str) -> None:
    """A risk, search or apply job of a submitted or decided version is never run, cancelled
    or retried: its results are what the reviewer decides on."""
    assessment_id = (job.params or {}).get("assessment_id") or job.subject.partition(":")[2]
    status = (
        Assessment.objects.filter(id=assessment_id, organization_id=job.organization_id)
        .values_list("status", flat=True)
        .first()
    )
    if status is None:
        raise ApplicationError("The assessment of this job no longer exists.", status=404)
    if status != AssessmentStatus.DRAFT:
        label = AssessmentStatus(status).label.lower()
        verb = {"run": "run", "cancel": "cancelled", "retry": "retried"}.get(action, action)
        raise ApplicationError(
            f"This job belongs to a version that is {label}: its work is frozen and cannot be "
            f"{verb}. Start a new version to change the assessment.",
            {"status": status},
            status=409,
        )
