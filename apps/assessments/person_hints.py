"""The warning that a file looks longitudinal (issue 25; LONGITUDINAL.md's opening box):
Step 2 shows it while no person key is declared, from the column profiles it already holds
(the data is not read). A column whose Step 2 kind names one person (a chart or record
number, a health card, an e-mail address…) but whose values repeat on many rows most
likely names the same person on several rows; linked tables are longitudinal by
construction (``person_tables.structure_hints``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.assessments.models import Assessment
from apps.assessments.person_tables import structure_hints
from apps.classification.models import Variable
from apps.engine.longitudinal.data import LONGITUDINAL_RATIO

#: Kinds of column the Step 2 detectors recognize (``Variable.suggestion_kind``) whose
#: value belongs to one person: chart and record numbers, health card and insurance
#: numbers, e-mail addresses, telephone, account and licence numbers, user names, a
#: column named as an identifier whose values repeat ("shared_code"), near-unique values.
#: Names, addresses and free text are left out: different people share them.
PERSON_ID_KINDS = frozenset(
    {
        "record_number",
        "shared_code",
        "unique_values",
        "health_number",
        "sin",
        "ssn",
        "email",
        "phone",
        "account",
        "licence",
        "online_handle",
    }
)


@dataclass(frozen=True)
class IdentifierColumn:
    """What the warning rule reads of a column: its Step 2 kind and its profile's counts."""

    name: str
    kind: str
    rows: int  # rows of the data set
    missing: int
    distinct: int  # distinct non-missing values


def repeated_identifiers(columns: Sequence[IdentifierColumn]) -> list[dict[str, Any]]:
    """The columns that make a file look longitudinal: a column that looks like a person's
    identifier (its kind is in ``PERSON_ID_KINDS``) with far fewer distinct values than
    rows — at least two distinct values, and at most ``LONGITUDINAL_RATIO`` (80 %) of its
    non-missing values distinct, i.e. at least one row in five repeats a value seen
    before. Such a column most likely names the same person on several rows."""
    hints = []
    for column in columns:
        filled = column.rows - column.missing
        if column.kind not in PERSON_ID_KINDS or filled < 2 or column.distinct < 2:
            continue
        if column.distinct <= LONGITUDINAL_RATIO * filled:
            hints.append(
                {
                    "column": column.name,
                    "rows": filled,
                    "distinct": column.distinct,
                    "rows_per_value": round(filled / column.distinct, 2),
                }
            )
    return hints


def longitudinal_hints(assessment: Assessment) -> list[dict[str, Any]]:
    """The data set's columns that look like a repeated person identifier (from the
    profiles Step 2 already holds: the data is not read)."""

    tables = structure_hints(assessment.dataset.table_structure)
    if tables:  # linked tables: longitudinal by construction
        return tables
    rows = int(assessment.dataset.rows or 0)
    columns = [
        IdentifierColumn(
            name=v.name,
            kind=v.suggestion_kind,
            rows=rows,
            missing=int((v.profile or {}).get("missing") or 0),
            distinct=int((v.profile or {}).get("distinct") or 0),
        )
        for v in Variable.objects.filter(dataset=assessment.dataset).order_by("position")
    ]
    return repeated_identifiers(columns)
