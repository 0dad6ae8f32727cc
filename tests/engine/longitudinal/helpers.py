"""Small builders shared by the longitudinal tests."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from apps.engine.hierarchies import Hierarchy, parse_arx_text
from apps.engine.longitudinal import EventTable, LongitudinalData, from_long_table, from_tables


def long_table(rows: Sequence[Sequence[str | None]], columns: Sequence[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {c: [row[j] for row in rows] for j, c in enumerate(columns)},
        schema={c: pl.String for c in columns},
    )


def long_data(
    rows: Sequence[Sequence[str | None]],
    columns: Sequence[str],
    *,
    person_quasi: Sequence[str] = (),
    event_quasi: Sequence[str] = (),
) -> LongitudinalData:
    return from_long_table(
        long_table(rows, columns),
        person="pid",
        person_quasi=person_quasi,
        event_quasi=event_quasi,
    )


def two_tables(
    persons: Sequence[Sequence[str | None]],
    person_columns: Sequence[str],
    events: Sequence[Sequence[str | None]],
    event_columns: Sequence[str],
    *,
    person_quasi: Sequence[str],
    event_quasi: Sequence[str],
) -> LongitudinalData:
    return from_tables(
        persons=long_table(persons, person_columns),
        person_key="pid",
        person_quasi=person_quasi,
        events=[EventTable("events", long_table(events, event_columns), "pid", tuple(event_quasi))],
    )


def arx(column: str, text: str) -> Hierarchy:
    return parse_arx_text(text, column)
