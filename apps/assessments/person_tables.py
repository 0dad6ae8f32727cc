"""Steps 2 and 4 on a data set uploaded as a person table and event tables (issue 25).

Such a data set is stored as one long table (``apps.datasets.tables``), so Step 2 and
Step 4 read it as they read any long table with a person column. Its recorded structure
adds three things, all here:

* the person key is the column that linked the tables, and each quasi-identifier's level
  is fixed by the table it came from — a person-table column is person-level, an
  event-table column event-level (:func:`structure_levels`, :func:`check_structure`);
* a file uploaded this way is longitudinal by construction: until the key is declared,
  Step 2 warns as it does for a long table whose identifier repeats
  (:func:`structure_hints`);
* Step 4, Step 7's search and the release's re-measure rebuild the person table and each
  event table from the long table's recorded rows (:func:`longitudinal_data`; a
  release's kept rows through :func:`linked_data`), so a person without events has no
  events — not one event with empty values — and the events of different tables stay
  different kinds of event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from apps.core.errors import ApplicationError
from apps.datasets.tables import (
    EVENT,
    PERSON,
    event_tables,
    is_multi_table,
    table_of_column,
)
from apps.engine.longitudinal import from_long_table
from apps.engine.longitudinal.data import EventTable, LongitudinalData, from_tables


def structure_levels(structure: Mapping[str, Any] | None, quasi: Sequence[str]) -> dict[str, str]:
    """Each quasi-identifier's level as the tables fix it ({} for a single table)."""
    if not is_multi_table(dict(structure or {})):
        return {}
    where = table_of_column(dict(structure or {}))
    return {q: where[q] for q in quasi if q in where}


def _table_of(structure: Mapping[str, Any], column: str) -> str:
    for table in structure.get("tables", []):
        own = table["columns"] if table["role"] == PERSON else table["event_columns"]
        if column in own:
            return str(table["name"])
    return "?"


def check_structure(
    structure: Mapping[str, Any] | None, person_key: str, levels: Mapping[str, str]
) -> None:
    """On a data set of linked tables: the key is the one that linked them, and no level
    contradicts the table a column came from."""
    if not is_multi_table(dict(structure or {})):
        return
    assert structure is not None
    key = str(structure["person_key"])
    if person_key != key:
        raise ApplicationError(
            f"This data set's tables were linked by '{key}': it is the person key.",
            {"field": "person_key", "column": key},
        )
    fixed = structure_levels(structure, list(levels))
    for column, level in levels.items():
        if column in fixed and fixed[column] != level:
            kind = "person table" if fixed[column] == PERSON else "event table"
            raise ApplicationError(
                f"'{column}' comes from the {kind} '{_table_of(structure, column)}': it is "
                f"{fixed[column]}-level in this data set.",
                {"field": "levels", "column": column},
            )


def structure_hints(structure: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The warning's entry for a data set of linked tables whose key is not declared yet."""
    if not is_multi_table(dict(structure or {})):
        return []
    assert structure is not None
    rows, persons = int(structure["rows"]), int(structure["persons"])
    return [
        {
            "column": structure["person_key"],
            "rows": rows,
            "distinct": persons,
            "rows_per_value": round(rows / persons, 2) if persons else 0.0,
            "tables": [t["name"] for t in structure["tables"]],
        }
    ]


def table_facts(structure: Mapping[str, Any] | None) -> dict[str, Any]:
    """What Step 4's result records of linked tables (nothing for a single table)."""
    if not is_multi_table(dict(structure or {})):
        return {}
    assert structure is not None
    return {
        "tables": [
            {"name": t["name"], "role": t["role"], "rows": t["rows"]} for t in structure["tables"]
        ],
        "persons_without_events": int(structure["persons_without_events"]),
    }


def row_tables(structure: Mapping[str, Any] | None, height: int) -> pl.Series | None:
    """Each long-table row's event table (its name; None for the row of a person without
    events), from the recorded rows; None for a single table. ``height`` is the long
    table's, checked against the recorded one."""
    if not is_multi_table(dict(structure or {})):
        return None
    assert structure is not None
    if height != int(structure["rows"]):
        raise ApplicationError(
            f"The data set's file has {height:,} rows where its tables recorded "
            f"{int(structure['rows']):,}: it was changed since it was uploaded."
        )
    names: list[str | None] = [None] * height
    for table in event_tables(dict(structure)):
        first = int(table["first_row"]) - 1
        names[first : first + int(table["rows"])] = [str(table["name"])] * int(table["rows"])
    return pl.Series("__table", names, dtype=pl.String)


def linked_data(
    structure: Mapping[str, Any],
    frame: pl.DataFrame,
    tables: pl.Series,
    *,
    person: str,
    person_quasi: Sequence[str],
    event_quasi: Sequence[str],
) -> LongitudinalData:
    """The persons and their events of linked tables from rows of their long table (all of
    them, or a release's), ``tables`` naming each row's event table (None: the row of a
    person without events, who is a person with no event)."""
    people = frame.select(person, *person_quasi).unique(
        subset=[person], keep="first", maintain_order=True
    )
    events = []
    for table in event_tables(dict(structure)):
        quasi = tuple(q for q in event_quasi if q in table["event_columns"])
        events.append(
            EventTable(
                name=str(table["name"]),
                data=frame.filter(tables.eq_missing(str(table["name"]))).select(person, *quasi),
                person=person,
                quasi=quasi,
            )
        )
    return from_tables(
        persons=people, person_key=person, person_quasi=list(person_quasi), events=events
    )


def longitudinal_data(
    structure: Mapping[str, Any] | None,
    frame: pl.DataFrame,
    *,
    person: str,
    person_quasi: Sequence[str],
    event_quasi: Sequence[str],
) -> LongitudinalData:
    """The persons and their events for Step 4's count and Step 7's search: from the long
    table as it is, or, for linked tables, from the tables the long table's recorded rows
    came from (:func:`linked_data`).

    ``frame`` holds the long table's rows in stored order (its person key and
    quasi-identifier columns at least)."""
    tables = row_tables(structure, frame.height)
    if tables is None:
        return from_long_table(
            frame, person=person, person_quasi=person_quasi, event_quasi=event_quasi
        )
    assert structure is not None
    check_structure(
        structure,
        person,
        {**dict.fromkeys(person_quasi, PERSON), **dict.fromkeys(event_quasi, EVENT)},
    )
    return linked_data(
        structure,
        frame,
        tables,
        person=person,
        person_quasi=person_quasi,
        event_quasi=event_quasi,
    )
