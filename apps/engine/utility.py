"""Step 8: each variable's distribution before and after de-identification.

For every column of the original data: the records per value before (all input rows) and
in the release (suppressed rows removed, generalized values as released). Quasi-identifiers
are compared on the values they were generalized to (a 37 counts under 35-39 before and
after); other columns keep their values, so only suppression moves them. A quasi-identifier
generalized to its top level (``*``) and a column removed from the release carry no
information: their released values count as missing, and their original distribution is
shown beside that (METHOD.md Step 8; seed 001's missingness).

Text and categories show their most frequent values (the rest summed as "other values");
numbers with many distinct values are binned on the original range, the same bins before and
after.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.slices import HASH_SLICE_VALUES, hash_slices

MAX_VALUES = 20
NUMERIC_BINS = 10
OTHER_LABEL = "(other values)"
MISSING_LABEL = "(missing)"


@dataclass(frozen=True)
class VariableDistribution:
    column: str
    kind: str  # "categorical" or "numeric"
    status: str  # "kept", "generalized", "suppressed" (all *), "removed", "masked"
    labels: tuple[str, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]
    missing_before: int
    missing_after: int  # in the release: missing values, plus suppressed / removed cells
    rows_before: int
    rows_after: int

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "kind": self.kind,
            "status": self.status,
            "labels": list(self.labels),
            "before": list(self.before),
            "after": list(self.after),
            "missing_before": self.missing_before,
            "missing_after": self.missing_after,
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
        }


Frame = pl.DataFrame | pl.LazyFrame
# Above this many distinct values by the approximate count (HyperLogLog, exact to a few
# per cent in this range), a column has more than ``max_values`` for sure; at or under it
# the values are counted exactly, on a table that small.
_SURELY_MANY = 4
# Distinct values counted at once when ranking a column's values (`_most_frequent`).
SLICE_VALUES = HASH_SLICE_VALUES


@dataclass(frozen=True)
class _Profile:
    """One column's figures from a single streaming aggregate over its frame."""

    rows: int
    missing: int
    approx_distinct: int = 0
    unparsed: int | None = None  # missing values once read as numbers (numeric, text only)
    low: float | None = None
    high: float | None = None


def _can_parse(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.String


def _profiles(frame: pl.LazyFrame, columns: Sequence[str], *, full: bool) -> dict[str, _Profile]:
    """Rows and missing values of each column (``full``: also the approximate distinct
    values and the numeric range), every column in one streaming pass: these aggregates
    keep a few numbers per column, whatever the rows (``n_unique`` of several columns in
    one query would hold the columns whole)."""
    schema = frame.collect_schema()
    exprs = [pl.len().alias("rows")]
    for i, column in enumerate(columns):
        value = pl.col(column)
        exprs.append(value.null_count().alias(f"missing{i}"))
        if not full:
            continue
        exprs.append(value.approx_n_unique().alias(f"distinct{i}"))
        if _can_parse(schema[column]):
            number = value.cast(pl.Float64, strict=False)
            exprs += [
                number.null_count().alias(f"unparsed{i}"),
                number.min().alias(f"low{i}"),
                number.max().alias(f"high{i}"),
            ]
    figures = frame.select(exprs).collect(engine="streaming").row(0, named=True)
    rows = int(figures["rows"])
    return {
        column: _Profile(
            rows=rows,
            missing=int(figures[f"missing{i}"]),
            approx_distinct=int(figures.get(f"distinct{i}") or 0),
            unparsed=figures.get(f"unparsed{i}"),
            low=figures.get(f"low{i}"),
            high=figures.get(f"high{i}"),
        )
        for i, column in enumerate(columns)
    }


def _more_values_than(frame: pl.LazyFrame, column: str, profile: _Profile, limit: int) -> bool:
    """Whether the column has more than ``limit`` distinct values (missing counting as one)."""
    if profile.approx_distinct > _SURELY_MANY * limit:
        return True
    distinct = frame.select(pl.col(column)).unique().select(pl.len())
    return int(distinct.collect(engine="streaming").item()) > limit


def _is_numeric(dtype: pl.DataType, profile: _Profile) -> bool:
    """A numeric column, or text whose every present value reads as a number."""
    if dtype.is_numeric():
        return True
    if dtype != pl.String:
        return False
    return profile.rows > profile.missing and profile.unparsed == profile.missing


def _texts(frame: pl.LazyFrame, column: str) -> pl.LazyFrame:
    return frame.select(pl.col(column).cast(pl.String).alias("value")).drop_nulls()


def _most_frequent(
    frame: pl.LazyFrame,
    column: str,
    limit: int,
    *,
    besides: Sequence[str] = (),
    distinct: int = 0,
) -> list[tuple[str, int]]:
    """The ``limit`` most frequent present values as text (ties by value), leaving out
    ``besides``. A streaming group-by holds one count per distinct value, so a column of
    more than `SLICE_VALUES` (``distinct``, approximate) is counted in hash slices, one
    pass each: every value falls in one slice with its whole count, so the most frequent
    overall are among each slice's most frequent (a removed identifier of 100 M distinct
    values does not need them all at once)."""
    values = _texts(frame, column)
    if besides:
        values = values.filter(~pl.col("value").is_in(list(besides)))

    def ranked(part: pl.LazyFrame) -> pl.DataFrame:
        return (
            part.group_by("value")
            .agg(pl.len().alias("records"))
            .sort(["records", "value"], descending=[True, False])
            .head(limit)
            .collect(engine="streaming")
        )

    parts = [ranked(part) for part in hash_slices(values, "value", distinct, SLICE_VALUES)]
    top = pl.concat(parts).sort(["records", "value"], descending=[True, False]).head(limit)
    return [(str(v), int(n)) for v, n in top.iter_rows()]


def _counts_of(frame: pl.LazyFrame, column: str, shown: Sequence[str]) -> dict[str, int]:
    """The records of each of ``shown`` (as text) in the column."""
    if not shown:
        return {}
    found = (
        _texts(frame, column)
        .filter(pl.col("value").is_in(list(shown)))
        .group_by("value")
        .agg(pl.len())
        .collect(engine="streaming")
    )
    return {str(v): int(n) for v, n in found.iter_rows()}


def _numeric_bins(
    before: pl.LazyFrame, after: pl.LazyFrame | None, column: str, profile: _Profile
) -> tuple[list[str], list[int], list[int]]:
    low, high = float(profile.low), float(profile.high)  # type: ignore[arg-type]
    width = (high - low) / NUMERIC_BINS or 1.0
    edges = [low + i * width for i in range(NUMERIC_BINS + 1)]

    def binned(frame: pl.LazyFrame | None) -> list[int]:
        if frame is None:
            return [0] * NUMERIC_BINS
        numbers = pl.col(column).cast(pl.Float64, strict=False)
        index = ((numbers - low) / width).floor().clip(0, NUMERIC_BINS - 1).cast(pl.Int64)
        counts = (
            frame.select(pl.col(column))
            .drop_nulls()
            .group_by(index.alias("bin"))
            .agg(pl.len())
            .collect(engine="streaming")
        )
        found = {int(i): int(n) for i, n in counts.iter_rows() if i is not None}
        return [found.get(i, 0) for i in range(NUMERIC_BINS)]

    labels = [f"{_short(edges[i])}-{_short(edges[i + 1])}" for i in range(NUMERIC_BINS)]
    return labels, binned(before), binned(after)


def _short(value: float) -> str:
    if math.isfinite(value) and value == int(value):
        return str(int(value))
    return f"{value:.3g}"


def variable_distribution(
    column: str,
    before: pl.Series,
    after: pl.Series | None,
    *,
    status: str,
    max_values: int = MAX_VALUES,
) -> VariableDistribution:
    """One column's distribution before and after (module docstring). ``after`` is None for
    a column not in the release."""
    original = before.to_frame(column).lazy()
    released = None if after is None else after.to_frame(column).lazy()
    return _distribution(
        column,
        original,
        released,
        before=_profiles(original, [column], full=True)[column],
        after=None if released is None else _profiles(released, [column], full=False)[column],
        status=status,
        max_values=max_values,
    )


def _distribution(
    column: str,
    original: pl.LazyFrame,
    released: pl.LazyFrame | None,
    *,
    before: _Profile,
    after: _Profile | None,
    status: str,
    max_values: int,
) -> VariableDistribution:
    """`variable_distribution` on queries: each figure is a streaming aggregate or a
    group-by of the column's values, so the rows are never held."""
    rows_after = 0 if after is None else after.rows
    shown_after: pl.LazyFrame | None = None
    if status in {"suppressed", "removed", "masked"} or released is None or after is None:
        missing_after = rows_after
        present_after = 0
    else:
        shown_after = released
        missing_after = after.missing
        present_after = after.rows - after.missing
    dtype = original.collect_schema()[column]
    numeric = (
        status == "kept"
        and _is_numeric(dtype, before)
        and _more_values_than(original, column, before, max_values)
    )
    if numeric:
        kind = "numeric"
        labels, counts_before, counts_after = _numeric_bins(original, shown_after, column, before)
    else:
        kind = "categorical"
        top = _most_frequent(original, column, max_values, distinct=before.approx_distinct)
        if len(top) < max_values and shown_after is not None:
            # Every original value is shown: values only the release has fill the rest.
            present = [v for v, _ in top]
            top += [
                (v, 0)
                for v, _ in _most_frequent(
                    shown_after, column, max_values - len(top), besides=present
                )
            ]
        labels = [v for v, _ in top]
        counts_before = [n for _, n in top]
        by_after = _counts_of(shown_after, column, labels) if shown_after is not None else {}
        counts_after = [by_after.get(v, 0) for v in labels]
        rest_before = before.rows - before.missing - sum(counts_before)
        rest_after = present_after - sum(counts_after)
        if rest_before or rest_after:
            labels.append(OTHER_LABEL)
            counts_before.append(rest_before)
            counts_after.append(rest_after)
    return VariableDistribution(
        column=column,
        kind=kind,
        status=status,
        labels=tuple(labels),
        before=tuple(counts_before),
        after=tuple(counts_after),
        missing_before=before.missing,
        missing_after=missing_after,
        rows_before=before.rows,
        rows_after=rows_after,
    )


def release_distributions(
    original: Frame,
    released: Frame,
    *,
    quasi: Sequence[str],
    levels: Mapping[str, int],
    tops: Mapping[str, int],
    masked: Sequence[str] = (),
) -> list[VariableDistribution]:
    """The columns of ``original`` other than the quasi-identifiers still carrying values:
    their distribution before and in ``released`` (the generalized quasi-identifiers are
    compared on their generalized values by the search's report, ``search/report.py``).

    A quasi-identifier at its hierarchy's top level (``tops[q]``) is fully suppressed: its
    released values count as missing and its original distribution is shown; ``masked``
    are direct identifiers replaced by pseudonyms (no distribution to compare).

    Both may be queries over files of any size (the release as ``scan_parquet``): the
    figures are streaming aggregates and group-bys, memory following the distinct values."""
    before_frame, after_frame = original.lazy(), released.lazy()
    names = after_frame.collect_schema().names()
    chosen: list[tuple[str, str]] = []
    for column in before_frame.collect_schema().names():
        if column not in names:
            status = "removed"
        elif column in masked:
            status = "masked"
        elif column in quasi:
            if not levels.get(column, 0) >= tops.get(column, math.inf) > 0:
                continue
            status = "suppressed"
        else:
            status = "kept"
        chosen.append((column, status))
    if not chosen:
        return []
    befores = _profiles(before_frame, [c for c, _ in chosen], full=True)
    afters = _profiles(after_frame, [c for c, _ in chosen if c in names], full=False)
    return [
        _distribution(
            column,
            before_frame,
            after_frame if column in names else None,
            before=befores[column],
            after=afters.get(column),
            status=status,
            max_values=MAX_VALUES,
        )
        for column, status in chosen
    ]
