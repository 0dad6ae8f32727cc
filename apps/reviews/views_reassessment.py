"""The release registry's re-assessment: which releases are due (with a filter), the
triggers recorded against a release, and its interval (issue 28)."""

from __future__ import annotations

import datetime as dt
from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from apps.accounts.decorators import membership_of, org_view, user_of
from apps.accounts.models import Organization
from apps.core.errors import ApplicationError
from apps.reviews.models import ReassessmentTrigger, ReleaseRecord
from apps.reviews.reassessment import (
    FILTERS,
    REASSESSMENT_MONTHS,
    registry_rows,
    release_interval_set,
    trigger_record,
    trigger_resolve,
)


@org_view()
def release_registry(request: HttpRequest, organization: Organization) -> HttpResponse:
    show = request.GET.get("show", "all")
    if show not in FILTERS:
        show = "all"
    membership = membership_of(request)
    return render(
        request,
        "reviews/registry.html",
        {
            "rows": registry_rows(organization=organization, show=show),
            "show": show,
            "today": timezone.localdate(),
            "kinds": ReassessmentTrigger.Kind.choices,
            "defaults": REASSESSMENT_MONTHS,
            "can_record": membership.can_edit or membership.can_review,
            "help_topic": "reviews",
        },
    )


def _record(organization: Organization, release_id: UUID) -> ReleaseRecord:
    record = (
        ReleaseRecord.objects.filter(organization=organization, id=release_id)
        .select_related("assessment", "organization")
        .first()
    )
    if record is None:
        raise Http404("No such release.")
    return record


@org_view()
def release_reassessment(
    request: HttpRequest, organization: Organization, release_id: UUID
) -> HttpResponse:
    """POST ``action``: "trigger" (kind, occurred_on, note), "resolve" (trigger, note) or
    "interval" (months); back to the registry."""
    record = _record(organization, release_id)
    if request.method == "POST":
        action = request.POST.get("action", "")
        user = user_of(request)
        try:
            if action == "trigger":
                trigger_record(
                    record=record,
                    user=user,
                    kind=request.POST.get("kind", ""),
                    occurred_on=dt.date.fromisoformat(request.POST.get("occurred_on", "")),
                    note=request.POST.get("note", ""),
                )
                messages.success(request, "Re-assessment trigger recorded.")
            elif action == "resolve":
                trigger_id = request.POST.get("trigger", "")
                trigger = (
                    ReassessmentTrigger.objects.filter(release=record, id=UUID(trigger_id)).first()
                    if trigger_id
                    else None
                )
                if trigger is None:
                    raise ApplicationError("No such trigger on this release.")
                trigger_resolve(trigger=trigger, user=user, note=request.POST.get("note", ""))
                messages.success(request, "Trigger resolved.")
            elif action == "interval":
                release_interval_set(
                    record=record, user=user, months=int(request.POST.get("months", ""))
                )
                messages.success(request, "Re-assessment interval saved.")
            else:
                raise ApplicationError("Unknown action.")
        except ValueError:
            messages.error(
                request, "Give the date as YYYY-MM-DD and the interval as a whole number of months."
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
    return redirect("release-registry", org=organization.slug)
