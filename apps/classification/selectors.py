"""Reads for Step 2: the variables of a data set, their history, and the method's warnings."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.classification.detectors import EXAMPLE_PREFIX, classification_warnings
from apps.classification.models import ClassificationChange, Variable
from apps.datasets.models import Dataset


def variables_of(*, dataset: Dataset) -> QuerySet[Variable]:
    return Variable.objects.filter(dataset=dataset).order_by("position")


def suggestion_evidence_shown(*, variable: Variable, raw_values: bool) -> list[str]:
    """The evidence behind a suggestion as this member may read it: the masked examples of
    free text are sampled values (whatever the detectors missed is left as written), so
    members who may not see raw values (reviewers) get the counts without the examples."""
    evidence = [str(line) for line in variable.suggestion_evidence or []]
    if raw_values:
        return evidence
    return [line for line in evidence if not line.startswith(EXAMPLE_PREFIX)]


def _to_decide(variables: list[Variable]) -> list[str]:
    return [v.name for v in variables if not v.role and not v.confident_suggestion]


def variables_to_decide(*, dataset: Dataset) -> list[str]:
    """Unconfirmed columns bulk accept leaves alone (low confidence, or free text left in the
    release): a person decides each, with a reason."""
    return _to_decide(list(variables_of(dataset=dataset)))


def classification_changes_of(*, dataset: Dataset) -> QuerySet[ClassificationChange]:
    return (
        ClassificationChange.objects.filter(variable__dataset=dataset)
        .select_related("variable", "changed_by")
        .order_by("-created_at")
    )


def classification_status(
    *, dataset: Dataset, release_model: str | None = None
) -> dict[str, object]:
    variables = list(variables_of(dataset=dataset))
    roles = {v.name: (v.role or v.suggested_role) for v in variables}
    confirmed = {v.name: v.role for v in variables if v.role}
    keep = {v.name for v in variables if v.keep_for_analysis}
    warnings = classification_warnings(
        roles,
        release_model=release_model or dataset.intended_release_model or None,
        keep_for_analysis=keep,
    )
    counts: dict[str, int] = {}
    for role in confirmed.values():
        counts[role] = counts.get(role, 0) + 1
    return {
        "total": len(variables),
        "confirmed": len(confirmed),
        "complete": bool(variables) and len(confirmed) == len(variables),
        "counts": counts,
        "needs_review": [v.name for v in variables if v.needs_review and not v.role],
        "to_decide": _to_decide(variables),
        "warnings": warnings,
    }
