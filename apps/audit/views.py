from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.decorators import org_view
from apps.accounts.models import Organization
from apps.audit.forms import AuditFilterForm
from apps.audit.selectors import audit_actions, audit_events
from apps.audit.services import audit_key_is_public, audit_verify
from apps.core.pagination import list_page


@org_view(review=True)
def audit_list(request: HttpRequest, organization: Organization) -> HttpResponse:
    """The organization's audit trail, newest first, for reviewers and administrators."""
    form = AuditFilterForm(
        request.GET or None, recorded_actions=audit_actions(organization=organization)
    )
    filters: dict[str, Any] = {}
    if form.is_bound:
        form.is_valid()  # a field that does not validate is left out of cleaned_data
        filters = form.cleaned_data
    events = audit_events(
        organization=organization,
        action=filters.get("action") or None,
        actor=filters.get("actor") or None,
        object_id=filters.get("object_id") or None,
        since=filters.get("since"),
        until=filters.get("until"),
        q=filters.get("q") or None,
    )
    page = list_page(request, events)
    # Verifying reads and hashes every event of the organization on every view: fine for
    # thousands of events, not for millions. Then run it in a job (or the nightly
    # `manage.py audit_verify`) and show the last result here instead.
    verification = audit_verify(organization=organization)
    return render(
        request,
        "audit/list.html",
        {
            "form": form,
            "page": page,
            "verification": verification,
            "audit_key_public": audit_key_is_public(),
            "help_topic": "audit",
        },
    )
