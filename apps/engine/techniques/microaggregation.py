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
