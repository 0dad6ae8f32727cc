"""Event dates: absolute or anchored, with optional per-person shifting (LONGITUDINAL.md §2.7).

* **absolute**: a date column is an event-level QI with the calendar hierarchy
  day → month → quarter → year → ``*`` (:func:`calendar_hierarchy`).
* **anchored**: ``anchor`` = the person's first event date (over every anchored column
  of every event table) becomes a derived person-level QI (day → month → year → 5 years
  → ``*``), and each anchored date becomes its interval in days from the anchor, an
  event-level QI binned ``⌊d/w⌋`` by 7, 30, 90 and 365 days, then ``*``.
* **shifting** (masking, not generalization): when each person's dates are released
  shifted by a random offset of up to ``±shift_days``, what an adversary can still use is
  the intervals and the anchor known only to the shift range's granularity; the risk is
  therefore measured in anchored mode with the anchor at least at that level
  (``formulas.anchor_level_for_shift``). The offsets themselves are never computed nor
  stored here; the release applies ``techniques.date_shift`` with its own secret key.

Dates are days: a time of day is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from apps.engine.errors import EngineInputError, HierarchyError, preview
from apps.engine.hierarchies import TOP, Hierarchy, date_hierarchy
from apps.engine.longitudinal.formulas import (
    INTERVAL_WIDTHS,
    anchor_level_for_shift,
    interval_bin,
    interval_domain,
    interval_leaves,
)

ANCHOR = "anchor"
DateMode = Literal["absolute", "anchored"]
DATE_MODES: tuple[DateMode, ...] = ("absolute", "anchored")
#: Levels of the anchor (first event date): 0 day, 1 month, 2 year, 3 five years, 4 "*".
ANCHOR_LEVELS = ("month", "year", "5-year")


@dataclass(frozen=True)
class DateSpec:
    """Event-level date columns and how they are measured (LONGITUDINAL.md §2.7)."""

    columns: tuple[str, ...]
    mode: DateMode = "absolute"
    shift_days: int | None = None  # per-person shift range ±days, when dates are shifted

    def __post_init__(self) -> None:
        if self.mode not in DATE_MODES:
            raise EngineInputError(f"date mode must be absolute or anchored, not {self.mode!r}")
        if self.shift_days is not None:
            if self.mode != "anchored":
                raise EngineInputError(
                    "shifted dates keep only intervals: measure them in the anchored date mode"
                )
            if not 1 <= self.shift_days <= 36_500:
                raise EngineInputError("the date shift range must be 1 to 36,500 days")
        if not self.columns:
            raise EngineInputError("name at least one event-level date column")

    @property
    def anchor_min_level(self) -> int:
        """Finest anchor level the measure may use (0 unless dates are shifted)."""
        return 0 if self.shift_days is None else anchor_level_for_shift(self.shift_days)


def parse_dates(values: pl.Series, column: str, where: str) -> pl.Series:
    """A column as dates (Date, Datetime, or ISO text ``YYYY-MM-DD[ time]``), naming
    the values that are not dates."""
    if values.dtype == pl.Date:
        return values
    if isinstance(values.dtype, pl.Datetime):
        return values.dt.date()
    text = values.cast(pl.String).str.strip_chars()
    parsed = text.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)
    bad = text.filter(parsed.is_null() & text.is_not_null() & (text != ""))
    if bad.len():
        raise EngineInputError(
            f"{where}: {column!r} must hold dates (YYYY-MM-DD); not dates: "
            f"{preview(bad.unique(maintain_order=True).to_list())}"
        )
    return parsed


def iso(dates: pl.Series) -> pl.Series:
    """Dates as ISO text (missing stays missing)."""
    return dates.dt.strftime("%Y-%m-%d")


def _quarter_label(day: date) -> str:
    return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"


def calendar_hierarchy(column: str, values: Iterable[str | None]) -> Hierarchy:
    """Absolute dates: day → month ("2020-03") → quarter ("2020-Q1") → year → ``*``."""
    rows = []
    bad = []
    for value in dict.fromkeys(v for v in values if v is not None):
        try:
            day = date.fromisoformat(value.strip()[:10])
        except ValueError:
            bad.append(value)
            continue
        rows.append(
            (value, f"{day.year:04d}-{day.month:02d}", _quarter_label(day), f"{day.year:04d}", TOP)
        )
    if bad:
        raise HierarchyError(f"date hierarchy of {column!r}: not dates: {preview(bad)}")
    if not rows:
        rows.append((TOP, TOP, TOP, TOP, TOP))
    return Hierarchy(column, tuple(sorted(rows)))


def anchor_hierarchy(column: str, values: Iterable[str | None]) -> Hierarchy:
    """The anchor (first event date): day → month → year → 5 years → ``*``."""
    present = [v for v in values if v is not None]
    if not present:
        return Hierarchy(column, ((TOP, TOP, TOP, TOP, TOP),))
    return date_hierarchy(column, present, levels=ANCHOR_LEVELS)


@dataclass(frozen=True, eq=False)
class Anchored:
    """Each person's anchor date and each anchored event's interval in days."""

    anchor: pl.Series  # Date per person (missing when the person has no dated event)
    intervals: dict[tuple[int, str], NDArray[np.int64]]  # (table, column) -> days, -1 missing


def anchor_intervals(
    persons: int,
    tables: Sequence[tuple[NDArray[np.int64], dict[str, pl.Series]]],
) -> Anchored:
    """Anchor = first date over every anchored column of every table (§2.7); intervals
    = date − anchor in days. ``tables`` holds, per event table, each event's person and
    its anchored date columns (as dates)."""
    anchor = np.full(persons, np.iinfo(np.int64).max, dtype=np.int64)
    days_of: dict[tuple[int, str], NDArray[np.int64]] = {}
    for t, (person, columns) in enumerate(tables):
        for name, dates in columns.items():
            days = (
                dates.cast(pl.Int32).fill_null(np.iinfo(np.int32).max).to_numpy().astype(np.int64)
            )
            present = days < np.iinfo(np.int32).max
            days_of[(t, name)] = np.where(present, days, -1)
            np.minimum.at(anchor, person[present], days[present])
    has = anchor < np.iinfo(np.int64).max
    anchor_series = pl.Series(ANCHOR, np.where(has, anchor, 0).astype(np.int32)).cast(pl.Date)
    anchor_series = (
        pl.select(pl.when(pl.Series(has)).then(anchor_series).otherwise(None))
        .to_series()
        .alias(ANCHOR)
    )
    intervals: dict[tuple[int, str], NDArray[np.int64]] = {}
    for (t, name), days in days_of.items():
        person = tables[t][0]
        first = anchor[person]
        intervals[(t, name)] = np.where(days >= 0, days - first, -1)
    return Anchored(anchor=anchor_series, intervals=intervals)


@dataclass(frozen=True, eq=False)
class IntervalLevels:
    """Level maps of an interval column (LONGITUDINAL.md §2.7): day, 7 d, 30 d, 90 d,
    365 d, ``*``. ``maps[L][code]``, ``labels[L]``, ``leaves[L]`` as in a hierarchy lookup."""

    values: NDArray[np.int64]  # distinct days (level-0 codes index this), -1 = missing
    maps: tuple[NDArray[np.uint32], ...]
    labels: tuple[tuple[str | None, ...], ...]
    leaves: tuple[NDArray[np.int64], ...]
    domain_size: int


def interval_levels(days: NDArray[np.int64]) -> tuple[NDArray[np.uint32], IntervalLevels]:
    """Codes of every event's interval and the level maps (missing = own group, last)."""
    distinct = np.unique(days)
    present = distinct[distinct >= 0]
    has_missing = bool((distinct < 0).any())
    values = np.concatenate([present, np.array([-1] * has_missing, dtype=np.int64)])
    codes = np.searchsorted(present, days).astype(np.uint32)
    if has_missing:
        codes[days < 0] = len(present)
    domain = interval_domain(int(present.max()) if len(present) else 0)
    missing_tail = [None] if has_missing else []
    maps = [np.arange(len(values), dtype=np.uint32)]
    labels: list[tuple[str | None, ...]] = [(*(str(int(d)) for d in present), *missing_tail)]
    leaves = [np.ones(len(values), dtype=np.int64)]
    for width in INTERVAL_WIDTHS:
        bins = np.array([interval_bin(int(d), width) for d in present], dtype=np.int64)
        uniq = np.unique(bins)
        level_map = np.searchsorted(uniq, bins).astype(np.uint32)
        if has_missing:
            level_map = np.concatenate([level_map, np.array([len(uniq)], dtype=np.uint32)])
        maps.append(level_map)
        labels.append(
            (*(f"{int(b) * width}-{int(b) * width + width - 1}" for b in uniq), *missing_tail)
        )
        leaves.append(
            np.array(
                [interval_leaves(width, domain)] * len(uniq) + [1] * has_missing, dtype=np.int64
            )
        )
    maps.append(np.zeros(len(values), dtype=np.uint32))
    labels.append((TOP,))
    leaves.append(np.array([domain], dtype=np.int64))
    return codes, IntervalLevels(
        values=values,
        maps=tuple(maps),
        labels=tuple(labels),
        leaves=tuple(leaves),
        domain_size=domain,
    )
