"""Step 7's form of justifications per altered variable (issue 28)."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse

from apps.accounts.decorators import org_view, user_of
from apps.accounts.models import Organization
from apps.assessments.justifications import missing_justifications, variable_justifications_set
from apps.assessments.selectors import assessment_get
from apps.assessments.views_base import _go
from apps.core.errors import ApplicationError


@org_view(edit=True)
def justifications_save(
    request: HttpRequest, organization: Organization, assessment_id: UUID
) -> HttpResponse:
    """POST ``column``/``justification`` pairs (in the table's order); back to Step 7."""
    assessment = assessment_get(organization=organization, assessment_id=assessment_id)
    if request.method == "POST":
        columns = request.POST.getlist("column")
        texts = request.POST.getlist("justification")
        try:
            if len(columns) != len(texts):
                raise ApplicationError("Every variable needs its own justification field.")
            variable_justifications_set(
                assessment=assessment,
                user=user_of(request),
                justifications=dict(zip(columns, texts, strict=True)),
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
        else:
            missing = missing_justifications(assessment)
            if missing:
                messages.warning(
                    request, f"Justifications saved; still missing for: {', '.join(missing)}."
                )
            else:
                messages.success(request, "Justifications saved for every altered variable.")
    return _go(organization, assessment, "deidentify")
