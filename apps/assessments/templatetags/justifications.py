"""``{% justification_table assessment editable %}``: Step 7's table of altered variables,
their ISO/IEC 20889 class and the analyst's justification (a form while the version is a
draft)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.assessments.justifications import justification_rows, release_transformations
from apps.assessments.models import Assessment

register = template.Library()


@register.inclusion_tag("assessments/_justifications.html", takes_context=True)
def justification_table(
    context: dict[str, Any], assessment: Assessment, editable: bool
) -> dict[str, Any]:
    applied = assessment.apply_result
    return {
        "assessment": assessment,
        "editable": editable,
        "rows": justification_rows(applied, assessment.variable_justifications),
        "release_rows": release_transformations(applied),
        "csrf_token": context.get("csrf_token"),
        "current_organization": context.get("current_organization"),
    }
