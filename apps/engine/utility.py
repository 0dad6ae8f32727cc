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


def _counts(series: pl.Series) -> dict[str, int]:
    frame = series.cast(pl.String).drop_nulls().value_counts()
    return {str(v): int(n) for v, n in frame.iter_rows()}


def _is_numeric(series: pl.Series) -> bool:
    if series.dtype.is_numeric():
        return True
    if series.dtype != pl.String:
        return False
    parsed = series.drop_nulls().cast(pl.Float64, strict=False)
    return parsed.len() > 0 and parsed.null_count() == 0


def _numeric_bins(
    before: pl.Series, after: pl.Series | None
) -> tuple[list[str], list[int], list[int]]:
    values = before.cast(pl.Float64, strict=False).drop_nulls()
    low, high = float(values.min()), float(values.max())  # type: ignore[arg-type]
    width = (high - low) / NUMERIC_BINS or 1.0
    edges = [low + i * width for i in range(NUMERIC_BINS + 1)]

    def binned(series: pl.Series | None) -> list[int]:
        if series is None:
            return [0] * NUMERIC_BINS
        numbers = series.cast(pl.Float64, strict=False).drop_nulls()
        index = ((numbers - low) / width).floor().clip(0, NUMERIC_BINS - 1).cast(pl.Int64)
        counts = index.value_counts()
        found = {int(i): int(n) for i, n in counts.iter_rows()}
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
    rows_after = 0 if after is None else after.len()
    shown_after: pl.Series | None = None
    if status in {"suppressed", "removed", "masked"} or after is None:
        missing_after = rows_after
    else:
        shown_after = after
        missing_after = int(after.null_count())
    many = before.n_unique() > max_values
    kind = "numeric" if status == "kept" and many and _is_numeric(before) else "categorical"
    if kind == "numeric":
        labels, counts_before, counts_after = _numeric_bins(before, shown_after)
    else:
        by_before = _counts(before)
        by_after = _counts(shown_after) if shown_after is not None else {}
        ranked = sorted(by_before, key=lambda v: (-by_before[v], v))
        ranked += sorted(
            (v for v in by_after if v not in by_before), key=lambda v: (-by_after[v], v)
        )
        shown = ranked[:max_values]
        kept = set(shown)
        labels = list(shown)
        counts_before = [by_before.get(v, 0) for v in shown]
        counts_after = [by_after.get(v, 0) for v in shown]
        rest_before = sum(n for v, n in by_before.items() if v not in kept)
        rest_after = sum(n for v, n in by_after.items() if v not in kept)
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
        missing_before=int(before.null_count()),
        missing_after=missing_after,
        rows_before=before.len(),
        rows_after=rows_after,
    )


def release_distributions(
    original: pl.DataFrame,
    released: pl.DataFrame,
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
    are direct identifiers replaced by pseudonyms (no distribution to compare)."""
    out = []
    for column in original.columns:
        before = original.get_column(column)
        after = released.get_column(column) if column in released.columns else None
        if after is None:
            status = "removed"
        elif column in masked:
            status = "masked"
        elif column in quasi:
            if not levels.get(column, 0) >= tops.get(column, math.inf) > 0:
                continue
            status = "suppressed"
        else:
            status = "kept"
        out.append(variable_distribution(column, before, after, status=status))
    return out
