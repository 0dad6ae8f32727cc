"""Noise addition to numeric variables (PDPC 3.6 "data perturbation"; sdcMicro `addNoise`).

* additive (Brand 2002, "Microdata protection through noise addition"): y = x + e with
  e ~ N(0, (c·s_x)²), s_x the variable's standard deviation and c the scale (0.1 = noise
  of a tenth of a standard deviation).  The mean is kept in expectation; the variance
  grows by the factor (1 + c²) and correlations shrink by 1/√(1 + c²).
* multiplicative (Kim & Winkler 2003): y = x·(1 + e) with e ~ N(0, c²); each value
  moves by about c of itself, so large values (the ones that stand out) move most.

With `preserve_moments` (the default) the noisy column is then moved and rescaled
linearly so that its mean and variance equal the original's exactly (Kim 1986;
Tendick & Matloff 1994): z = x̄ + (y − ȳ)·s_x / s_y.  Correlations with other variables
still weaken by about 1/√(1 + c²).  Missing values stay missing.  A perturbed value is
not an exact match for an intruder's value: measure.py says which risk figure applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import (
    FloatArray,
    generator,
    numeric_values,
    require_columns,
)

NoiseKind = Literal["additive", "multiplicative"]


@dataclass(frozen=True)
class NoiseParams:
    columns: tuple[str, ...]
    kind: NoiseKind = "additive"
    scale: float = 0.1  # c: noise sd as a share of the variable's sd (additive) or value
    preserve_moments: bool = True
    seed: int | None = None  # never reported: it would let anyone remove the noise


@dataclass(frozen=True)
class NoiseResult:
    data: pl.DataFrame
    params: NoiseParams
    correlation: dict[str, float]  # per column: correlation of original and noisy values


def additive_noise(values: FloatArray, standard_normal: FloatArray, scale: float) -> FloatArray:
    """x + c·s_x·ε (Brand 2002), given standard normal draws ε; s_x = population sd."""
    sd = float(np.nanstd(values))
    noisy: FloatArray = values + scale * sd * standard_normal
    return noisy


def multiplicative_noise(
    values: FloatArray, standard_normal: FloatArray, scale: float
) -> FloatArray:
    """x·(1 + c·ε) (Kim & Winkler 2003), given standard normal draws ε."""
    noisy: FloatArray = values * (1.0 + scale * standard_normal)
    return noisy


def restore_moments(original: FloatArray, noisy: FloatArray) -> FloatArray:
    """x̄ + (y − ȳ)·s_x/s_y: the noisy values with the original's mean and variance exactly."""
    spread = float(np.nanstd(noisy))
    if spread == 0.0:
        return np.where(np.isnan(noisy), np.nan, float(np.nanmean(original)))
    restored: FloatArray = float(np.nanmean(original)) + (noisy - float(np.nanmean(noisy))) * (
        float(np.nanstd(original)) / spread
    )
    return restored


def add_noise(data: pl.DataFrame, params: NoiseParams) -> NoiseResult:
    """Perturb each column of `params.columns` independently (seeded)."""
    columns = require_columns(data, params.columns, "perturbed")
    if params.kind not in ("additive", "multiplicative"):
        raise EngineInputError(f"noise: unknown kind {params.kind!r}")
    if not params.scale > 0:
        raise EngineInputError(f"noise: the scale must be positive, not {params.scale}")
    rng = generator(params.seed)
    replaced, correlation = [], {}
    for column in columns:
        values = numeric_values(data, column, "noise")
        if np.isnan(values).all():  # nothing to perturb (no rows, or all missing)
            correlation[column] = 1.0
            continue
        draws = rng.standard_normal(values.size)
        noisy = (
            additive_noise(values, draws, params.scale)
            if params.kind == "additive"
            else multiplicative_noise(values, draws, params.scale)
        )
        if params.preserve_moments:
            noisy = restore_moments(values, noisy)
        present = ~np.isnan(values)
        correlation[column] = (
            float(np.corrcoef(values[present], noisy[present])[0, 1])
            if present.sum() > 1 and np.nanstd(values) > 0
            else 1.0
        )
        replaced.append(pl.Series(column, noisy).fill_nan(None))
    return NoiseResult(data.with_columns(replaced), params, correlation)
