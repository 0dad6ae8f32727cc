"""Base-x rounding and top/bottom coding of numeric variables (PDPC 3.5, 3.6; seed 004).

Rounding to a base replaces a value by the nearest multiple of the base (PDPC's
"base-x rounding", e.g. incomes to the nearest 1,000); a value halfway rounds up.
Top and bottom coding replace every value above a ceiling (below a floor) by the
ceiling (floor), so that the rare extreme values (the 97-year-old, the top earner)
stop standing out; seed 004 treats ages over 89 as identifying and codes them "90+".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import FloatArray, numeric_values, require_columns


@dataclass(frozen=True)
class RoundingParams:
    columns: tuple[str, ...]
    base: float  # e.g. 5, 10, 1000


@dataclass(frozen=True)
class RoundingResult:
    data: pl.DataFrame
    params: RoundingParams
    changed: dict[str, int]  # values that moved, per column


def round_to_base(values: FloatArray, base: float) -> FloatArray:
    """Nearest multiple of `base` (halves up): base · floor(x / base + 1/2); NaN stays NaN."""
    if not base > 0:
        raise EngineInputError(f"rounding: the base must be positive, not {base}")
    rounded: FloatArray = base * np.floor(values / base + 0.5)
    return rounded


def base_rounding(data: pl.DataFrame, params: RoundingParams) -> RoundingResult:
    """Round each column of `params.columns` to the base; integers stay integers."""
    columns = require_columns(data, params.columns, "rounded")
    replaced, changed = [], {}
    for column in columns:
        values = numeric_values(data, column, "rounding")
        rounded = round_to_base(values, params.base)
        changed[column] = int(np.count_nonzero((rounded != values) & ~np.isnan(values)))
        series = pl.Series(column, rounded).fill_nan(None)
        if data.schema[column].is_integer() and float(params.base).is_integer():
            series = series.cast(data.schema[column])
        replaced.append(series)
    return RoundingResult(data.with_columns(replaced), params, changed)


@dataclass(frozen=True)
class TopBottomParams:
    """Values ≥ `top` become `top`, values ≤ `bottom` become `bottom` (either may be None).

    With `labels`, the column becomes text and the coded values read "90+" / "<=15".
    """

    column: str
    top: float | None = None
    bottom: float | None = None
    labels: bool = False


@dataclass(frozen=True)
class TopBottomResult:
    data: pl.DataFrame
    params: TopBottomParams
    top_coded: int
    bottom_coded: int


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def top_bottom_code(data: pl.DataFrame, params: TopBottomParams) -> TopBottomResult:
    """Replace the extremes by the ceiling and floor (seed 004's "90+")."""
    (column,) = require_columns(data, [params.column], "top/bottom-coded")
    if params.top is None and params.bottom is None:
        raise EngineInputError("top/bottom coding: give a top, a bottom, or both")
    if params.top is not None and params.bottom is not None and params.bottom >= params.top:
        raise EngineInputError("top/bottom coding: the bottom must be below the top")
    values = numeric_values(data, column, "top/bottom coding")
    high = values >= params.top if params.top is not None else np.zeros(values.size, bool)
    low = values <= params.bottom if params.bottom is not None else np.zeros(values.size, bool)
    coded = values.copy()
    if params.top is not None:
        coded[high] = params.top
    if params.bottom is not None:
        coded[low] = params.bottom
    series: pl.Series
    if params.labels:
        text = [None if np.isnan(v) else _number(v) for v in coded]
        for i in np.flatnonzero(high):
            text[i] = f"{_number(params.top or 0.0)}+"
        for i in np.flatnonzero(low):
            text[i] = f"<={_number(params.bottom or 0.0)}"
        series = pl.Series(column, text, dtype=pl.String)
    else:
        series = pl.Series(column, coded).fill_nan(None)
        if data.schema[column].is_integer():
            series = series.cast(data.schema[column])
    return TopBottomResult(data.with_columns(series), params, int(high.sum()), int(low.sum()))
