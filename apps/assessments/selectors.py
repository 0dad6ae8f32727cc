"""Reads for an assessment: the derived Step 6 figures, the target of Step 7, and the columns
of the data set's roles (quasi-identifiers, sensitive)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.http import Http404

from apps.accounts.models import Organization
from apps.assessments.models import Assessment
from apps.classification.models import Variable
from apps.engine import context as engine_context
from apps.engine.criteria import size_for_risk
from apps.engine.risk import DEFAULT_STRICT_AVERAGE_CAP


def assessments_of(*, organization: Organization) -> QuerySet[Assessment]:
    return Assessment.objects.filter(organization=organization).select_related("dataset")


def assessments_listed(*, organization: Organization) -> QuerySet[Assessment]:
    """The assessments of the list page, newest first, with only the fields a row shows (not
    the search results, measures and answers each keeps as JSON)."""
    return (
        Assessment.objects.filter(organization=organization)
        .select_related("dataset")
        .only(
            "id", "organization", "title", "release_model", "status", "created_at",
            "updated_at", "dataset__id", "dataset__name",
        )
    )  # fmt: skip


def assessment_get(*, organization: Organization, assessment_id: UUID | str) -> Assessment:
    assessment = assessments_of(organization=organization).filter(id=assessment_id).first()
    if assessment is None:
        raise Http404("No such assessment.")
    return assessment


def data_risk_of(result: dict[str, Any] | None, release_model: str) -> float | None:
    """The release-model rule (IPC step 4): max risk for public and semi-public releases,
    strict average risk for non-public ones."""
    if not result:
        return None
    key = "strict_average_risk" if release_model == "non_public" else "max_risk"
    return float(result[key])


def overall_risk(assessment: Assessment) -> dict[str, Any] | None:
    """Step 6 from Steps 3, 4 and 5: data × context against the threshold, and the data-risk
    target Step 7 must reach (threshold / context, and for non-public the strict-average cap)."""
    if not (assessment.threshold_result and assessment.context_result):
        return None
    model = assessment.effective_release_model
    threshold = float(assessment.threshold_result["value"])
    context = float(assessment.context_result["value"])
    target = engine_context.data_risk_target(threshold, context)
    data_risk = data_risk_of(assessment.risk_result, model)
    result: dict[str, Any] = {
        "release_model": model,
        "risk_unit": (assessment.risk_result or {}).get("unit", "record"),
        "threshold": threshold,
        "context_risk": context,
        "data_risk_target": target,
        "risk_measure": "strict average risk" if model == "non_public" else "max risk",
        "target_class_size": size_for_risk(target) if model != "non_public" else None,
        "strict_average_cap": DEFAULT_STRICT_AVERAGE_CAP if model == "non_public" else None,
        "data_risk": data_risk,
        "value": None,
        "passes": None,
        "explanation": "",
    }
    if data_risk is not None:
        overall = engine_context.overall_risk(data_risk, context, threshold)
        result.update(value=overall.value, passes=overall.passes, explanation=overall.explanation)
    return result


def quasi_identifiers(assessment: Assessment) -> list[str]:
    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="quasi")
        .order_by("position")
        .values_list("name", flat=True)
    )


def sensitive_columns(assessment: Assessment) -> list[str]:
    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="sensitive")
        .order_by("position")
        .values_list("name", flat=True)
    )
