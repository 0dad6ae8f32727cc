from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.accounts.decorators import org_view, user_of
from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.jobs.cancel_retry import job_cancel, job_retry
from apps.jobs.selectors import job_get, job_subject_url


# Job pages show live state: never from a cache (the browser's, a proxy's, back/forward).
@never_cache
@org_view()
def job_detail(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    job = job_get(organization=organization, job_id=job_id)
    return render(
        request,
        "jobs/detail.html",
        {"job": job, "subject_url": job_subject_url(job), "help_topic": "jobs"},
    )


@never_cache
@org_view()
def job_progress(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    """The htmx fragment the page polls (a read: it never changes the job). Once the job is
    finished the fragment stops polling; with ``reload`` it then reloads the page around it,
    after showing the final state (not with HX-Refresh, which reloads before swapping and
    leaves the old state on screen for as long as the page takes to render)."""
    job = job_get(organization=organization, job_id=job_id)
    reload = bool(request.GET.get("reload"))
    return render(
        request,
        "jobs/_progress.html",
        {
            "job": job,
            "subject_url": job_subject_url(job),
            "reload": reload,
            "reload_page": reload and job.is_finished and bool(request.headers.get("HX-Request")),
        },
    )


@require_POST
@org_view(edit=True)
def job_cancel_view(request: HttpRequest, organization: Organization, job_id: UUID) -> HttpResponse:
    """The Cancel button of every job panel: cancels this job, then shows the page the
    button stood on (``back``: the job's result page, or the job's own page)."""
    job = job_get(organization=organization, job_id=job_id)
    try:
        job_cancel(job=job, user=user_of(request))
        messages.success(request, f"Cancelled: {job.kind_label}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    subject_url = job_subject_url(job)
    if request.POST.get("back") == "subject" and subject_url:
        return redirect(subject_url)
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
