"""Bounded-memory group-bys over a column: the rows cut by the hash of the column's value,
so that each part holds a bounded number of distinct values and the parts' counts add up
to the whole's (profiling, utility, attribute risk, released columns)."""

from __future__ import annotations

import math

import polars as pl

# Distinct values one streaming group-by (or unique) may hold at once: a few hundred MB.
HASH_SLICE_VALUES = 4_000_000
_HASH_SLICE_SEED = 0x5EED


def hash_slices(
    frame: pl.LazyFrame, column: str, distinct: int, per_slice: int = HASH_SLICE_VALUES
) -> list[pl.LazyFrame]:
    """`frame` cut by the hash of `column` into parts of at most about `per_slice` of its
    distinct values (`distinct`, an estimate such as `approx_n_unique`, counted 10 % high
    to allow for its error). Every row of a value lands in the same part, so counts per
    value, distinct counts and rankings of the parts add up to those of the whole, while
    a group-by over one part holds only that part's values. One part: `frame` itself."""
    slices = max(1, math.ceil(distinct * 1.1 / max(per_slice, 1)))
    if slices == 1:
        return [frame]
    return [
        frame.filter(pl.col(column).hash(seed=_HASH_SLICE_SEED) % slices == number)
        for number in range(slices)
    ]
