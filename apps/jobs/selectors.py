from __future__ import annotations

import copy
from uuid import UUID

from django.http import Http404

from apps.accounts.models import Organization
from apps.jobs.models import Job, JobStatus
from apps.jobs.services import job_is_lost, job_lost_error

__all__ = ["job_get", "job_refresh", "job_subject_url"]


def job_refresh(job: Job) -> Job:
    """The job as pages and the API show it: a job whose worker was lost (``job_is_lost``)
    reads as failed, with the explanation. Never writes (a GET must not change state): the
    row is marked by the next worker that claims a job, or by a cancel or retry."""
    if not job_is_lost(job):
        return job
    shown = copy.copy(job)  # the caller's instance stays as stored
    shown.status, shown.message, shown.error = JobStatus.FAILED, "Worker lost", job_lost_error()
    return shown


def job_get(*, organization: Organization, job_id: UUID | str) -> Job:
    job = Job.objects.filter(organization=organization, id=job_id).first()
    if job is None:
        raise Http404("No such job.")
    return job_refresh(job)


def job_subject_url(job: Job) -> str | None:
    """Where the job's result is shown, for the link on the job page."""
    from django.urls import reverse

    if job.subject.startswith("datasets.dataset:"):
        return reverse(
            "dataset-detail",
            kwargs={"org": job.organization.slug, "dataset_id": job.subject.split(":", 1)[1]},
        )
    if job.subject.startswith("assessments.assessment:"):
        slug = {
            "assessment-risk": "data-risk",
            "assessment-search": "deidentify",
            "assessment-apply": "deidentify",
        }.get(job.kind, "")
        kwargs = {"org": job.organization.slug, "assessment_id": job.subject.split(":", 1)[1]}
        if slug:
            return reverse("assessment-step", kwargs={**kwargs, "slug": slug})
        return reverse("assessment-detail", kwargs=kwargs)
    return None
