"""Utility and privacy checks of a synthetic release, against a held-back control set.

The generator learns from the *training* rows only; a random *control* share of the
original is held back (synthesize).  Privacy is tested by the attacks every release gets
(apps.engine.attacks.attack_synthetic): singling out, linkability (exact and nearest
match) and inference of the secret column, by an intruder holding a person's other
columns, each as success on training people (attack) vs held-back people (control) vs a
naive intruder, with 95 % intervals, the seed and the method's version.  A synthetic
record belongs to no one: a person's "own record" is a synthetic copy of them.

Distance to closest record (DCR), the holdout comparison of Platzer & Reutterer 2021
("Holdout-based fidelity and privacy assessment of mixed-type synthetic data", Frontiers
in Big Data 4): for each synthetic record, the distance to the nearest training and the
nearest control record (equal-sized samples; numbers standardised, categories one-hot):
the share closer to training should be about one half, and exact copies of training
records are counted.  Utility: per column, 1 − total variation distance between training
and synthetic marginals; for every pair, the same on the two-way table (numbers in ten
quantile bins of the training data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import polars as pl

from apps.engine.attacks import AttackReport
from apps.engine.techniques._common import FloatArray, IntArray
from apps.engine.techniques.measure import _linkage_space


@dataclass(frozen=True)
class SyntheticUtility:
    marginal: dict[str, float]  # 1 − TV distance per column
    pairwise: float  # mean over pairs of 1 − TV distance of the two-way table


@dataclass(frozen=True)
class SyntheticPrivacy:
    closer_to_training: float  # share of synthetic records nearer training than control
    exact_copies: int  # synthetic records identical to a training record
    # Shares of synthetic records identical to a record of an equal-sized training sample
    # and of the control set: a training share well above the control share means the
    # generator copies people rather than patterns.
    copies_of_training: float
    copies_of_control: float
    attacks: AttackReport  # the attacks of every release (apps.engine.attacks)


def _bins(reference: pl.Series, series: pl.Series) -> IntArray:
    if reference.dtype.is_numeric() and reference.n_unique() > 10:
        edges = np.unique(
            np.nanquantile(reference.cast(pl.Float64).to_numpy(), np.linspace(0, 1, 11))
        )
        values = series.cast(pl.Float64).to_numpy()
        coded = np.searchsorted(edges[1:-1], values, side="right")
        return np.where(np.isnan(values), edges.size, coded).astype(np.int64)
    labels = sorted(
        set(reference.cast(pl.String).fill_null("\0").to_list())
        | set(series.cast(pl.String).fill_null("\0").to_list())
    )
    text = series.cast(pl.String).fill_null("\0")
    return text.cast(pl.Enum(labels)).to_physical().cast(pl.Int64).to_numpy()


def _tv(a: IntArray, b: IntArray) -> float:
    size = int(max(a.max(initial=0), b.max(initial=0))) + 1
    p = np.bincount(a, minlength=size) / max(a.size, 1)
    q = np.bincount(b, minlength=size) / max(b.size, 1)
    return float(0.5 * np.abs(p - q).sum())


def utility(
    training: pl.DataFrame, synthetic: pl.DataFrame, columns: Sequence[str]
) -> SyntheticUtility:
    coded_t = {c: _bins(training[c], training[c]) for c in columns}
    coded_s = {c: _bins(training[c], synthetic[c]) for c in columns}
    marginal = {c: 1.0 - _tv(coded_t[c], coded_s[c]) for c in columns}
    pairs = []
    for a, b in combinations(columns, 2):
        width = int(max(coded_t[b].max(initial=0), coded_s[b].max(initial=0))) + 1
        pairs.append(1.0 - _tv(coded_t[a] * width + coded_t[b], coded_s[a] * width + coded_s[b]))
    return SyntheticUtility(marginal, float(np.mean(pairs)) if pairs else 1.0)


def _nearest(records: FloatArray, queries: FloatArray) -> tuple[FloatArray, IntArray]:
    """Distance to and index of each query's nearest record (brute force, in blocks).

    One-hot categories make the space wide (dozens of dimensions), where a k-d tree is
    slower than a matrix product; the first of tied records is taken.
    """
    norms = (records**2).sum(axis=1)
    distance = np.empty(queries.shape[0])
    index = np.empty(queries.shape[0], dtype=np.int64)
    for start in range(0, queries.shape[0], 512):
        block = queries[start : start + 512]
        squared = (block**2).sum(axis=1)[:, None] + norms[None, :] - 2.0 * block @ records.T
        index[start : start + 512] = np.argmin(squared, axis=1)
        distance[start : start + 512] = np.sqrt(np.maximum(squared.min(axis=1), 0.0))
    return distance, index


def _points(frames: list[pl.DataFrame], columns: Sequence[str]) -> list[FloatArray]:
    """Every frame in one linkage space (measure.py's: scaled and one-hot on them all)."""
    joined = pl.concat([f.select(columns) for f in frames], how="vertical_relaxed")
    points = _linkage_space(joined, joined, columns)[0]
    bounds = np.cumsum([0, *(f.height for f in frames)])
    return [points[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def distance_to_closest(
    training: pl.DataFrame, control: pl.DataFrame, synthetic: pl.DataFrame, columns: Sequence[str]
) -> tuple[float, int]:
    """(share of synthetic records closer to training than to control, exact copies)."""
    t, c, s = _points([training, control, synthetic], columns)
    to_t, _ = _nearest(t, s)
    to_c, _ = _nearest(c, s)
    closer = float(np.mean(np.where(to_t == to_c, 0.5, (to_t < to_c).astype(float))))
    return closer, exact_copies(training, synthetic, columns)


def exact_copies(original: pl.DataFrame, synthetic: pl.DataFrame, columns: Sequence[str]) -> int:
    """Synthetic records identical to some original record on every column."""

    def text(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.select(pl.col(c).cast(pl.String).fill_null("\0") for c in columns)

    return text(synthetic).join(text(original).unique(), on=list(columns), how="semi").height
