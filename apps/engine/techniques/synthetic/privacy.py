"""Utility and privacy checks of a synthetic release, against a held-back control set.

The generator learns from the *training* rows only; a random *control* share of the
original is held back.  An attack that works as well on control people (never seen by
the generator) as on training people reveals nothing about the training data, so each
attack's risk is the excess of its success on training targets over control targets
(Giomi, Boenisch, Wehmeyer & Tasnádi 2022, "A unified framework for quantifying privacy
risk in synthetic data", PoPETs 2023(2), the method of the `anonymeter` package,
implemented here because that package pins numpy < 1.27):

    risk = (success on training − success on control) / (1 − success on control),

clipped at 0.  Targets are drawn equally from both sets, so their rates compare.

* singling out: predicates taken from the synthetic data, univariate ("value = v" for a
  value occurring once there, "x ≤ min" / "x ≥ max" for numbers) and multivariate
  (three columns of a random synthetic record), succeed when they match exactly one
  record of the (equal-sized) target set;
* linkability: the columns are split in two halves; a target is linked when its nearest
  synthetic record by the first half is also its nearest by the second half;
* inference: the secret column is guessed from the nearest synthetic record by the other
  columns; success = same category (numbers: within 5 % of the true value).

Distance to closest record (DCR): for each synthetic record, the distance to the nearest
training and the nearest control record (equal-sized samples; numbers standardised,
categories one-hot): the share closer to training should be about one half, and exact
copies of training records are counted.  Utility: per column, 1 − total variation
distance between training and synthetic marginals; for every pair, the same on the
two-way table (numbers in ten quantile bins of the training data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import polars as pl

from apps.engine.techniques._common import FloatArray, IntArray
from apps.engine.techniques.measure import _linkage_space


@dataclass(frozen=True)
class AttackResult:
    attack: str
    targets: int
    success_training: float
    success_control: float
    risk: float  # Giomi et al. 2022: excess success over control, 0..1


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
    attacks: tuple[AttackResult, ...]


def excess_risk(training: float, control: float) -> float:
    """(r_train − r_control) / (1 − r_control), clipped to [0, 1] (Giomi et al. 2022, eq. 1)."""
    if control >= 1.0:
        return 0.0
    return float(min(1.0, max(0.0, (training - control) / (1.0 - control))))


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


def _predicates(synthetic: pl.DataFrame, columns: Sequence[str]) -> list[pl.Expr]:
    found: list[pl.Expr] = []
    for column in columns:
        series = synthetic.get_column(column).drop_nulls()
        if series.len() == 0:
            continue
        if series.dtype.is_numeric():
            found += [pl.col(column) <= series.min(), pl.col(column) >= series.max()]
        counts = series.value_counts()
        for value in counts.filter(pl.col("count") == 1).get_column(column).to_list():
            found.append(pl.col(column) == value)
    return found


def _multivariate_predicates(
    synthetic: pl.DataFrame, columns: Sequence[str], count: int, rng: np.random.Generator
) -> list[pl.Expr]:
    """Conjunctions on 3 random columns of random synthetic records (anonymeter's
    multivariate mode): a category must be equal; a number at or beyond the record's
    value, on the side away from the median."""
    found: list[pl.Expr] = []
    width = min(3, len(columns))
    for row in rng.integers(synthetic.height, size=count):
        terms = []
        for j in rng.choice(len(columns), size=width, replace=False):
            column = columns[int(j)]
            series = synthetic.get_column(column)
            value = series[int(row)]
            if value is None:
                terms.append(pl.col(column).is_null())
            elif series.dtype.is_numeric():
                numbers = series.cast(pl.Float64).to_numpy()
                above = bool(numbers[int(row)] >= np.nanmedian(numbers))
                terms.append(pl.col(column) >= value if above else pl.col(column) <= value)
            else:
                terms.append(pl.col(column) == value)
        predicate = terms[0]
        for term in terms[1:]:
            predicate = predicate & term
        found.append(predicate)
    return found


def singling_out(
    targets_t: pl.DataFrame,
    targets_c: pl.DataFrame,
    synthetic: pl.DataFrame,
    columns: Sequence[str],
    rng: np.random.Generator,
) -> AttackResult:
    predicates = _predicates(synthetic, columns) + _multivariate_predicates(
        synthetic, columns, targets_t.height, rng
    )
    if not predicates:
        return AttackResult("singling out", 0, 0.0, 0.0, 0.0)
    hits_t = targets_t.select(p.sum().alias(str(i)) for i, p in enumerate(predicates)).row(0)
    hits_c = targets_c.select(p.sum().alias(str(i)) for i, p in enumerate(predicates)).row(0)
    rate_t = float(np.mean([h == 1 for h in hits_t]))
    rate_c = float(np.mean([h == 1 for h in hits_c]))
    return AttackResult(
        "singling out", len(predicates), rate_t, rate_c, excess_risk(rate_t, rate_c)
    )


def linkability(
    targets_t: pl.DataFrame,
    targets_c: pl.DataFrame,
    synthetic: pl.DataFrame,
    columns: Sequence[str],
) -> AttackResult:
    half = max(1, len(columns) // 2)
    first, second = list(columns[:half]), list(columns[half:])
    if not second:
        return AttackResult("linkability", 0, 0.0, 0.0, 0.0)
    rates = []
    for targets in (targets_t, targets_c):
        s1, q1 = _points([synthetic, targets], first)
        s2, q2 = _points([synthetic, targets], second)
        _, by_first = _nearest(s1, q1)
        _, by_second = _nearest(s2, q2)
        rates.append(float(np.mean(by_first == by_second)))
    return AttackResult("linkability", targets_t.height, rates[0], rates[1], excess_risk(*rates))


def inference(
    targets_t: pl.DataFrame,
    targets_c: pl.DataFrame,
    synthetic: pl.DataFrame,
    columns: Sequence[str],
    secret: str,
) -> AttackResult:
    aux = [c for c in columns if c != secret]
    rates = []
    for targets in (targets_t, targets_c):
        records, queries = _points([synthetic, targets], aux)
        _, nearest = _nearest(records, queries)
        guess = synthetic.get_column(secret).gather(nearest)
        truth = targets.get_column(secret)
        if truth.dtype.is_numeric() and guess.dtype.is_numeric():
            t, g = truth.cast(pl.Float64).to_numpy(), guess.cast(pl.Float64).to_numpy()
            right = np.abs(g - t) <= 0.05 * np.abs(t)
        else:
            right = (
                truth.cast(pl.String).fill_null("\0") == guess.cast(pl.String).fill_null("\0")
            ).to_numpy()
        rates.append(float(np.mean(right)))
    return AttackResult("inference", targets_t.height, rates[0], rates[1], excess_risk(*rates))
