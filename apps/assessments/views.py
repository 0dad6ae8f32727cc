"""The assessments' pages: the list, a new assessment, its overview, and the step pages'
dispatcher (``assessment_step``). One view per step, registered by slug
(``views_base.step_view``): Steps 1-3 in ``views_setup_steps``, 4-6 in ``views_risk_steps``,
7 in ``views_deidentify``, 8 in ``views_utility``. Every POST saves to the database and
redirects (no session wizard: jobs and reviewers sit between the steps)."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.assessments import hooks, services
from apps.assessments.forms import AssessmentCreateForm
from apps.assessments.selectors import assessment_get, assessments_listed
from apps.assessments.views_base import STEP_VIEWS, _context, _go
from apps.core.errors import ApplicationError
from apps.core.pagination import list_page
from apps.datasets.selectors import dataset_get

# The step views register themselves by slug (``step_view``) when their modules are
# imported: imported here, where the registry is read, not left to urls.py's import order.
from apps.assessments import (  # noqa: F401  # isort: skip
    views_deidentify,
    views_risk_steps,
    views_setup_steps,
    views_utility,
)


@org_view()
def assessment_list(request: HttpRequest, organization: Organization) -> HttpResponse:
    return render(
        request,
        "assessments/list.html",
        {
            "page": list_page(request, assessments_listed(organization=organization)),
            "help_topic": "assessments",
        },
    )


@org_view(edit=True)
def assessment_create(
    request: HttpRequest, organization: Organization, dataset_id: UUID
) -> HttpResponse:
    dataset = dataset_get(organization=organization, dataset_id=dataset_id)
    form = AssessmentCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            assessment = services.assessment_create(
                organization=organization,
                dataset=dataset,
                user=user_of(request),
                title=form.cleaned_data["title"],
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            return _go(organization, assessment, "release")
    return render(
        request,
        "assessments/create.html",
        {"form": form, "dataset": dataset, "help_topic": "assessments"},
    )


@org_view()
def assessment_detail(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    blockers = hooks.submission_blockers(assessment) if assessment.status == "draft" else []
    return render(
        request,
        "assessments/overview.html",
        _context(
            request,
            assessment,
            "overview",
            blockers=blockers,
            editable_versions=membership_of(request).can_edit,
        ),
    )


@org_view()
def assessment_step(
    request: HttpRequest, organization: Organization, assessment_id: UUID, slug: str
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    view = STEP_VIEWS.get(slug)
    if view is None:
        raise Http404("No such step.")
    if request.method == "POST" and not membership_of(request).can_edit:
        messages.error(request, "Only analysts and administrators can change an assessment.")
        return _go(organization, assessment, slug)
    return view(request, organization, assessment)
