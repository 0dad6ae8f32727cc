from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.accounts.decorators import membership_of, org_view
from apps.accounts.lockout import sign_in_policy
from apps.accounts.models import Organization
from apps.accounts.selectors import organizations_for


class SignInView(auth_views.LoginView):
    """Django's sign-in, announcing the lockout policy (django-axes enforces it)."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **sign_in_policy()}


@login_required
def home(request: HttpRequest) -> HttpResponse:
    organizations = list(organizations_for(user=request.user))
    if len(organizations) == 1:
        return redirect("org-home", org=organizations[0].slug)
    return render(
        request, "accounts/home.html", {"organizations": organizations, "help_topic": "start"}
    )


@org_view()
def org_home(request: HttpRequest, organization: Organization) -> HttpResponse:
    from apps.datasets.selectors import datasets_of
    from apps.jobs.models import Job
    from apps.reviews.selectors import review_queue_for

    membership = membership_of(request)
    return render(
        request,
        "accounts/org_home.html",
        {
            "review_queue": review_queue_for(organization=organization, user=request.user)
            if membership.can_review
            else None,
            "datasets": datasets_of(organization=organization)[:10],
            "jobs": Job.objects.filter(organization=organization)[:10],
            "members": organization.memberships.select_related("user"),
            "help_topic": "start",
        },
    )
