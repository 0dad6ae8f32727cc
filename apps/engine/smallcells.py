"""Small cells in univariate frequencies and bivariate cross-tabulations (seed 004).

Portage's guidance suggests looking for small groups of quasi-identifier values
as a first pass: fewer than 20 rows, or under 5% of the data set (both are
parameters).  The tables come from the distinct-tuples table of frame.py, so no
row is read again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import polars as pl

from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.reading import check_columns

DEFAULT_MIN_COUNT = 20
DEFAULT_MIN_SHARE = 0.05


@dataclass(frozen=True)
class SmallCell:
    columns: tuple[str, ...]
    values: tuple[str | None, ...]
    count: int
    share: float  # of all rows, 0..1
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class SmallCellReport:
    rows: int
    min_count: int
    min_share: float
    univariate: tuple[SmallCell, ...]
    bivariate: tuple[SmallCell, ...]


def small_cells(
    encoded: EncodedData,
    *,
    columns: Sequence[str] | None = None,
    min_count: int = DEFAULT_MIN_COUNT,
    min_share: float = DEFAULT_MIN_SHARE,
    bivariate: bool = True,
) -> SmallCellReport:
    """Cells (observed values, or pairs of values) with count < min_count or share < min_share.

    Findings are sorted by count, smallest first.  With no rows there is nothing to report.
    """
    chosen = tuple(columns) if columns is not None else encoded.quasi
    check_columns(list(encoded.quasi), chosen, "quasi-identifier")
    if min_count < 0 or not 0.0 <= min_share <= 1.0:
        raise EngineInputError("min_count must be ≥ 0 and min_share in [0, 1]")
    singles = [c for column in chosen for c in _cells(encoded, (column,), min_count, min_share)]
    pairs = (
        [c for pair in combinations(chosen, 2) for c in _cells(encoded, pair, min_count, min_share)]
        if bivariate
        else []
    )
    return SmallCellReport(
        rows=encoded.rows,
        min_count=min_count,
        min_share=min_share,
        univariate=tuple(sorted(singles, key=lambda c: c.count)),
        bivariate=tuple(sorted(pairs, key=lambda c: c.count)),
    )


def _cells(
    encoded: EncodedData, columns: tuple[str, ...], min_count: int, min_share: float
) -> list[SmallCell]:
    if encoded.rows == 0:
        return []
    table = (
        encoded.tuples.group_by(list(columns))
        .agg(pl.col(COUNT_COLUMN).cast(pl.UInt64).sum())
        .filter(
            (pl.col(COUNT_COLUMN) < min_count) | (pl.col(COUNT_COLUMN) < min_share * encoded.rows)
        )
        # codes follow the sorted values: equal counts are listed in the values' order
        .sort(list(columns))
    )
    dictionaries = [encoded.dictionaries[encoded.quasi.index(c)].to_list() for c in columns]
    found = []
    for row in table.iter_rows():
        count = int(row[-1])
        reasons = []
        if count < min_count:
            reasons.append(f"fewer than {min_count} rows")
        if count < min_share * encoded.rows:
            reasons.append(f"under {min_share:.0%} of rows")
        values = tuple(d[code] for d, code in zip(dictionaries, row[:-1], strict=True))
        found.append(SmallCell(columns, values, count, count / encoded.rows, tuple(reasons)))
    return found
