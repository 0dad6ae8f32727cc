"""Test helper: justify every variable the written release alters (required before a
submission since issue 28), in words the tests can find in the reports."""

from __future__ import annotations

from apps.assessments.justifications import altered_variables, variable_justifications_set


def justification_text(column: str) -> str:
    return f"The analysis of {column} needs no finer detail than the release keeps."


def justify_all(assessment):  # type: ignore[no-untyped-def]
    assessment.refresh_from_db()
    columns = [row["column"] for row in altered_variables(assessment.apply_result)]
    if columns:
        variable_justifications_set(
            assessment=assessment,
            user=assessment.created_by,
            justifications={c: justification_text(c) for c in columns},
        )
    assessment.refresh_from_db()
    return assessment
