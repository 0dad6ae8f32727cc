"""A Chow-Liu tree synthesizer: the best tree-shaped Bayesian network of the data.

Chow & Liu (1968), "Approximating discrete probability distributions with dependence
trees", IEEE Trans. Information Theory 14(3): among all distributions in which each
variable depends on at most one other, the one closest to the data (Kullback-Leibler)
is the maximum spanning tree of the pairwise mutual information.  This is PrivBayes's
network of degree 1 (Zhang et al. 2017, ACM TODS 42(4)) without its privacy noise.
Fitting: numeric variables are cut into quantile bins (at most `bins`), the mutual
information of every pair is counted, the maximum spanning tree is grown from the
first variable (Prim), and each variable's frequencies are counted given its parent.
Sampling goes down the tree; a numeric value is drawn uniformly inside its bin, so
synthetic numbers are not copies of real ones.  Every marginal and every parent-child
pair is reproduced in expectation; other pairs only through the tree.

Why our own: the PyPI candidates were judged for offline use with our numpy 2 and
pandas 3 and no torch.  SDV, synthcity and ydata-synthetic need torch or tensorflow;
DataSynthesizer (PrivBayes) is unmaintained since 2021 and pulls matplotlib, seaborn
and scikit-learn; anonymeter (the evaluation) pins numpy < 1.27.  This model is
60 lines, exact and seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import FloatArray, IntArray

MISSING = "\0missing"


@dataclass(frozen=True)
class Variable:
    """How one column is coded: categories (text) or numeric bin edges."""

    name: str
    dtype: pl.DataType
    labels: tuple[str, ...]  # categories (text columns), or "" per bin
    edges: FloatArray | None  # numeric: bin edges (len = bins + 1); a last code = missing


@dataclass(frozen=True)
class ChowLiuModel:
    variables: tuple[Variable, ...]
    parents: tuple[int | None, ...]  # parent index per variable (None = root)
    order: tuple[int, ...]  # sampling order (parents first)
    tables: tuple[FloatArray, ...]  # P(child | parent): parent categories × child categories


def _code(series: pl.Series, bins: int) -> tuple[Variable, IntArray]:
    if series.dtype.is_numeric() and series.drop_nulls().n_unique() > bins:
        values = series.cast(pl.Float64).to_numpy()
        present = values[~np.isnan(values)]
        edges = np.unique(np.quantile(present, np.linspace(0.0, 1.0, bins + 1)))
        codes = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.size - 2)
        codes = np.where(np.isnan(values), edges.size - 1, codes)
        labels = ("",) * edges.size  # edges.size - 1 bins + missing
        return Variable(series.name, series.dtype, labels, edges), codes.astype(np.int64)
    text = series.cast(pl.String).fill_null(MISSING)
    labels = tuple(sorted(set(text.to_list())))
    codes = text.cast(pl.Enum(list(labels))).to_physical().cast(pl.Int64).to_numpy()
    return Variable(series.name, series.dtype, labels, None), codes


def mutual_information(a: IntArray, b: IntArray) -> float:
    """I(A; B) = Σ p(a, b) log2 p(a, b) / (p(a) p(b)), from counts."""
    joint = np.zeros((int(a.max()) + 1, int(b.max()) + 1))
    np.add.at(joint, (a, b), 1.0)
    joint /= joint.sum()
    outer = joint.sum(axis=1, keepdims=True) @ joint.sum(axis=0, keepdims=True)
    mask = joint > 0
    return float((joint[mask] * np.log2(joint[mask] / outer[mask])).sum())


def fit(data: pl.DataFrame, columns: Sequence[str], bins: int = 20) -> ChowLiuModel:
    """Code the columns, grow the maximum mutual-information tree, count the tables."""
    if data.height == 0:
        raise EngineInputError("synthetic data: no rows to learn from")
    if bins < 2:
        raise EngineInputError("synthetic data: at least 2 bins per numeric variable")
    coded = [_code(data.get_column(c), bins) for c in columns]
    variables = tuple(v for v, _ in coded)
    codes = [c for _, c in coded]
    m = len(columns)
    weights = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            weights[i, j] = weights[j, i] = mutual_information(codes[i], codes[j])
    parents: list[int | None] = [None] * m
    order = [0]
    best = weights[0].copy()
    best_from = np.zeros(m, dtype=np.int64)
    while len(order) < m:
        outside = [j for j in range(m) if j not in order]
        j = max(outside, key=lambda v: (best[v], -v))
        parents[j] = int(best_from[j])
        order.append(j)
        for v in outside:
            if weights[j, v] > best[v]:
                best[v], best_from[v] = weights[j, v], j
    tables = []
    for j in range(m):
        size = len(variables[j].labels)
        parent = parents[j]
        rows = np.zeros_like(codes[j]) if parent is None else codes[parent]
        height = 1 if parent is None else len(variables[parent].labels)
        counts = np.zeros((height, size))
        np.add.at(counts, (rows, codes[j]), 1.0)
        totals = counts.sum(axis=1, keepdims=True)
        tables.append(
            np.divide(counts, totals, out=np.full_like(counts, 1.0 / size), where=totals > 0)
        )
    return ChowLiuModel(variables, tuple(parents), tuple(order), tuple(tables))


def sample(model: ChowLiuModel, rows: int, rng: np.random.Generator) -> pl.DataFrame:
    """Draw `rows` records down the tree (parents before children)."""
    codes: dict[int, IntArray] = {}
    for j in model.order:
        parent = model.parents[j]
        given = np.zeros(rows, dtype=np.int64) if parent is None else codes[parent]
        cumulative = np.cumsum(model.tables[j], axis=1)[given]
        draws = rng.random(rows)[:, None]
        codes[j] = np.minimum((draws > cumulative).sum(axis=1), cumulative.shape[1] - 1)
    columns = []
    for j, variable in enumerate(model.variables):
        columns.append(_decode(variable, codes[j], rng))
    return pl.DataFrame(columns)


def _decode(variable: Variable, codes: IntArray, rng: np.random.Generator) -> pl.Series:
    if variable.edges is None:
        labels: npt.NDArray[np.object_] = np.array(variable.labels, dtype=object)
        text = [None if v == MISSING else v for v in labels[codes]]
        series = pl.Series(variable.name, text, dtype=pl.String)
        return series if variable.dtype == pl.String else series.cast(variable.dtype, strict=False)
    edges = variable.edges
    missing = codes == edges.size - 1
    bins = np.minimum(codes, edges.size - 2)
    values = edges[bins] + rng.random(codes.size) * (edges[bins + 1] - edges[bins])
    if variable.dtype.is_integer():
        values = np.round(values)
    values = np.where(missing, np.nan, values)
    return pl.Series(variable.name, values).fill_nan(None).cast(variable.dtype, strict=False)
