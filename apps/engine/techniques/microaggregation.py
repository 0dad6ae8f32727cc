"""Microaggregation of numeric quasi-identifiers by MDAV (PDPC 3.9; sdcMicro `mdav`).

Records are grouped into clusters of at least k similar records and each value is
replaced by its cluster's mean, so every record shares its (microaggregated)
quasi-identifier values with k − 1 others: k-anonymity on those variables, with less
distortion than wide global intervals.  MDAV, "maximum distance to average vector"
(Domingo-Ferrer & Mateo-Sanz 2002, IEEE TKDE 14(1); in the form of Domingo-Ferrer &
Torra 2005, DMKD 11(2)), on the variables standardised to mean 0 and sd 1:

1. while at least 3k records remain: r = the record farthest from the centroid of the
   remaining ones, s = the record farthest from r; group r with its k − 1 nearest, then
   s with its k − 1 nearest among the rest;
2. if 2k..3k−1 remain: group the record farthest from the centroid with its k − 1
   nearest, and the rest form the last group;
3. fewer than 2k remaining form one group.

Ties go to the earliest row.  All variables are aggregated together (multivariate), so
the cluster means are consistent within a record.

This takes time growing with the square of the rows (each step measures every remaining
record): about 6.6 h for a million.  On one variable — the only form Step 7 uses — the same
steps need no distances (``mdav_univariate``): the record farthest from the centroid, and
the record farthest from it, are the two ends of the sorted values, and a record's k − 1
nearest are the next values from its end.  With the values sorted once and the remaining
sum kept exactly, each step costs a constant, the whole O(n log n), and the groups are
MDAV's own (the choice of an end compares exact sums, so a tie is a tie and goes to the
earliest row).  Several variables together keep the quadratic form, refused above
``MULTIVARIATE_MAX_ROWS`` (bench/bench_microaggregation.py measured the time it takes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import (
    FloatArray,
    IntArray,
    numeric_values,
    require_columns,
)


@dataclass(frozen=True)
class MicroaggregationParams:
    columns: tuple[str, ...]
    k: int = 3


@dataclass(frozen=True)
class MicroaggregationResult:
    data: pl.DataFrame
    params: MicroaggregationParams
    groups: IntArray  # per row: its cluster (0..)
    smallest_group: int
    within_group_share: float  # SSE / SST: information loss (0 = none, 1 = all)


def _standardised(matrix: FloatArray) -> FloatArray:
    sd = matrix.std(axis=0)
    scaled: FloatArray = (matrix - matrix.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return scaled


def mdav_groups(points: FloatArray, k: int) -> IntArray:
    """Cluster label per row by MDAV (points already scaled as wanted)."""
    n = points.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    label = 0

    def farthest(from_point: FloatArray, among: IntArray) -> int:
        return int(among[np.argmax(((points[among] - from_point) ** 2).sum(axis=1))])

    def take_group(seed: int, among: IntArray) -> IntArray:
        nonlocal label
        distances = ((points[among] - points[seed]) ** 2).sum(axis=1)
        members = among[np.argsort(distances, kind="stable")[:k]]
        labels[members] = label
        label += 1
        return np.setdiff1d(among, members, assume_unique=True)

    while remaining.size >= 3 * k:
        centroid = points[remaining].mean(axis=0)
        r = farthest(centroid, remaining)
        s = farthest(points[r], remaining)
        remaining = take_group(r, remaining)
        remaining = take_group(s, remaining)
    if remaining.size >= 2 * k:
        r = farthest(points[remaining].mean(axis=0), remaining)
        remaining = take_group(r, remaining)
    if remaining.size:
        labels[remaining] = label
    return labels


# Several variables are aggregated together by quadratic MDAV up to this many rows: about a
# minute of CPU (bench/bench_microaggregation.py, docs/bench/microaggregation.md).
MULTIVARIATE_MAX_ROWS = 50_000


def mdav_univariate(values: FloatArray, k: int) -> IntArray:
    """Cluster label per row by MDAV on one variable, in O(n log n) (module docstring):
    the same groups and labels as ``mdav_groups`` on the values as a column."""
    ends = _SortedEnds(values, k)
    while ends.left >= 3 * k:
        top = ends.farther_end_is_top()
        ends.take(top=top)  # r, the farthest from the centroid, with its k − 1 nearest
        ends.take(top=not top)  # s, the farthest from r: the other end
    if ends.left >= 2 * k:
        ends.take(top=ends.farther_end_is_top())
    if ends.left:
        ends.labels[ends.labels < 0] = ends.label
    return ends.labels


class _SortedEnds:
    """The values not yet grouped, as runs of equal values between two ends. A group takes
    the earliest rows of a run first, from either end: MDAV's ties (the earliest row)."""

    def __init__(self, values: FloatArray, k: int) -> None:
        n = values.shape[0]
        self.k = k
        self.labels: IntArray = np.full(n, -1, dtype=np.int64)
        distinct, run_of_row, counts = np.unique(values, return_inverse=True, return_counts=True)
        self.counts = [int(c) for c in counts]
        self.rows: IntArray = np.lexsort((np.arange(n), run_of_row))  # by run, then row
        self.starts: list[int] = [0, *np.cumsum(counts).tolist()]
        # The values × one power of two, as integers: sums and comparisons are exact.
        self.exact = _exact_integers(distinct)
        self.taken = [0] * len(distinct)  # rows of each run already grouped
        self.lo, self.hi = 0, len(distinct) - 1
        self.left = n
        self.sum: int = sum(e * c for e, c in zip(self.exact, self.counts, strict=True))
        self.label = 0

    def take(self, *, top: bool) -> None:
        """The next group: k rows from the top (or bottom) end."""
        need = self.k
        while need:
            run = self.hi if top else self.lo
            available = self.counts[run] - self.taken[run]
            used = min(need, available)
            first = self.starts[run] + self.taken[run]
            self.labels[self.rows[first : first + used]] = self.label
            self.taken[run] += used
            self.sum -= self.exact[run] * used
            need -= used
            if used == available:
                if top:
                    self.hi -= 1
                else:
                    self.lo += 1
        self.left -= self.k
        self.label += 1

    def farther_end_is_top(self) -> bool:
        """Whether the record farthest from the centroid c = sum / left is at the top end:
        (hi − c) against (c − lo), exactly; a tie goes to the end with the earlier row."""
        balance = self.left * (self.exact[self.hi] + self.exact[self.lo]) - 2 * self.sum
        if balance != 0:
            return bool(balance > 0)
        top_row = self.rows[self.starts[self.hi] + self.taken[self.hi]]
        bottom_row = self.rows[self.starts[self.lo] + self.taken[self.lo]]
        return bool(top_row < bottom_row)


def _exact_integers(values: FloatArray) -> list[int]:
    """Finite floats as integers with one common power-of-two scale (exactly)."""
    ratios = [float(v).as_integer_ratio() for v in values]
    scale = max((d for _, d in ratios), default=1)
    return [numerator * (scale // d) for numerator, d in ratios]


def microaggregate(data: pl.DataFrame, params: MicroaggregationParams) -> MicroaggregationResult:
    """Replace the columns' values by their MDAV cluster means (clusters of ≥ k rows)."""
    columns = require_columns(data, params.columns, "microaggregated")
    if params.k < 2:
        raise EngineInputError(f"microaggregation: k must be at least 2, not {params.k}")
    if data.height < params.k:
        raise EngineInputError(
            f"microaggregation: {data.height} rows cannot form a group of {params.k}"
        )
    matrix = np.column_stack([numeric_values(data, c, "microaggregation") for c in columns])
    missing = [c for j, c in enumerate(columns) if np.isnan(matrix[:, j]).any()]
    if missing:
        raise EngineInputError(
            f"microaggregation: {', '.join(missing)} has missing values; "
            "blank or impute them before aggregating"
        )
    if len(columns) == 1:
        labels = mdav_univariate(matrix[:, 0], params.k)
    elif data.height > MULTIVARIATE_MAX_ROWS:
        raise EngineInputError(
            f"microaggregation of {len(columns)} variables together: at most "
            f"{MULTIVARIATE_MAX_ROWS:,} rows (this data has {data.height:,}); its time grows "
            "with the square of the rows. Aggregate each variable on its own."
        )
    else:
        labels = mdav_groups(_standardised(matrix), params.k)
    groups = labels.max() + 1
    sums = np.zeros((groups, len(columns)))
    np.add.at(sums, labels, matrix)
    sizes = np.bincount(labels, minlength=groups)
    means = sums / sizes[:, None]
    aggregated = means[labels]
    total = float(((matrix - matrix.mean(axis=0)) ** 2).sum())
    within = float(((matrix - aggregated) ** 2).sum())
    return MicroaggregationResult(
        data=data.with_columns(pl.Series(c, aggregated[:, j]) for j, c in enumerate(columns)),
        params=params,
        groups=labels,
        smallest_group=int(sizes.min()),
        within_group_share=within / total if total else 0.0,
    )
