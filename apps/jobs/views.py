from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.decorators import org_view, user_of
from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.jobs.selectors import job_get, job_subject_url
from apps.jobs.services import job_cancel, job_retry


@org_view()
def job_detail(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    job = job_get(organization=organization, job_id=job_id)
    return render(
        request,
        "jobs/detail.html",
        {"job": job, "subject_url": job_subject_url(job), "help_topic": "jobs"},
    )


@org_view()
def job_progress(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    """The htmx fragment the page polls; once the job is finished the fragment stops polling."""
    job = job_get(organization=organization, job_id=job_id)
    response = render(
        request, "jobs/_progress.html", {"job": job, "subject_url": job_subject_url(job)}
    )
    if job.is_finished and request.headers.get("HX-Request") and request.GET.get("reload"):
        response["HX-Refresh"] = "true"  # the page around the fragment shows the result
    return response


@require_POST
@org_view(edit=True)
def job_cancel_view(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    job = job_get(organization=organization, job_id=job_id)
    try:
        job_cancel(job=job, user=user_of(request))
        messages.success(request, "The job was cancelled.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect("job-detail", org=organization.slug, job_id=job.id)


@require_POST
@org_view(edit=True)
def job_retry_view(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    job = job_get(organization=organization, job_id=job_id)
    try:
        new_job = job_retry(job=job, user=user_of(request))
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("job-detail", org=organization.slug, job_id=job.id)
    messages.success(request, "The job was queued again.")
    return redirect("job-detail", org=organization.slug, job_id=new_job.id)
