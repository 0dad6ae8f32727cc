"""What drives the re-identification risk (Step 4): per quasi-identifier, and the smallest
combinations of quasi-identifiers that single records out.

"Max risk without X" rarely discriminates on real data: leave out any one quasi-identifier
and some record is still unique, so every bar reads 1. These measures do:

* per quasi-identifier, the figures without it: average risk, unique records and records at
  risk (above the target) — :func:`leave_one_out`;
* ARX's attribute-level measures (ARX ``RiskModelAttributes``; Motwani & Xu 2007):
  **distinction**, distinct values over records, and **separation**, the share of pairs of
  records the variable tells apart — :func:`distinction`, :func:`separation`;
* **minimal sample uniques** (MSUs; Elliot, Manning & Ford 2002, SUDA): for a record unique
  on all the quasi-identifiers, the smallest sets of quasi-identifiers on which it is already
  unique (no proper subset is). A record with an MSU of one or two variables is at risk from
  anyone who knows just those. Each MSU of size ``s`` among ``d`` variables, searched up to
  size ``M``, scores ``prod_{i=s}^{M-1} (d - i)`` (SUDA's weighting: small MSUs count more),
  and a variable's **contribution** is the share of the total score carried by MSUs that
  contain it (an MSU counts for each of its variables, so shares can add up to more than
  1), as sdcMicro's ``suda2`` reports it — :func:`minimal_sample_uniques`.

Everything works on the distinct-tuple table (counts per combination of values), never on
the raw rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from apps.engine.encoded import COUNT_COLUMN, EncodedData
from apps.engine.risk import records_at_risk, risk_profile


def _sizes_on(encoded: EncodedData, columns: Sequence[str]) -> pl.DataFrame:
    """The tuples table with the size of each tuple's class on ``columns`` alone."""
    if not columns:
        return encoded.tuples.with_columns(pl.lit(encoded.rows).alias("_size"))
    return encoded.tuples.with_columns(
        pl.col(COUNT_COLUMN).sum().over(list(columns)).alias("_size")
    )


def distinction(encoded: EncodedData, column: str) -> float:
    """Distinct values of the variable over records (ARX: distinction); 0 when empty."""
    if encoded.rows == 0:
        return 0.0
    present = encoded.tuples.group_by(column).agg(pl.col(COUNT_COLUMN).sum())
    return present.height / encoded.rows


def separation(encoded: EncodedData, column: str) -> float:
    """Share of pairs of records whose values of the variable differ (ARX: separation):
    ``1 - sum_v c_v (c_v - 1) / (n (n - 1))``; 0 with fewer than two records."""
    n = encoded.rows
    if n < 2:
        return 0.0
    counts = (
        encoded.tuples.group_by(column)
        .agg(pl.col(COUNT_COLUMN).sum().cast(pl.Float64))
        .get_column(COUNT_COLUMN)
        .to_numpy()
    )
    same = float((counts * (counts - 1)).sum())
    return 1.0 - same / (n * (n - 1))


@dataclass(frozen=True)
class LeftOut:
    """The data's risk figures with one quasi-identifier left out."""

    left_out: str
    max_risk: float
    average_risk: float
    strict_average_risk: float
    uniques: int
    records_at_risk: int | None  # records whose 1/f exceeds the target (None: no target)


def leave_one_out(encoded: EncodedData, target: float | None) -> list[LeftOut]:
    """Per quasi-identifier, the risk figures on the others."""
    out = []
    for column in encoded.quasi:
        rest = [q for q in encoded.quasi if q != column]
        if rest:
            sizes = (
                encoded.tuples.group_by(rest)
                .agg(pl.col(COUNT_COLUMN).sum())
                .get_column(COUNT_COLUMN)
                .to_numpy()
            )
        else:
            sizes = np.asarray([encoded.rows])
        profile = risk_profile(sizes)
        at_risk = records_at_risk(sizes, target).rows if target is not None else None
        out.append(
            LeftOut(
                left_out=column,
                max_risk=profile.max_risk,
                average_risk=profile.average_risk,
                strict_average_risk=profile.strict_average_risk,
                uniques=profile.uniques,
                records_at_risk=at_risk,
            )
        )
    return out


@dataclass(frozen=True)
class MinimalUniques:
    """Minimal sample uniques up to ``max_size`` variables (module docstring)."""

    max_size: int
    records_unique: int  # records unique on all the quasi-identifiers
    records_with_msu: int  # of those, with an MSU of at most max_size variables
    by_size: dict[int, int]  # MSU size -> number of MSUs
    contributions: dict[str, float]  # variable -> share of the total SUDA score
    msu_counts: dict[str, int]  # variable -> MSUs containing it
    combinations: list[tuple[tuple[str, ...], int]]  # MSU -> records, most records first


def suda_weight(size: int, variables: int, max_size: int) -> int:
    """SUDA's score of one MSU: ``prod_{i=size}^{max_size-1} (variables - i)``."""
    return math.prod(variables - i for i in range(size, max_size))


def minimal_sample_uniques(
    encoded: EncodedData, max_size: int = 3, top: int = 10
) -> MinimalUniques:
    """MSUs of the records unique on all quasi-identifiers, up to ``max_size`` variables."""
    quasi = list(encoded.quasi)
    d = len(quasi)
    max_size = max(1, min(max_size, d))
    tuples = encoded.tuples
    unique_mask = (tuples.get_column(COUNT_COLUMN) == 1).to_numpy()
    records_unique = int(unique_mask.sum())
    # unique_on[subset] = boolean mask over tuples: unique (a class of one record) on it.
    unique_on: dict[tuple[int, ...], np.ndarray] = {}
    has_msu = np.zeros(tuples.height, dtype=bool)
    per_combination: dict[tuple[int, ...], int] = {}
    by_size: dict[int, int] = {}
    scores = np.zeros(d, dtype=np.float64)
    msu_counts = np.zeros(d, dtype=np.int64)
    total = 0.0
    if records_unique:
        for size in range(1, max_size + 1):
            weight = suda_weight(size, d, max_size)
            for subset in itertools.combinations(range(d), size):
                columns = [quasi[j] for j in subset]
                sizes = _sizes_on(encoded, columns).get_column("_size").to_numpy()
                unique = (sizes == 1) & unique_mask
                unique_on[subset] = unique
                minimal = unique.copy()
                if size > 1:
                    for drop in itertools.combinations(subset, size - 1):
                        minimal &= ~unique_on[drop]
                count = int(minimal.sum())
                if not count:
                    continue
                has_msu |= minimal
                per_combination[subset] = count
                by_size[size] = by_size.get(size, 0) + count
                for j in subset:
                    scores[j] += weight * count
                    msu_counts[j] += count
                total += weight * count
    # A variable's share of the total score, counting every MSU it takes part in (so the
    # shares of several variables may add up to more than 1, as sdcMicro's do).
    contributions = {quasi[j]: (float(scores[j]) / total if total else 0.0) for j in range(d)}
    combinations = sorted(
        ((tuple(quasi[j] for j in s), n) for s, n in per_combination.items()),
        key=lambda item: (len(item[0]), -item[1], item[0]),
    )
    return MinimalUniques(
        max_size=max_size,
        records_unique=records_unique,
        records_with_msu=int(has_msu.sum()),
        by_size=dict(sorted(by_size.items())),
        contributions=contributions,
        msu_counts={quasi[j]: int(msu_counts[j]) for j in range(d)},
        combinations=combinations[:top],
    )


def default_msu_size(quasi_identifiers: int) -> int:
    """How large the MSUs searched: 3 variables, fewer when there are many quasi-
    identifiers (the number of combinations grows as d^size)."""
    if quasi_identifiers <= 15:
        return 3
    if quasi_identifiers <= 40:
        return 2
    return 1
