"""Rank swapping of numeric or ordinal variables (PDPC 3.4 "swapping"; sdcMicro `rankSwap`).

Moore (1996), "Controlled data-swapping techniques for masking public use microdata
sets" (US Census Bureau): the values of a variable are ranked; going up the ranks, each
value not yet swapped is exchanged with a value picked uniformly among the not yet
swapped ones whose rank lies within p % of the number of records above it.  Each
variable is swapped on its own, so every univariate distribution is kept exactly and
relations between variables weaken as p grows.  Ties are ranked by row order; missing
values are left in place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import (
    FloatArray,
    generator,
    numeric_values,
    require_columns,
)


@dataclass(frozen=True)
class RankSwapParams:
    columns: tuple[str, ...]
    percent: float = 5.0  # p: partners lie within p % of the records, in rank
    seed: int | None = None  # never reported


@dataclass(frozen=True)
class RankSwapResult:
    data: pl.DataFrame
    params: RankSwapParams
    swapped: dict[str, int]  # rows whose value changed, per column


def rank_swap_values(values: FloatArray, window: int, rng: np.random.Generator) -> FloatArray:
    """Swap each value with a partner at most `window` ranks above it (Moore 1996)."""
    present = np.flatnonzero(~np.isnan(values))
    order = present[np.argsort(values[present], kind="stable")]
    out = values.copy()
    free = np.ones(order.size, dtype=np.bool_)
    for i in range(order.size):
        if not free[i]:
            continue
        partners = np.flatnonzero(free[i + 1 : i + 1 + window]) + i + 1
        if partners.size == 0:
            continue
        j = int(partners[rng.integers(partners.size)])
        out[order[i]], out[order[j]] = values[order[j]], values[order[i]]
        free[i] = free[j] = False
    return out


def rank_swap(data: pl.DataFrame, params: RankSwapParams) -> RankSwapResult:
    """Rank-swap each column of `params.columns` independently (seeded)."""
    columns = require_columns(data, params.columns, "swapped")
    if not 0 < params.percent <= 100:
        raise EngineInputError(f"rank swapping: p must be in (0, 100], not {params.percent}")
    rng = generator(params.seed)
    replaced, swapped = [], {}
    for column in columns:
        values = numeric_values(data, column, "rank swapping")
        present = int((~np.isnan(values)).sum())
        window = max(1, int(params.percent / 100.0 * present))
        out = rank_swap_values(values, window, rng)
        swapped[column] = int(np.count_nonzero((out != values) & ~np.isnan(values)))
        series = pl.Series(column, out).fill_nan(None)
        if data.schema[column].is_integer():
            series = series.cast(data.schema[column])
        replaced.append(series)
    return RankSwapResult(data.with_columns(replaced), params, swapped)
