"""A person table and event tables, linked by a person key, joined into one long view
(issue 25; LONGITUDINAL.md §1, shape (a)).

A custodian's longitudinal data often comes as a person table (one row per person: the
key, sex, birth year…) and one or more event tables (visits, prescriptions: the key and
the event's columns). They are uploaded together and checked here before anything is
stored as the data set:

* every table has the person key, and every row a value in it;
* the person table has one row per person (a repeated key is refused);
* every event names a person of the person table (an *orphan* event is refused);
* a person-table column repeated in an event table gives the person's one value on
  every event (a person-level column that varies within a person is refused).

Refusals name the table, the column and the persons — by their row numbers in the table
(1 = the first data row), never by their key or by any value, as Step 2 does.

**Design (the least invasive one).** The tables are joined once, at ingest, into one long
table — one row per event with its person's columns, then one row for each person
without events (event columns empty) — and that long table is the data set's Parquet
file. Everything that reads a data set (profiling, Step 2's roles and suggestions, the
previews, the single-table paths) reads it unchanged. What the long table cannot say by
itself is kept in ``Dataset.table_structure``: the key, each table's name, role, digest,
rows, columns and profile, and which rows of the long table are the events of which
table (``first_row``, ``rows``) — so Step 4 counts persons without events as persons
with no events, not as persons with one empty event (``apps.assessments.person_tables``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from apps.core.errors import ApplicationError

PERSON = "person"
EVENT = "event"
MAX_EVENT_TABLES = 10
#: How many persons a refusal names (by row numbers), and rows per person.
EXAMPLES = 3
EXAMPLE_ROWS = 4
_ROW = "__row"


@dataclass(frozen=True)
class Table:
    """One uploaded table, read: its file name (how refusals name it) and its rows."""

    name: str
    frame: pl.DataFrame


def _rows_text(rows: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in rows[:EXAMPLE_ROWS])
    return (
        ("row " if len(rows) == 1 else "rows ") + shown + ("…" if len(rows) > EXAMPLE_ROWS else "")
    )


def _groups_text(groups: Sequence[Sequence[int]], count: int) -> str:
    text = "; ".join(_rows_text(g) for g in groups[:EXAMPLES])
    return text + ("; …" if count > len(groups[:EXAMPLES]) else "")


def _key_text(table: Table, key: str) -> pl.DataFrame:
    """The table with its row numbers and its key as text (types differ between files)."""
    return table.frame.with_row_index(_ROW, offset=1).with_columns(pl.col(key).cast(pl.String))


def check_tables(persons: Table, events: Sequence[Table], key: str) -> None:
    """Refuse tables that cannot be joined into one person's rows (see the module)."""
    if not events:
        raise ApplicationError("Give at least one event table.", {"field": "events"})
    if len(events) > MAX_EVENT_TABLES:
        raise ApplicationError(
            f"At most {MAX_EVENT_TABLES} event tables are uploaded together.", {"field": "events"}
        )
    names = [persons.name, *(t.name for t in events)]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ApplicationError(
            f"Two tables have the same file name ({', '.join(repeated)}): rename one.",
            {"field": "events", "tables": repeated},
        )
    for table in (persons, *events):
        if key not in table.frame.columns:
            raise ApplicationError(
                f"'{table.name}' has no column '{key}', the person key that links the tables.",
                {"field": "person_key", "table": table.name, "column": key},
            )
        missing = table.frame.get_column(key).is_null()
        if missing.any():
            rows = [i + 1 for i in missing.arg_true().to_list()]
            raise ApplicationError(
                f"{len(rows):,} row(s) of '{table.name}' have no value in the person key "
                f"'{key}' ({_rows_text(rows)}): every row must name its person.",
                {"field": "person_key", "table": table.name, "column": key, "rows": rows[:10]},
            )
    people = _key_text(persons, key)
    duplicated = (
        people.group_by(key, maintain_order=True)
        .agg(pl.col(_ROW))
        .filter(pl.col(_ROW).list.len() > 1)
        .get_column(_ROW)
        .to_list()
    )
    if duplicated:
        raise ApplicationError(
            f"The person table '{persons.name}' has several rows for {len(duplicated):,} "
            f"person(s) in '{key}' ({_groups_text(duplicated, len(duplicated))}): a person "
            "table has one row per person.",
            {
                "field": "persons",
                "table": persons.name,
                "column": key,
                "duplicate_persons": len(duplicated),
                "example_rows": duplicated[:EXAMPLES],
            },
        )
    known = people.get_column(key).implode()
    person_columns = [c for c in persons.frame.columns if c != key]
    for table in events:
        numbered = _key_text(table, key)
        orphans = (
            numbered.filter(~pl.col(key).is_in(known))
            .group_by(key, maintain_order=True)
            .agg(pl.col(_ROW))
            .get_column(_ROW)
            .to_list()
        )
        if orphans:
            events_count = sum(len(g) for g in orphans)
            raise ApplicationError(
                f"'{table.name}': {events_count:,} event row(s) of {len(orphans):,} person(s) "
                f"name a person whose '{key}' is not in the person table '{persons.name}' "
                f"({_groups_text(orphans, len(orphans))}). Add those persons to the person "
                "table, or remove their events.",
                {
                    "field": "events",
                    "table": table.name,
                    "column": key,
                    "orphan_persons": len(orphans),
                    "orphan_events": events_count,
                    "example_rows": orphans[:EXAMPLES],
                },
            )
        for column in (c for c in person_columns if c in table.frame.columns):
            _check_person_level(people, numbered, key, column, table.name, persons.name)


def _check_person_level(
    people: pl.DataFrame, rows: pl.DataFrame, key: str, column: str, table: str, person_table: str
) -> None:
    """A person table's column repeated in an event table must give the person's value on
    every event (a missing value is a value)."""
    person_values = people.select(key, pl.col(column).cast(pl.String).alias("__person"))
    differing = (
        rows.select(key, _ROW, pl.col(column).cast(pl.String).alias("__event"))
        .join(person_values, on=key, how="left", maintain_order="left")
        .group_by(key, maintain_order=True)
        .agg(
            pl.col(_ROW), pl.col("__event").ne_missing(pl.col("__person")).any().alias("__differs")
        )
        .filter(pl.col("__differs"))
        .get_column(_ROW)
        .to_list()
    )
    if differing:
        raise ApplicationError(
            f"'{column}' is a person-level column of the person table '{person_table}', but "
            f"'{table}' gives it another value within {len(differing):,} person(s) "
            f"({_groups_text(differing, len(differing))} of '{table}'). Remove the column "
            "from the event table, or correct the data.",
            {
                "field": "events",
                "table": table,
                "column": column,
                "varying_persons": len(differing),
                "example_rows": differing[:EXAMPLES],
            },
        )


def long_view(
    persons: Table, events: Sequence[Table], key: str
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The checked tables as one long table and the structure that reads it back.

    Rows: each event table's events in order (with their person's columns), then one row
    per person without events. Columns: the key (as text), the person table's columns,
    then each event table's own columns in order (a column shared by event tables is one
    column). The structure gives each event table's ``first_row`` (1-based) and ``rows``."""
    check_tables(persons, events, key)
    people = persons.frame.with_columns(pl.col(key).cast(pl.String))
    person_columns = [c for c in people.columns if c != key]
    parts: list[pl.DataFrame] = []
    tables: list[dict[str, Any]] = [
        {"name": persons.name, "role": PERSON, "rows": people.height, "columns": people.columns}
    ]
    event_columns: list[str] = []
    first_row = 1
    for table in events:
        own = [c for c in table.frame.columns if c != key and c not in person_columns]
        event_columns += [c for c in own if c not in event_columns]
        frame = table.frame.select(pl.col(key).cast(pl.String), *own)
        parts.append(frame.join(people, on=key, how="left", maintain_order="left"))
        tables.append(
            {
                "name": table.name,
                "role": EVENT,
                "rows": frame.height,
                "columns": table.frame.columns,
                "event_columns": own,
                "first_row": first_row,
            }
        )
        first_row += frame.height
    with_events = pl.concat([p.select(key) for p in parts]).get_column(key).unique().implode()
    alone = people.filter(~pl.col(key).is_in(with_events))
    order = [key, *person_columns, *event_columns]
    joined = pl.concat([*parts, alone], how="diagonal_relaxed").select(order)
    structure = {
        "person_key": key,
        "tables": tables,
        "persons": people.height,
        "events": first_row - 1,
        "persons_without_events": alone.height,
        "rows": joined.height,
    }
    return joined, structure


def is_multi_table(structure: dict[str, Any] | None) -> bool:
    return bool(structure and structure.get("tables"))


def event_tables(structure: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in structure.get("tables", []) if t.get("role") == EVENT]


def table_of_column(structure: dict[str, Any]) -> dict[str, str]:
    """Each column of the long view → "person" (a person-table column) or "event"."""
    levels: dict[str, str] = {}
    for table in structure.get("tables", []):
        if table["role"] == PERSON:
            levels.update({c: PERSON for c in table["columns"] if c != structure["person_key"]})
        else:
            levels.update({c: EVENT for c in table["event_columns"]})
    return levels
