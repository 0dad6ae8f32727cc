"""Step 7's release form on the page: choose it, set it, write the release (issue 28).
The fields are read into the mapping the API sends and parsed by the same parser
(``apps.assessments.release_forms.config.parse``, through the services)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.accounts.decorators import org_view, user_of
from apps.accounts.models import Organization
from apps.assessments.release_forms.services import release_form_save, release_form_start
from apps.assessments.selectors import assessment_get
from apps.assessments.views_base import _go
from apps.core.errors import ApplicationError


def release_form_data(post: Any) -> dict[str, Any]:
    """The page's fields as the API's mapping (text; the parser reads the numbers)."""
    return {
        "form": post.get("form", "microdata"),
        "synthetic": {
            "columns": post.getlist("synthetic-columns"),
            "secret": post.get("synthetic-secret", ""),
            "rows": post.get("synthetic-rows", ""),
            "control_share": post.get("synthetic-control_share", "0.2"),
        },
        "table": {
            "rows": post.get("table-rows", ""),
            "columns": post.get("table-columns", ""),
            "value": post.get("table-value", ""),
            "threshold": post.get("table-threshold", ""),
        },
    }


@require_POST
@org_view(edit=True)
def release_form_view(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    try:
        config = release_form_save(
            assessment=assessment, user=user_of(request), data=release_form_data(request.POST)
        )
        if request.POST.get("action") == "write":
            release_form_start(assessment=assessment, user=user_of(request))
            messages.success(request, f"Writing the release: {config.title.lower()}.")
        else:
            messages.success(request, f"Release form saved: {config.title.lower()}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return _go(organization, assessment, "deidentify")
