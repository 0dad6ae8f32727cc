"""Two-level data: persons and their events (LONGITUDINAL.md §1).

Two input shapes are accepted and validated into one :class:`LongitudinalData`:

* one long table with a person column (:func:`from_long_table`), whose person-level
  columns must be constant within each person;
* a person table and one or more event tables linked by a person key
  (:func:`from_tables`); every event's person must be in the person table (no orphans);
  persons without events are allowed (TC9).

Persons are numbered in *id order*: numerically when every id is an integer, else by
text. That order is the one the suppression of events follows (§3.2 step 4).

:func:`suggest_levels` tells, from the data, whether a column is person-level (constant
within every person) or event-level; :func:`looks_longitudinal` flags identifier columns
with far fewer distinct values than rows (a file with several rows per person).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError, preview

I64 = NDArray[np.int64]
_ID = "__person_id"
_INDEX = "__person_index"
#: An identifier column looks longitudinal when it has at most this share of distinct
#: values per row (at least one row in five repeats an earlier value).
LONGITUDINAL_RATIO = 0.8


@dataclass(frozen=True)
class EventTable:
    """One event table as given: its rows, its person column and event-level QIs."""

    name: str
    data: pl.DataFrame
    person: str
    quasi: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class EventRecords:
    """A validated event table: each event's person (index in id order) and QI values."""

    name: str
    person_index: I64
    values: pl.DataFrame  # the event-level QI columns, one row per event, as given

    @property
    def events(self) -> int:
        return len(self.person_index)

    @property
    def quasi(self) -> tuple[str, ...]:
        return tuple(self.values.columns)


@dataclass(frozen=True, eq=False)
class LongitudinalData:
    """Persons (in id order) with their person-level QI values, and their events."""

    person_key: str
    ids: pl.Series  # person ids as text, in id order
    person_values: pl.DataFrame  # person-level QI columns, one row per person (id order)
    tables: tuple[EventRecords, ...]

    @property
    def persons(self) -> int:
        return self.ids.len()

    @property
    def events(self) -> int:
        return sum(t.events for t in self.tables)

    @property
    def person_quasi(self) -> tuple[str, ...]:
        return tuple(self.person_values.columns)

    @property
    def event_quasi(self) -> tuple[str, ...]:
        return tuple(q for t in self.tables for q in t.quasi)

    def events_per_person(self) -> I64:
        """Number of events of each person, all tables together."""
        counts = np.zeros(self.persons, dtype=np.int64)
        for table in self.tables:
            counts += np.bincount(table.person_index, minlength=self.persons)
        return counts


# --------------------------------------------------------------------------- helpers


def _require(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise EngineInputError(f"{what} has no column(s) {preview(missing)}")


def person_ids(values: pl.Series) -> pl.Series:
    """Person ids as text, one parser for every table: an integral float id (a column
    with gaps saved as float64, 1.0) reads as the integer ("1") so that it links to the
    integer ids of another table; an empty or blank id is missing (None)."""
    if values.dtype.is_float():
        finite = values.drop_nulls().drop_nans()
        if finite.len() == values.drop_nulls().len() and bool((finite == finite.round()).all()):
            values = values.cast(pl.Int64, strict=False)
    text = values.cast(pl.String)
    blank = text.str.strip_chars().str.len_chars() == 0
    return pl.select(pl.when(blank).then(None).otherwise(text)).to_series().alias(values.name)


def _ids(frame: pl.DataFrame, column: str, what: str) -> pl.Series:
    ids = frame.select(person_ids(frame.get_column(column)).alias(_ID)).get_column(_ID)
    missing = ids.null_count()
    if missing:
        rows = [str(r) for r in np.flatnonzero(ids.is_null().to_numpy())[:21] + 1]
        shown = ", ".join(rows[:20]) + (", …" if missing > 20 else "")
        raise EngineInputError(
            f"{what}: {missing:,} row(s) have no person id in {column!r} (empty or blank): "
            f"data row(s) {shown} (counted from 1 after the header); every row needs one"
        )
    return ids


def id_order(ids: pl.Series) -> pl.Series:
    """Distinct person ids in id order: numerically when all are integers, else as text."""
    distinct = ids.unique()
    as_int = distinct.cast(pl.Int64, strict=False)
    if as_int.null_count() == 0:
        order = pl.DataFrame({"id": distinct, "n": as_int}).sort(["n", "id"])["id"]
    else:
        order = distinct.sort()
    return order.alias(_ID)


def _index_frame(ids: pl.Series) -> pl.DataFrame:
    return pl.DataFrame({_ID: ids, _INDEX: np.arange(ids.len(), dtype=np.int64)})


def _indices(ids: pl.Series, index: pl.DataFrame) -> pl.Series:
    joined = pl.DataFrame({_ID: ids}).join(index, on=_ID, how="left", maintain_order="left")
    return joined.get_column(_INDEX)


def _check_constant(frame: pl.DataFrame, ids: pl.Series, columns: Sequence[str], what: str) -> None:
    """Refuse a person-level column whose value varies within a person (§1), naming both."""
    if not columns:
        return
    work = frame.select(columns).with_columns(ids)
    spread = work.group_by(_ID).agg([pl.col(c).n_unique().alias(c) for c in columns])
    for column in columns:
        varying = spread.filter(pl.col(column) > 1).get_column(_ID)
        if varying.len():
            names = id_order(varying).to_list()
            example = (
                work.filter(pl.col(_ID) == names[0])
                .get_column(column)
                .cast(pl.String)
                .unique(maintain_order=True)
                .to_list()
            )
            raise EngineInputError(
                f"{what}: person-level column {column!r} varies within person(s) "
                f"{preview(names)} (e.g. {names[0]!r}: {', '.join(repr(v) for v in example)}); "
                "mark it event-level or correct the data"
            )


def _first_per_person(
    frame: pl.DataFrame, ids: pl.Series, columns: Sequence[str], order: pl.Series
) -> pl.DataFrame:
    if not columns:
        return pl.DataFrame()
    firsts = (
        frame.select(columns)
        .with_columns(ids)
        .group_by(_ID, maintain_order=True)
        .agg([pl.col(c).first() for c in columns])
    )
    aligned = pl.DataFrame({_ID: order}).join(firsts, on=_ID, how="left", maintain_order="left")
    return aligned.select([pl.col(c).cast(pl.String) for c in columns])


def _check_names(person_quasi: Sequence[str], event_quasi: Sequence[str]) -> None:
    for names, what in ((person_quasi, "person-level"), (event_quasi, "event-level")):
        repeated = [n for n in dict.fromkeys(names) if list(names).count(n) > 1]
        if repeated:
            raise EngineInputError(f"{what} quasi-identifier(s) named twice: {preview(repeated)}")
    both = sorted(set(person_quasi) & set(event_quasi))
    if both:
        raise EngineInputError(
            f"column(s) {preview(both)} are marked both person-level and event-level"
        )


# --------------------------------------------------------------------------- builders


def from_long_table(
    frame: pl.DataFrame,
    *,
    person: str,
    person_quasi: Sequence[str],
    event_quasi: Sequence[str],
    name: str = "events",
) -> LongitudinalData:
    """One row per event, a ``person`` column, person-level columns constant within a person."""
    person_quasi, event_quasi = list(person_quasi), list(event_quasi)
    _check_names(person_quasi, event_quasi)
    _require(frame, [person, *person_quasi, *event_quasi], f"table {name!r}")
    if person in person_quasi or person in event_quasi:
        raise EngineInputError(f"the person column {person!r} cannot be a quasi-identifier")
    ids = _ids(frame, person, f"table {name!r}")
    _check_constant(frame, ids, person_quasi, f"table {name!r}")
    order = id_order(ids)
    index = _index_frame(order)
    table = EventRecords(
        name=name,
        person_index=_indices(ids, index).to_numpy().astype(np.int64, copy=False),
        values=frame.select(event_quasi),
    )
    if order.len() == 0:
        raise EngineInputError(f"table {name!r} has no rows: there are no persons to measure")
    return LongitudinalData(
        person_key=person,
        ids=order,
        person_values=_first_per_person(frame, ids, person_quasi, order),
        tables=(table,),
    )


def from_tables(
    *,
    persons: pl.DataFrame | None,
    person_key: str,
    person_quasi: Sequence[str],
    events: Sequence[EventTable],
    persons_name: str | None = None,
) -> LongitudinalData:
    """A person table (or none) and event tables linked by the person key (§1).

    ``persons_name`` (e.g. the person table's file name) and each event table's name
    are named in the messages.

    A person-level QI is read from the person table when it has the column, else from
    the event tables that have it (then it must be constant within each person, and a
    person without events has it missing). Event rows whose person is not in the person
    table are refused (orphans), naming them; persons without events are kept.
    """
    person_quasi = list(person_quasi)
    event_names = [q for t in events for q in t.quasi]
    shared = sorted({q for t in events for q in set(t.quasi) if event_names.count(q) > 1})
    if len(events) > 1 and shared:
        raise EngineInputError(
            f"event-level quasi-identifier(s) {preview(shared)} appear in several event "
            "tables: rename them so that each names one column"
        )
    _check_names(person_quasi, event_names)
    persons_what = "the person table" + (f" {persons_name!r}" if persons_name else "")
    person_columns = {t.person for t in events} | ({person_key} if persons is not None else set())
    keyed = [q for q in person_quasi if q in person_columns]
    if keyed:
        raise EngineInputError(
            f"the person column {keyed[0]!r} cannot be a quasi-identifier (it is replaced "
            "by a pseudonym in the release)"
        )
    names = [t.name for t in events]
    if len(set(names)) != len(names):
        raise EngineInputError(f"event tables must have distinct names, got {names}")
    event_ids: list[pl.Series] = []
    for table in events:
        _require(table.data, [table.person, *table.quasi], f"event table {table.name!r}")
        if table.person in table.quasi:
            raise EngineInputError(
                f"the person column {table.person!r} cannot be a quasi-identifier"
            )
        event_ids.append(_ids(table.data, table.person, f"event table {table.name!r}"))
    if persons is not None:
        _require(persons, [person_key], persons_what)
        ids = _ids(persons, person_key, persons_what)
        duplicated = ids.filter(ids.is_duplicated()).unique()
        if duplicated.len():
            raise EngineInputError(
                f"{persons_what} has several rows for person(s) "
                f"{preview(id_order(duplicated).to_list())} in {person_key!r}; "
                "a person table has one row per person"
            )
        order = id_order(ids)
        for table, table_ids in zip(events, event_ids, strict=True):
            orphans = table_ids.filter(~table_ids.is_in(ids.implode())).unique()
            if orphans.len():
                raise EngineInputError(
                    f"event table {table.name!r}: {orphans.len():,} person id(s) in "
                    f"{table.person!r} are not in {persons_what}: "
                    f"{preview(id_order(orphans).to_list())}"
                )
    else:
        if not events:
            raise EngineInputError("give a person table or at least one event table")
        order = id_order(pl.concat(event_ids))
    if order.len() == 0:
        raise EngineInputError("the tables have no rows: there are no persons to measure")
    index = _index_frame(order)
    columns: dict[str, pl.Series] = {}
    for column in person_quasi:
        if persons is not None and column in persons.columns:
            values = _first_per_person(persons, ids, [column], order)
            columns[column] = values.get_column(column)
            continue
        holders = [
            (t, i) for t, i in zip(events, event_ids, strict=True) if column in t.data.columns
        ]
        if not holders:
            raise EngineInputError(
                f"person-level column {column!r} is in no table: not in "
                + (f"{persons_what} nor in " if persons is not None else "")
                + f"event table {', '.join(repr(t.name) for t in events)}"
            )
        stacked = pl.concat([t.data.select(pl.col(column).cast(pl.String)) for t, _ in holders])
        stacked_ids = pl.concat([i for _, i in holders])
        _check_constant(
            stacked,
            stacked_ids,
            [column],
            f"event table {', '.join(repr(t.name) for t, _ in holders)}",
        )
        values = _first_per_person(stacked, stacked_ids, [column], order)
        columns[column] = values.get_column(column)
    records = tuple(
        EventRecords(
            name=table.name,
            person_index=_indices(table_ids, index).to_numpy().astype(np.int64, copy=False),
            values=table.data.select(list(table.quasi)),
        )
        for table, table_ids in zip(events, event_ids, strict=True)
    )
    return LongitudinalData(
        person_key=person_key,
        ids=order,
        person_values=pl.DataFrame(columns) if columns else pl.DataFrame(),
        tables=records,
    )


# --------------------------------------------------------------------------- suggestions


@dataclass(frozen=True)
class LevelSuggestion:
    """Whether a column is person-level (constant within every person) or event-level."""

    column: str
    level: Literal["person", "event"]
    varying_persons: int  # persons with more than one value of the column
    persons: int

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "level": self.level,
            "varying_persons": self.varying_persons,
            "persons": self.persons,
        }


def suggest_levels(
    frame: pl.DataFrame, *, person: str, columns: Sequence[str]
) -> list[LevelSuggestion]:
    """Suggest person-level or event-level for each column from the data (issue 25)."""
    _require(frame, [person, *columns], "the table")
    ids = _ids(frame, person, "the table")
    if not columns:
        return []
    spread = (
        frame.select(columns)
        .with_columns(ids)
        .group_by(_ID)
        .agg([pl.col(c).n_unique().alias(c) for c in columns])
    )
    persons = spread.height
    out = []
    for column in columns:
        varying = int((spread.get_column(column) > 1).sum())
        out.append(
            LevelSuggestion(
                column=column,
                level="event" if varying else "person",
                varying_persons=varying,
                persons=persons,
            )
        )
    return out


@dataclass(frozen=True)
class LongitudinalHint:
    """An identifier column with far fewer distinct values than rows."""

    column: str
    rows: int
    distinct: int

    @property
    def rows_per_value(self) -> float:
        return self.rows / self.distinct if self.distinct else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "rows": self.rows,
            "distinct": self.distinct,
            "rows_per_value": self.rows_per_value,
        }


def looks_longitudinal(
    frame: pl.DataFrame, *, identifiers: Sequence[str]
) -> list[LongitudinalHint]:
    """Identifier columns (e.g. those classified as direct identifiers) whose distinct
    values are at most ``LONGITUDINAL_RATIO`` of the rows: the file likely holds several
    rows per person, and risk must then be counted per person (issue 25)."""
    _require(frame, identifiers, "the table")
    hints = []
    for column in identifiers:
        values = frame.get_column(column).drop_nulls()
        rows = values.len()
        distinct = values.n_unique() if rows else 0
        if rows >= 2 and distinct >= 2 and distinct <= LONGITUDINAL_RATIO * rows:
            hints.append(LongitudinalHint(column=column, rows=rows, distinct=distinct))
    return hints
