"""The longitudinal problem: every quasi-identifier as a dimension with its level maps.

A :class:`Dimension` is one generalization axis of the lattice (LONGITUDINAL.md §3.2):
a person-level QI (given, or derived: ``event_count``, ``anchor``) with one code per
person, or an event-level QI with one code per event of its table; its
:class:`Lookup` maps level-0 codes to codes at every level. Codes at every level are
numbered in the *natural order* of their labels (numbers numerically, then text,
missing last), so "the smallest value" (tie-break of event suppression, §3.2 step 4)
is the first in that order.

:func:`prepare` builds the dimensions from validated data, hierarchies (``Hierarchy``
objects read from ARX files, or built-in names, :data:`BUILT_INS`), the date settings
and the event-count settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError, HierarchyError, preview
from apps.engine.hierarchies import TOP, Hierarchy, suppression_hierarchy
from apps.engine.longitudinal.codes import ICD9CM, ICD10, LENIENT, icd9cm_hierarchy, icd10_hierarchy
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.longitudinal.dates import (
    ANCHOR,
    DateSpec,
    IntervalLevels,
    anchor_hierarchy,
    anchor_intervals,
    calendar_hierarchy,
    interval_levels,
    iso,
    parse_dates,
)
from apps.engine.longitudinal.formulas import event_count_label, top_code

U32 = NDArray[np.uint32]
I64 = NDArray[np.int64]
EVENT_COUNT = "event_count"
#: Built-in hierarchies selectable by name (e.g. ``--hierarchy diag=icd10``).
BUILT_INS = (ICD10, ICD10 + LENIENT, ICD9CM, ICD9CM + LENIENT, "date")
HierarchySource = Hierarchy | str
Scope = Literal["person", "event"]
Kind = Literal["quasi", "event_count", "anchor", "interval"]


def natural_key(label: str | None) -> tuple[int, float, str]:
    """Numbers numerically first, then text, the missing value last."""
    if label is None:
        return (2, 0.0, "")
    try:
        number = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, number, label) if math.isfinite(number) else (1, 0.0, label)


@dataclass(frozen=True, eq=False)
class Lookup:
    """Level maps of one dimension: ``maps[L][code]`` (code at level 0 → at level L),
    ``labels[L][code]``, ``leaves[L][code]`` (hierarchy leaves covered, for Loss) and
    ``domain_size`` (leaves of the hierarchy)."""

    maps: tuple[U32, ...]
    labels: tuple[tuple[str | None, ...], ...]
    leaves: tuple[I64, ...]
    domain_size: int

    @property
    def height(self) -> int:
        return len(self.maps) - 1

    def size(self, level: int) -> int:
        return len(self.leaves[level])


def encode_values(values: pl.Series) -> tuple[list[str | None], U32]:
    """Each value's code in the natural order of the distinct texts (missing last)."""
    text = values.cast(pl.String)
    distinct = text.unique().to_list()
    ordered = sorted(distinct, key=natural_key)
    present = [v for v in ordered if v is not None]
    codes = (
        text.cast(pl.Enum(present)).to_physical().cast(pl.UInt32).fill_null(len(present))
        if present
        else pl.Series(np.zeros(text.len(), dtype=np.uint32))
    )
    return ordered, codes.to_numpy().astype(np.uint32, copy=False)


def lookup_from_hierarchy(hierarchy: Hierarchy, dictionary: Sequence[str | None]) -> Lookup:
    """Compile a validated hierarchy for a natural-order dictionary, renumbering every
    level's codes in the natural order of its labels."""
    compiled = hierarchy.lookup(pl.Series("values", list(dictionary), dtype=pl.String))
    maps, leaves = [compiled.maps[0]], [compiled.leaves[0]]
    labels: list[tuple[str | None, ...]] = [tuple(compiled.labels[0])]
    for level in range(1, compiled.height + 1):
        level_labels = compiled.labels[level]
        order = sorted(range(len(level_labels)), key=lambda c: natural_key(level_labels[c]))
        rank = np.empty(len(order), dtype=np.uint32)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.uint32)
        maps.append(rank[compiled.maps[level]])
        labels.append(tuple(level_labels[c] for c in order))
        leaves.append(compiled.leaves[level][np.asarray(order, dtype=np.int64)])
    return Lookup(tuple(maps), tuple(labels), tuple(leaves), compiled.domain_size)


def _lookup_from_intervals(levels: IntervalLevels) -> Lookup:
    return Lookup(levels.maps, levels.labels, levels.leaves, levels.domain_size)


@dataclass(frozen=True, eq=False)
class Dimension:
    """One quasi-identifier of the lattice."""

    name: str
    scope: Scope
    table: int  # event table index; -1 for person-level dimensions
    codes: U32  # level-0 code per person (person scope) or per event of its table
    lookup: Lookup
    kind: Kind = "quasi"
    min_level: int = 0

    @property
    def height(self) -> int:
        return self.lookup.height

    def check_level(self, level: int) -> None:
        if not self.min_level <= level <= self.height:
            low = f" (at least {self.min_level}: dates are shifted)" if self.min_level else ""
            raise EngineInputError(
                f"level of {self.name!r} must be {self.min_level}..{self.height}{low}, not {level}"
            )


@dataclass(frozen=True, eq=False)
class EventCountSpec:
    """The derived person-level QI ``event_count`` (LONGITUDINAL.md §2.6).

    ``top``: top-code ("p95" = the 95th percentile of events per person, an integer, or
    None for none) of the built-in range hierarchy; a given ``hierarchy`` (over the exact
    counts "0", "1", …) replaces the built-in one and its top-coding.
    """

    top: int | str | None = "p95"
    hierarchy: Hierarchy | None = None


@dataclass(frozen=True, eq=False)
class LongitudinalProblem:
    """Validated data and its dimensions: what measure and search work on."""

    data: LongitudinalData
    dimensions: tuple[Dimension, ...]
    event_persons: tuple[I64, ...]  # per table: each event's person index
    event_count_top: int | None = None  # the top-code applied, when event_count is built in
    dates: DateSpec | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def persons(self) -> int:
        return self.data.persons

    @property
    def events(self) -> int:
        return self.data.events

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    def person_dimensions(self) -> list[int]:
        return [j for j, d in enumerate(self.dimensions) if d.scope == "person"]

    def event_dimensions(self, table: int | None = None) -> list[int]:
        return [
            j
            for j, d in enumerate(self.dimensions)
            if d.scope == "event" and (table is None or d.table == table)
        ]

    def levels_of(self, levels: Mapping[str, int] | None) -> tuple[int, ...]:
        """Full level tuple: given levels by name, the others at their minimum."""
        given = dict(levels or {})
        unknown = [name for name in given if name not in self.names]
        if unknown:
            raise EngineInputError(
                f"levels name unknown quasi-identifier(s) {preview(unknown)}; "
                f"known: {', '.join(self.names)}"
            )
        out = []
        for d in self.dimensions:
            level = int(given.get(d.name, d.min_level))
            d.check_level(level)
            out.append(level)
        return tuple(out)


# --------------------------------------------------------------------------- building


def _builtin(spec: str, column: str, values: Sequence[str | None]) -> Hierarchy:
    name = spec.strip().lower()
    if name == ICD10:
        return icd10_hierarchy(column, values)
    if name == ICD10 + LENIENT:
        return icd10_hierarchy(column, values, lenient=True)
    if name == ICD9CM:
        return icd9cm_hierarchy(column, values)
    if name == ICD9CM + LENIENT:
        return icd9cm_hierarchy(column, values, lenient=True)
    if name == "date":
        return calendar_hierarchy(column, values)
    raise HierarchyError(
        f"unknown built-in hierarchy {spec!r} for {column!r} (built-in: {', '.join(BUILT_INS)})"
    )


def resolve_hierarchy(
    source: HierarchySource | None, column: str, values: Sequence[str | None]
) -> Hierarchy:
    """A hierarchy object, a built-in name, or (None) leaf → ``*``."""
    if source is None:
        if all(v is None for v in values):  # only missing values: one placeholder row
            return Hierarchy(column, ((TOP, TOP),))
        return suppression_hierarchy(column, values)
    if isinstance(source, str):
        return _builtin(source, column, values)
    return source


def _dimension(
    name: str,
    scope: Scope,
    table: int,
    values: pl.Series,
    source: HierarchySource | None,
    kind: Kind = "quasi",
    min_level: int = 0,
) -> Dimension:
    dictionary, codes = encode_values(values)
    hierarchy = resolve_hierarchy(source, name, dictionary)
    lookup = lookup_from_hierarchy(hierarchy, dictionary)
    dimension = Dimension(name, scope, table, codes, lookup, kind, min_level)
    if min_level > dimension.height:
        raise EngineInputError(f"{name!r}: its hierarchy has no level {min_level}")
    return dimension


def _event_count_dimension(counts: I64, spec: EventCountSpec) -> tuple[Dimension, int | None]:
    if spec.hierarchy is not None:
        values = pl.Series(EVENT_COUNT, [str(int(c)) for c in counts], dtype=pl.String)
        return _dimension(EVENT_COUNT, "person", -1, values, spec.hierarchy, "event_count"), None
    if spec.top is None:
        top = None
    elif spec.top == "p95":
        top = top_code(counts)
    elif isinstance(spec.top, int) and not isinstance(spec.top, bool) and spec.top >= 1:
        top = spec.top
    else:
        raise EngineInputError(
            f"event-count top-code must be 'p95', a count >= 1 or none, not {spec.top!r}"
        )
    distinct = sorted({int(c) for c in counts.tolist()})
    rows = {
        event_count_label(c, 0, top): tuple(event_count_label(c, lv, top) for lv in range(4))
        for c in distinct
    }
    hierarchy = Hierarchy(EVENT_COUNT, tuple(rows.values()) or ((TOP, TOP, TOP, TOP),))
    values = pl.Series(
        EVENT_COUNT, [event_count_label(int(c), 0, top) for c in counts], dtype=pl.String
    )
    return _dimension(EVENT_COUNT, "person", -1, values, hierarchy, "event_count"), top


def prepare(
    data: LongitudinalData,
    *,
    hierarchies: Mapping[str, HierarchySource] | None = None,
    dates: DateSpec | None = None,
    event_count: EventCountSpec | None = None,
    require_hierarchies: bool = False,
) -> LongitudinalProblem:
    """Build the dimensions: person-level QIs, derived ``event_count`` and ``anchor``,
    event-level QIs (anchored dates as intervals). With ``require_hierarchies`` (the
    search) every given QI needs a hierarchy; otherwise a QI without one can only be
    kept or suppressed (leaf → ``*``)."""
    sources = dict(hierarchies or {})
    event_names = [q for t in data.tables for q in t.quasi]  # distinct (data.from_tables)
    all_names = [*data.person_quasi, *event_names]
    for derived, wanted in (
        (EVENT_COUNT, event_count is not None),
        (ANCHOR, dates is not None and dates.mode == "anchored"),
    ):
        if wanted and derived in all_names:
            raise EngineInputError(
                f"a column is named {derived!r}, the name of a derived quasi-identifier: rename it"
            )
    date_columns = set(dates.columns) if dates is not None else set()
    unknown_dates = sorted(date_columns - set(event_names))
    if unknown_dates:
        raise EngineInputError(
            f"date column(s) {preview(unknown_dates)} are not event-level quasi-identifiers"
        )
    anchored = dates is not None and dates.mode == "anchored"
    known = {*all_names, EVENT_COUNT if event_count is not None else "", ANCHOR if anchored else ""}
    stray = sorted(set(sources) - known)
    if stray:
        raise EngineInputError(f"hierarchy given for unknown quasi-identifier(s) {preview(stray)}")
    if anchored:
        fixed = sorted(date_columns & set(sources))
        if fixed:
            raise EngineInputError(
                f"anchored date column(s) {preview(fixed)} use the built-in interval levels "
                "(day, 7, 30, 90, 365 days): give no hierarchy for them"
            )
    if require_hierarchies:
        needs = [q for q in all_names if q not in sources and q not in date_columns]
        if needs:
            raise EngineInputError(f"no hierarchy for: {', '.join(needs)}")
    dimensions: list[Dimension] = []
    for column in data.person_quasi:
        dimensions.append(
            _dimension(
                column, "person", -1, data.person_values.get_column(column), sources.get(column)
            )
        )
    top: int | None = None
    if event_count is not None:
        spec = event_count
        if EVENT_COUNT in sources:
            given = sources[EVENT_COUNT]
            if isinstance(given, str):
                raise EngineInputError(
                    f"{EVENT_COUNT!r} takes an ARX hierarchy file over the exact counts, "
                    f"not the built-in {given!r}"
                )
            spec = EventCountSpec(top=event_count.top, hierarchy=given)
        dimension, top = _event_count_dimension(data.events_per_person(), spec)
        dimensions.append(dimension)
    parsed: dict[tuple[int, str], pl.Series] = {}
    if dates is not None:
        for t, table in enumerate(data.tables):
            for column in table.quasi:
                if column in date_columns:
                    parsed[(t, column)] = parse_dates(
                        table.values.get_column(column), column, f"event table {table.name!r}"
                    )
    intervals = None
    if anchored:
        assert dates is not None
        result = anchor_intervals(
            data.persons,
            [
                (table.person_index, {c: parsed[(t, c)] for c in table.quasi if (t, c) in parsed})
                for t, table in enumerate(data.tables)
            ],
        )
        intervals = result.intervals
        dimensions.append(
            _dimension(
                ANCHOR,
                "person",
                -1,
                iso(result.anchor),
                anchor_hierarchy(ANCHOR, iso(result.anchor).unique().to_list()),
                "anchor",
                min_level=dates.anchor_min_level,
            )
        )
    for t, table in enumerate(data.tables):
        for column in table.quasi:
            if intervals is not None and (t, column) in intervals:
                codes, levels = interval_levels(intervals[(t, column)])
                dimensions.append(
                    Dimension(column, "event", t, codes, _lookup_from_intervals(levels), "interval")
                )
                continue
            values = table.values.get_column(column)
            source = sources.get(column)
            if (t, column) in parsed:
                values = iso(parsed[(t, column)])
                source = source if source is not None else "date"
            dimensions.append(_dimension(column, "event", t, values, source))
    return LongitudinalProblem(
        data=data,
        dimensions=tuple(dimensions),
        event_persons=tuple(t.person_index for t in data.tables),
        event_count_top=top,
        dates=dates,
    )
