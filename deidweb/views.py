"""Pages that gather every app's part: an organization's front page shows its data sets,
jobs and review queue, so it is composed here, above the apps, not in ``accounts``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import membership_of, org_view
from apps.accounts.models import Organization
from apps.datasets.selectors import datasets_listed
from apps.jobs.models import Job
from apps.reviews.selectors import review_queue_for


@org_view()
def org_home(request: HttpRequest, organization: Organization) -> HttpResponse:
    membership = membership_of(request)
    return render(
        request,
        "accounts/org_home.html",
        {
            "review_queue": review_queue_for(organization=organization, user=request.user)
            if membership.can_review
            else None,
            "datasets": datasets_listed(organization=organization)[:10],
            "jobs": Job.objects.filter(organization=organization)[:10],
            "members": organization.memberships.select_related("user"),
            "help_topic": "start",
        },
    )
