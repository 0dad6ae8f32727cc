"""What the release alters, variable by variable, with each transformation's ISO/IEC 20889
class, and the analyst's justification of each altered variable (issue 28).

The EMA Policy 0070 anonymisation report (v1.5, 2025) asks for a justification of every
variable the anonymisation changed, and ISO/IEC 27559 for the class of each transformation
in ISO/IEC 20889's terms. ``altered_variables`` reads both from what Step 7 wrote
(``apply_result``): a direct identifier masked (``mask:<method>``), a quasi-identifier
generalized above its original level (``generalization``, or ``attribute_suppression`` at
the hierarchy's ``*`` level), a variable a further technique changed. Removing whole records
(``record_suppression``) alters no one variable: it is listed apart, for the release.

``justification_blockers`` is the submission's check (reviews' ``submission_blockers``):
every altered variable needs its justification, and the message names the missing ones.
The justifications are an assessment field, frozen with the version by the snapshot.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment
from apps.assessments.person_suppression import rows_suppressed
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.engine.techniques.iso20889 import iso_20889_class

MAX_JUSTIFICATION_CHARS = 4000


def _transformation(key: str, detail: str) -> dict[str, str]:
    iso = iso_20889_class(key)
    return {"key": key, "detail": detail, "iso_class": iso.label, "iso_category": iso.category}


def _is_top(label: str) -> bool:
    return label.strip() == "*" or label.strip().endswith("(*)")


def altered_variables(applied: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each variable the release alters, in the order Step 7 altered them: ``column`` and its
    ``transformations`` (``key``, ``detail``, ``iso_class`` label, ``iso_category``)."""
    applied = applied or {}
    rows: dict[str, list[dict[str, str]]] = {}
    for column, spec in (applied.get("masking") or {}).items():
        method = str((spec or {}).get("method") or "remove")
        rows.setdefault(column, []).append(
            _transformation(
                f"mask:{method}", f"direct identifier {label_for('masking_method', method)}"
            )
        )
    labels = applied.get("level_labels") or {}
    for column, level in (applied.get("levels") or {}).items():
        if not level:
            continue
        label = str(labels.get(column) or f"level {level}")
        key = "attribute_suppression" if _is_top(label) else "generalization"
        rows.setdefault(column, []).append(_transformation(key, f"level {level}: {label}"))
    for entry in applied.get("techniques") or []:
        key = str(entry.get("technique") or "")
        changed = list(entry.get("changed") or [])
        if not changed and entry.get("parameters", {}).get("column"):
            changed = [entry["parameters"]["column"]]
        for column in changed:
            rows.setdefault(column, []).append(_transformation(key, str(entry.get("title") or key)))
    return [{"column": column, "transformations": items} for column, items in rows.items()]


def release_transformations(applied: dict[str, Any] | None) -> list[dict[str, str]]:
    """The transformations of the release as a whole (records removed)."""
    suppressed = rows_suppressed(applied) or 0
    if not suppressed:
        return []
    return [_transformation("record_suppression", f"{suppressed:,} records removed")]


def justification_rows(
    applied: dict[str, Any] | None, justifications: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """``altered_variables`` with each variable's ``justification`` ("" when none)."""
    given = justifications or {}
    return [
        {**row, "justification": str(given.get(row["column"]) or "").strip()}
        for row in altered_variables(applied)
    ]


def missing_justifications(assessment: Assessment) -> list[str]:
    return [
        row["column"]
        for row in justification_rows(assessment.apply_result, assessment.variable_justifications)
        if not row["justification"]
    ]


def justification_blockers(assessment: Assessment) -> list[str]:
    """The submission's check: every variable the written release alters is justified."""
    if assessment.apply_result is None:
        return []
    missing = missing_justifications(assessment)
    if not missing:
        return []
    return [
        "Justify, in Step 7, why each altered variable was altered as it was (EMA Policy 0070 "
        f"anonymisation report); no justification is recorded for: {', '.join(missing)}."
    ]


@transaction.atomic
def variable_justifications_set(
    *, assessment: Assessment, user: User, justifications: dict[str, Any]
) -> dict[str, str]:
    """Record the justifications of altered variables (merged with those stored; an empty
    text removes one). A column the release does not alter is refused by name. Audited."""
    assessment_editable(assessment)
    locked = Assessment.objects.select_for_update().get(id=assessment.id)
    if not isinstance(justifications, dict):
        raise ApplicationError(
            "Send the justifications as an object of column → text.", {"field": "justifications"}
        )
    altered = {row["column"] for row in altered_variables(locked.apply_result)}
    unknown = sorted(str(c) for c in justifications if c not in altered)
    if unknown:
        raise ApplicationError(
            "Only a variable the written release alters is justified; these are not altered "
            f"by it: {', '.join(unknown)}.",
            {"field": "justifications", "columns": unknown},
        )
    stored = {c: t for c, t in (locked.variable_justifications or {}).items() if c in altered}
    for column, text in justifications.items():
        if not isinstance(text, str):
            raise ApplicationError(
                f"The justification of '{column}' must be text.", {"column": column}
            )
        text = text.strip()
        if len(text) > MAX_JUSTIFICATION_CHARS:
            raise ApplicationError(
                f"The justification of '{column}' is longer than {MAX_JUSTIFICATION_CHARS} "
                "characters.",
                {"column": column},
            )
        if text:
            stored[column] = text
        else:
            stored.pop(column, None)
    locked.variable_justifications = stored
    locked.save(update_fields=["variable_justifications", "updated_at"])
    assessment.variable_justifications = stored
    audit_record(
        organization=locked.organization,
        actor=user,
        action="assessment.justifications",
        obj=locked,
        details={"columns": sorted(justifications), "version": locked.version},
    )
    return stored


__all__ = [
    "altered_variables",
    "justification_blockers",
    "justification_rows",
    "missing_justifications",
    "release_transformations",
    "variable_justifications_set",
]
