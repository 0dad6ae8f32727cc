"""Several rows per person (issue 25; LONGITUDINAL.md, whose opening box decides).

A data set with several rows per person (visits, claims, prescriptions) is one long table
with a person column. Step 2 declares that column the *person key* — a direct identifier,
released only as a keyed pseudonym like the other direct identifiers — and classifies
each quasi-identifier *person-level* (one value per person: sex, birth year) or
*event-level* (may change from row to row: diagnosis, admission date). Step 4 then counts
risk in persons, never rows, with the engine's strict per-person count
(``apps.engine.longitudinal``: k^m-anonymity with m = the adversary power p inside each
person-level class), exactly or not at all.

This module holds the rules of that declaration (:func:`assessment_set_persons`), what
Step 2 shows about it (:func:`persons_state`: suggested levels, the warning when a file
looks longitudinal but no person is declared, from ``person_hints``), the levels as Step 4
and Step 7 read them (:func:`data_levels`; the Step 4 measure is ``person_risk``), the
guard of what Step 7 cannot do per person (:func:`refuse_longitudinal_deidentify`) and the
one that keeps such data from the record-level search (:func:`refuse_row_search`).

Values of the data are never shown here: a person-level column that varies within a
person is refused naming the column and the persons by their row numbers in the data
set, never by their key or by any value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments.configuration import DeidConfig
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment
from apps.assessments.person_hints import longitudinal_hints
from apps.assessments.person_tables import check_structure, structure_levels
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.services import _save, risk_input_save
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.errors import EngineError
from apps.engine.longitudinal import ALL, parse_power, suggest_levels
from apps.engine.longitudinal.formulas import MAX_POWER
from apps.engine.reading import read_table

Level = Literal["person", "event"]
LEVELS: tuple[Level, ...] = ("person", "event")
LEVEL_LABELS = {
    "person": "Person-level (one value per person)",
    "event": "Event-level (may change from row to row)",
}

#: Adversary powers offered (LONGITUDINAL.md §2.9): 1 to 10 events, or all of them.
POWER_CHOICES: tuple[str, ...] = (*(str(p) for p in range(1, MAX_POWER + 1)), ALL)
DEFAULT_POWER = "3"
#: Target of "persons at risk" before Steps 3 and 5 give one (ARX's default, as the CLI).
DEFAULT_AT_RISK_TARGET = 0.2

#: How many varying persons a refusal names (by their row numbers), and rows per person.
EXAMPLE_PERSONS = 3
EXAMPLE_ROWS = 4

STEP7_REFUSAL = "Data with several rows per person cannot be de-identified with"


# --------------------------------------------------------------------------- reading data


def _columns(assessment: Assessment) -> list[str]:

    return list(
        Variable.objects.filter(dataset=assessment.dataset)
        .order_by("position")
        .values_list("name", flat=True)
    )


def _read(assessment: Assessment, columns: Sequence[str]) -> pl.DataFrame:

    with local_path(assessment.dataset.parquet_path) as path:
        return read_table(path).select(list(dict.fromkeys(columns))).collect()


def _check_key(frame: pl.DataFrame, person_key: str) -> None:
    missing = frame.get_column(person_key).null_count()
    if missing:
        raise ApplicationError(
            f"{missing:,} row(s) have no value in the person key '{person_key}': every row "
            "must name its person.",
            {"field": "person_key", "column": person_key},
        )


def varying_persons(
    frame: pl.DataFrame, person_key: str, column: str
) -> tuple[int, list[list[int]]]:
    """How many persons hold more than one value of ``column`` (a missing value counts as
    a value), and a few of them as the row numbers of their rows (1 = the first data row),
    in the order the persons first appear."""
    rows = frame.select(person_key, column).with_row_index("__row", offset=1)
    spread = (
        rows.group_by(person_key, maintain_order=True)
        .agg(pl.col(column).n_unique().alias("__values"), pl.col("__row").alias("__rows"))
        .filter(pl.col("__values") > 1)
    )
    examples = [
        [int(r) for r in rows_of[:EXAMPLE_ROWS]]
        for rows_of in spread.get_column("__rows").head(EXAMPLE_PERSONS).to_list()
    ]
    return spread.height, examples


def _rows_text(rows: list[int]) -> str:
    return "rows " + ", ".join(str(r) for r in rows) + ("…" if len(rows) >= EXAMPLE_ROWS else "")


def check_person_level(frame: pl.DataFrame, person_key: str, levels: Mapping[str, str]) -> None:
    """Refuse a person-level column whose value changes within a person (LONGITUDINAL.md
    §1), naming the column and a few such persons by their row numbers."""
    for column, level in levels.items():
        if level != "person":
            continue
        count, examples = varying_persons(frame, person_key, column)
        if count:
            shown = "; ".join(f"the person on {_rows_text(rows)}" for rows in examples)
            raise ApplicationError(
                f"'{column}' is marked person-level, but its value changes within "
                f"{count:,} person(s) ({shown}{'; …' if count > len(examples) else ''}). "
                "Mark it event-level, or correct the data.",
                {
                    "field": "levels",
                    "column": column,
                    "varying_persons": count,
                    "example_rows": examples,
                },
            )


# --------------------------------------------------------------------------- Step 2


def _quasi(assessment: Assessment) -> list[str]:

    return quasi_identifiers(assessment)


def key_candidates(assessment: Assessment) -> list[str]:

    return list(
        Variable.objects.filter(dataset=assessment.dataset, role="direct")
        .order_by("position")
        .values_list("name", flat=True)
    )


def suggested_levels(
    frame: pl.DataFrame,
    person_key: str,
    quasi: Sequence[str],
    structure: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each quasi-identifier's level as the data suggests it: person-level when constant
    within every person, else event-level (with how many persons it varies within). On
    linked tables (``structure``) the table a column came from decides."""
    try:
        found = suggest_levels(frame, person=person_key, columns=list(quasi))
    except EngineError as exc:
        raise ApplicationError(str(exc), {"field": "person_key"}) from None
    fixed = structure_levels(structure, quasi)
    return [
        {
            **s.to_dict(),
            **({"level": fixed[s.column], "from_tables": True} if s.column in fixed else {}),
        }
        for s in found
    ]


def effective_levels(
    stored: Mapping[str, str], quasi: Sequence[str], suggestions: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """The level of every current quasi-identifier: as stored, else as suggested (a
    quasi-identifier confirmed after the levels were saved takes the suggestion)."""
    suggested = {str(s["column"]): str(s["level"]) for s in suggestions}
    return {q: str(stored.get(q) or suggested.get(q) or "event") for q in quasi}


def persons_state(
    assessment: Assessment, *, person_key: str | None = None, suggest: bool = True
) -> dict[str, Any]:
    """What Step 2 shows about persons: the key, the levels (stored, or suggested), the
    suggestions, the candidate keys and the warning when the file looks longitudinal but
    no person is declared. ``person_key`` shows the suggestions for another key; without
    ``suggest`` the data is not read (the levels are then the stored ones)."""
    key = assessment.person_key if person_key is None else person_key
    quasi = _quasi(assessment)
    suggestions: list[dict[str, Any]] = []
    if suggest and key and key in _columns(assessment):
        frame = _read(assessment, [key, *quasi])
        if frame.get_column(key).null_count() == 0:
            suggestions = suggested_levels(frame, key, quasi, assessment.dataset.table_structure)
    stored = assessment.person_levels if key == assessment.person_key else {}
    hints = [] if assessment.person_key else longitudinal_hints(assessment)
    if not key:
        levels: dict[str, str] = {}
    elif suggest:
        levels = effective_levels(stored, quasi, suggestions)
    else:
        levels = {q: str(stored[q]) for q in quasi if q in stored}
    return {
        "person_key": key,
        "levels": levels,
        "suggestions": suggestions,
        "candidates": key_candidates(assessment),
        "looks_longitudinal": hints,
        "adversary_power": assessment.adversary_power,
    }


def data_levels(
    assessment: Assessment, extra: Sequence[str] = ()
) -> tuple[pl.DataFrame, dict[str, str]]:
    """The person key, the quasi-identifiers and ``extra`` columns read, and each
    quasi-identifier's level (stored, else suggested), after the checks of Step 2: a
    value in the key on every row, person-level columns constant within a person."""
    key = assessment.person_key
    quasi = _quasi(assessment)
    frame = _read(assessment, [key, *quasi, *(c for c in extra if c in _columns(assessment))])
    _check_key(frame, key)
    structure = assessment.dataset.table_structure
    levels = effective_levels(
        assessment.person_levels, quasi, suggested_levels(frame, key, quasi, structure)
    )
    check_person_level(frame, key, levels)
    return frame, levels


@transaction.atomic
def assessment_set_persons(
    *,
    assessment: Assessment,
    user: User | None = None,
    person_key: str,
    levels: Mapping[str, str] | None = None,
) -> list[str]:
    """Step 2: declare the person key (or none: one row per person) and each
    quasi-identifier's level. Levels not given are taken from the data's suggestion.

    The key must be a column classified as a direct identifier (it is released only as a
    keyed pseudonym) with a value on every row; a person-level column must be constant
    within every person. Changing either makes the data risk stale."""

    assessment_editable(assessment)
    person_key = person_key.strip()
    levels = dict(levels or {})
    if not person_key:
        if levels:
            raise ApplicationError(
                "Levels need a person key: declare the column that names the person first.",
                {"field": "person_key"},
            )
        assessment.person_key = ""
        assessment.person_levels = {}
        return _save(assessment, "classification", ["person_key", "person_levels"], user)
    if person_key not in _columns(assessment):
        raise ApplicationError(
            f"'{person_key}' is not a column of the data set.", {"field": "person_key"}
        )
    check_structure(assessment.dataset.table_structure, person_key, {})
    if person_key not in key_candidates(assessment):
        raise ApplicationError(
            f"Classify '{person_key}' as a direct identifier in Step 2 first: the person key "
            "names people and leaves the release only as a keyed pseudonym.",
            {"field": "person_key", "column": person_key},
        )
    quasi = _quasi(assessment)
    unknown = sorted(set(levels) - set(quasi))
    if unknown:
        raise ApplicationError(
            f"Not a confirmed quasi-identifier: {', '.join(unknown)}. Levels are given to "
            "quasi-identifiers only.",
            {"field": "levels", "columns": unknown},
        )
    wrong = sorted(c for c, level in levels.items() if level not in LEVELS)
    if wrong:
        raise ApplicationError(
            f"The level of {', '.join(wrong)} must be 'person' or 'event'.",
            {"field": "levels", "columns": wrong},
        )
    frame = _read(assessment, [person_key, *quasi])
    _check_key(frame, person_key)
    structure = assessment.dataset.table_structure
    chosen = effective_levels(levels, quasi, suggested_levels(frame, person_key, quasi, structure))
    check_structure(structure, person_key, chosen)
    check_person_level(frame, person_key, chosen)
    assessment.person_key = person_key
    assessment.person_levels = chosen
    return _save(assessment, "classification", ["person_key", "person_levels"], user)


@transaction.atomic
def assessment_set_power(
    *, assessment: Assessment, user: User | None = None, power: str
) -> list[str]:
    """Step 4: the adversary power (events of a person an adversary knows: 1–10 or all).
    A change makes the measured data risk stale."""

    assessment_editable(assessment)
    try:
        value = str(parse_power(power))
    except EngineError as exc:
        raise ApplicationError(
            str(exc)[:1].upper() + str(exc)[1:] + ".", {"field": "power"}
        ) from None
    if value == assessment.adversary_power:
        return []
    return risk_input_save(
        assessment,
        field="adversary_power",
        value=value,
        action="assessment.adversary_power",
        user=user,
    )


# --------------------------------------------------------------------------- Step 7


def refuse_longitudinal_deidentify(assessment: Assessment) -> None:
    """The one guard Step 7's search and apply on person-keyed data go through: what
    cannot work per person is refused, naming it. The further techniques (local
    suppression, rounding, noise, swapping, PRAM, microaggregation) and the privacy models
    on sensitive variables act on records, and their figures would count a person with
    three visits as three people; the information-loss metrics other than ``loss`` are not
    computed over persons and events. The person key must still be a direct identifier
    (it leaves the release only as a keyed pseudonym)."""
    key = assessment.person_key
    if not key:
        return
    if key not in key_candidates(assessment):
        raise ApplicationError(
            f"The person key '{key}' is no longer classified as a direct identifier: "
            "classify it so again, or declare another key, in Step 2.",
            {"step": "classification", "person_key": key},
            status=409,
        )
    config = DeidConfig.from_json(assessment.deid_config)
    unsupported = []
    if config.techniques:
        names = ", ".join(dict.fromkeys(t.technique.replace("_", " ") for t in config.techniques))
        unsupported.append(f"the further techniques ({names}), which act on records")
    if config.privacy_models:
        columns = ", ".join(m.column for m in config.privacy_models)
        unsupported.append(f"the privacy models on {columns}, which are checked on records")
    if config.metric != "loss":
        unsupported.append(
            f"the '{config.metric}' metric (the search over persons minimizes the "
            "information loss, 'loss')"
        )
    if unsupported:
        raise ApplicationError(
            f"{STEP7_REFUSAL}: {'; '.join(unsupported)}. Remove them in Step 7 (the person "
            f"key is '{key}').",
            {"step": "deidentify", "person_key": key},
            status=409,
        )


def refuse_row_search(assessment: Assessment) -> None:
    """The record-level search and apply never run on person-keyed data: they would count
    a person with three visits as three people (the jobs dispatch such data to
    ``apps.assessments.longitudinal_search`` and ``longitudinal_release``)."""
    if assessment.person_key:
        raise ApplicationError(
            "Data with several rows per person is searched and written in persons, not "
            f"records (the person key is '{assessment.person_key}').",
            {"step": "deidentify", "person_key": assessment.person_key},
            status=409,
        )
