"""PRAM, the post-randomisation method, for categorical variables (PDPC 3.6; sdcMicro `pram`).

Gouweleeuw, Kooiman, Willenborg & de Wolf (1998), "Post randomisation for statistical
disclosure control: theory and implementation", J. Official Statistics 14(4): each
record's category i is replaced by j with probability R[i, j], independently.  An
intruder can no longer trust any single value, while a person who knows R can still
estimate the original frequencies.

The matrix is made *invariant* so that the expected frequencies stay as they were
(no correction needed in analysis): from a base matrix P that keeps a category with
probability `retain` and moves it to each other category with equal probability, with
π the observed category shares,

    Q[k, l] = P[l, k]·π_l / Σ_j P[j, k]·π_j,     R = P·Q,

and then π'R = π' (Kooiman, Willenborg & Gouweleeuw 1997, "PRAM: a method for
disclosure limitation of microdata", Statistics Netherlands).  Missing values are not
changed.  The matrix may be published (it holds no key); the seed is never reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import FloatArray, generator, require_columns

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PramParams:
    column: str
    retain: float = 0.8  # P's diagonal: chance that the base matrix keeps a category
    seed: int | None = None


@dataclass(frozen=True)
class PramResult:
    data: pl.DataFrame
    params: PramParams
    categories: tuple[str, ...]
    transition: Matrix  # the invariant R actually used (rows: from, columns: to)
    changed: int  # records whose category changed


def base_matrix(categories: int, retain: float) -> Matrix:
    """P: `retain` on the diagonal, the rest spread evenly over the other categories."""
    if not 0.0 < retain <= 1.0:
        raise EngineInputError(f"PRAM: retain must be in (0, 1], not {retain}")
    if categories == 1:
        return np.ones((1, 1))
    off = (1.0 - retain) / (categories - 1)
    matrix: Matrix = np.full((categories, categories), off)
    np.fill_diagonal(matrix, retain)
    return matrix


def invariant_matrix(base: Matrix, shares: FloatArray) -> Matrix:
    """R = P·Q with Q[k, l] = P[l, k]·π_l / Σ_j P[j, k]·π_j, so that π'R = π'."""
    weighted = base * shares[:, None]  # [l, k] = P[l, k]·π_l
    arriving = weighted.sum(axis=0)  # Σ_j P[j, k]·π_j
    q = np.divide(
        weighted.T, arriving[:, None], out=np.zeros_like(weighted), where=arriving[:, None] > 0
    )
    result: Matrix = base @ q
    return result


def pram(data: pl.DataFrame, params: PramParams) -> PramResult:
    """Post-randomise one categorical column with the invariant matrix (seeded)."""
    (column,) = require_columns(data, [params.column], "PRAM")
    text = data.get_column(column).cast(pl.String)
    present = text.drop_nulls()
    if present.len() == 0:
        raise EngineInputError(f"PRAM: {column!r} has no values")
    categories = present.unique().sort()
    physical = text.cast(pl.Enum(categories.to_list())).to_physical()
    observed = text.is_not_null().to_numpy()
    codes = physical.fill_null(0).cast(pl.Int64).to_numpy()
    shares = np.bincount(codes[observed], minlength=categories.len()) / int(observed.sum())
    transition = invariant_matrix(base_matrix(categories.len(), params.retain), shares)
    rng = generator(params.seed)
    cumulative = np.cumsum(transition, axis=1)
    draws = rng.random(codes.size)
    moved = np.minimum((draws[:, None] > cumulative[codes]).sum(axis=1), categories.len() - 1)
    new_codes = np.where(observed, moved, codes)
    labels = categories.to_list()
    values = [labels[c] if ok else None for c, ok in zip(new_codes, observed, strict=True)]
    out = pl.Series(column, values, dtype=pl.String)
    return PramResult(
        data=data.with_columns(out),
        params=params,
        categories=tuple(labels),
        transition=transition,
        changed=int(np.count_nonzero((new_codes != codes) & observed)),
    )
