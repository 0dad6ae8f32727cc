"""What the intruder holds and what the release shows, in one coded space.

The intruder holds a target's original quasi-identifiers and knows how the release
generalized them (the recipient summary publishes every generalization), so the target
is seen through the same mapping as the release: each original value becomes its
released label (`QuasiIdentifier`).  The release is reduced to its distinct
quasi-identifier tuples with their record counts (`Released`): bounded by the number of
released classes, not of rows, and read with one streaming group-by.

Comparison rules, per quasi-identifier:

* a column whose released values are numbers (perturbed or left as they were) is
  compared as a number: equal, or at a distance standardized by the release's spread;
* every other column is compared as text; a missing value is a value of its own
  (METHOD step 4), as in the release's own risk figures;
* a released ``*`` that the column's mapping does not produce (no original value is
  generalized to ``*`` at the chosen level) is a suppressed cell, and matches any value:
  the intruder rule of local suppression (techniques/local_suppression/rules.py).  With
  ``blank_is_wildcard`` a missing released value is read the same way (local
  suppression's blanks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy import sparse

from apps.engine.errors import EngineInputError, preview
from apps.engine.hierarchies import Hierarchy

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

MISSING = "\0missing"
SUPPRESSED = "*"
#: Numbers of a sensitive column with more distinct values are compared by decile.
SENSITIVE_BINS = 10


@dataclass(frozen=True)
class QuasiIdentifier:
    """A quasi-identifier and how an original value becomes its released value.

    ``labels`` maps an original value, as text (``None`` for missing), to its released
    label; ``None`` means the column is released as it is (or perturbed row by row)."""

    column: str
    labels: Mapping[str | None, str | None] | None = None

    @classmethod
    def from_hierarchy(cls, hierarchy: Hierarchy, level: int) -> QuasiIdentifier:
        """The mapping the apply step uses at ``level`` (missing: its own group, or the
        single top value at the top level)."""
        labels: dict[str | None, str | None] = {
            leaf: hierarchy.generalize(leaf, level) for leaf in hierarchy.leaves
        }
        labels[None] = hierarchy.generalize(None, level)
        return cls(hierarchy.column, MappingProxyType(labels))

    def produces(self, label: str) -> bool:
        return self.labels is not None and label in set(self.labels.values())

    def apply(self, values: pl.Series) -> pl.Series:
        """The released labels of original values (as text)."""
        text = values.cast(pl.String)
        if self.labels is None:
            return text
        # A missing value stays missing unless the mapping says otherwise (METHOD step 4).
        labels = {None: None, **self.labels}
        unknown = [v for v in text.unique().to_list() if v not in labels]
        if unknown:
            raise EngineInputError(
                f"the generalization of {self.column!r} does not cover {preview(unknown)}"
            )
        return text.replace_strict(labels, return_dtype=pl.String)


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype.is_temporal()


def _as_number(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype.is_temporal():
        return expr.cast(pl.Int64).cast(pl.Float64)
    return expr.cast(pl.Float64)


@dataclass(frozen=True)
class SensitiveCoding:
    """A sensitive column's released values as codes 0..n-1 (numbers: their decile)."""

    column: str
    labels: tuple[str, ...]  # what each code stands for
    edges: FloatArray | None  # decile edges for numbers, None for categories
    counts: sparse.csr_matrix  # (released tuples × codes) records

    def code(self, values: pl.Series) -> IntArray:
        """Codes of values (original or released); -1 for a value the release lacks."""
        if self.edges is not None:
            numbers = values.cast(pl.Float64, strict=False).fill_null(np.nan).to_numpy()
            binned = np.searchsorted(self.edges[1:-1], numbers, side="right").astype(np.int64)
            return np.where(np.isnan(numbers), len(self.labels) - 1, binned)
        index = {label: i for i, label in enumerate(self.labels)}
        text = values.cast(pl.String).fill_null(MISSING)
        coded: IntArray = (
            text.replace_strict(index, default=-1, return_dtype=pl.Int64)
            .to_numpy()
            .astype(np.int64)
        )
        return coded


@dataclass(frozen=True)
class Released:
    """The release as distinct quasi-identifier tuples with their record counts."""

    quasi: tuple[str, ...]
    categorical: tuple[str, ...]
    numeric: tuple[str, ...]
    codes: IntArray  # (tuples × categorical) codes into `dictionaries`
    wild: BoolArray  # (tuples × categorical) a suppressed cell, matching any value
    numbers: FloatArray  # (tuples × numeric), standardized
    counts: IntArray  # records per tuple
    dictionaries: tuple[dict[str, int], ...]
    centre: FloatArray
    scale: FloatArray
    far: FloatArray  # where a missing number sits (3 spreads past the range)
    sensitive: Mapping[str, SensitiveCoding] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return int(self.counts.sum())

    @property
    def tuples(self) -> int:
        return int(self.counts.size)

    def key(self, cat: IntArray, num: FloatArray) -> tuple[float, ...]:
        return (*cat.tolist(), *num.tolist())

    @cached_property
    def index(self) -> dict[tuple[float, ...], int]:
        """Each distinct tuple's position, by its key."""
        return {self.key(self.codes[u], self.numbers[u]): u for u in range(self.tuples)}


def _key_expressions(
    quasi: Sequence[str], numeric: Sequence[str], schema: Mapping[str, pl.DataType]
) -> list[pl.Expr]:
    return [
        _as_number(pl.col(q), schema[q]).alias(q)
        if q in numeric
        else pl.col(q).cast(pl.String).fill_null(MISSING).alias(q)
        for q in quasi
    ]


def read_release(
    released: pl.DataFrame | pl.LazyFrame,
    quasi: Sequence[QuasiIdentifier],
    sensitive: Sequence[str],
    *,
    blank_is_wildcard: bool = False,
) -> Released:
    """Group the release by its quasi-identifiers (one streaming pass per sensitive column)."""
    frame = released.lazy()
    schema = frame.collect_schema()
    names = [q.column for q in quasi]
    missing = [c for c in [*names, *sensitive] if c not in schema]
    if missing:
        raise EngineInputError(f"the release has no column {preview(missing)}")
    numeric = tuple(q for q in names if _is_numeric(schema[q]))
    categorical = tuple(q for q in names if q not in numeric)
    keys = _key_expressions(names, numeric, schema)
    grouped = (
        frame.select(keys)
        .group_by(names)
        .agg(pl.len().alias("__count"))
        .collect(engine="streaming")
        .sort(names, nulls_last=True)
        .with_row_index("__u")
    )
    dictionaries = tuple(
        {v: i for i, v in enumerate(sorted(set(grouped.get_column(c).to_list())))}
        for c in categorical
    )
    codes = np.column_stack(
        [
            np.array([d[v] for v in grouped.get_column(c).to_list()], dtype=np.int64)
            for c, d in zip(categorical, dictionaries, strict=True)
        ]
        or [np.zeros(grouped.height, dtype=np.int64)]
    )[:, : len(categorical)]
    by_name = {q.column: q for q in quasi}
    wild = np.zeros(codes.shape, dtype=bool)
    for j, (c, d) in enumerate(zip(categorical, dictionaries, strict=True)):
        if SUPPRESSED in d and not by_name[c].produces(SUPPRESSED):
            wild[:, j] |= codes[:, j] == d[SUPPRESSED]
        if blank_is_wildcard and MISSING in d:
            wild[:, j] |= codes[:, j] == d[MISSING]
    raw = np.column_stack(
        [grouped.get_column(c).cast(pl.Float64).fill_null(np.nan).to_numpy() for c in numeric]
        or [np.zeros(grouped.height)]
    )[:, : len(numeric)]
    counts = grouped.get_column("__count").to_numpy().astype(np.int64)
    centre, scale, far = _standardization(raw, counts)
    coded = Released(
        quasi=tuple(names),
        categorical=categorical,
        numeric=numeric,
        codes=codes,
        wild=wild,
        numbers=_standardize(raw, centre, scale, far),
        counts=counts,
        dictionaries=dictionaries,
        centre=centre,
        scale=scale,
        far=far,
    )
    coded_sensitive = {
        s: _sensitive(frame, schema, grouped, names, numeric, keys, s) for s in sensitive
    }
    return replace(coded, sensitive=MappingProxyType(coded_sensitive))


def _standardization(
    raw: FloatArray, counts: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    d = raw.shape[1]
    centre, scale, far = np.zeros(d), np.ones(d), np.zeros(d)
    for j in range(d):
        ok = ~np.isnan(raw[:, j])
        if not ok.any():
            continue
        x, w = raw[ok, j], counts[ok].astype(np.float64)
        centre[j] = float(np.average(x, weights=w))
        spread = float(np.sqrt(np.average((x - centre[j]) ** 2, weights=w)))
        scale[j] = spread if spread > 0 else 1.0
        far[j] = float(np.abs(x - centre[j]).max() / scale[j]) + 3.0
    return centre, scale, far


def _standardize(
    raw: FloatArray, centre: FloatArray, scale: FloatArray, far: FloatArray
) -> FloatArray:
    out: FloatArray = np.where(np.isnan(raw), far, (raw - centre) / scale)
    return out


def _sensitive(
    frame: pl.LazyFrame,
    schema: Mapping[str, pl.DataType],
    grouped: pl.DataFrame,
    names: Sequence[str],
    numeric: Sequence[str],
    keys: list[pl.Expr],
    column: str,
) -> SensitiveCoding:
    dtype = schema[column]
    edges: FloatArray | None = None
    if dtype.is_numeric():
        distinct = frame.select(pl.col(column).n_unique()).collect().item()
        if distinct > SENSITIVE_BINS:
            quantiles = frame.select(
                pl.col(column).cast(pl.Float64).quantile(q, "linear").alias(str(i))
                for i, q in enumerate(np.linspace(0, 1, SENSITIVE_BINS + 1))
            ).collect()
            edges = np.unique(np.array(quantiles.row(0), dtype=np.float64))
    if edges is not None:
        bins = len(edges) - 1
        labels = tuple(f"{edges[i]:g} to {edges[i + 1]:g}" for i in range(bins)) + ("missing",)
        number = pl.col(column).cast(pl.Float64)
        # The bin is the count of inner edges at or below the value (searchsorted, right).
        value = (
            pl.when(number.is_null())
            .then(pl.lit(bins, dtype=pl.Int64))
            .otherwise(pl.sum_horizontal([(number >= e).cast(pl.Int64) for e in edges[1:-1]]))
            if bins > 1
            else pl.when(number.is_null())
            .then(pl.lit(1, dtype=pl.Int64))
            .otherwise(pl.lit(0, dtype=pl.Int64))
        )
    else:
        value = pl.col(column).cast(pl.String).fill_null(MISSING)
    table = (
        frame.select([*keys, value.alias("__s")])
        .group_by([*names, "__s"])
        .agg(pl.len().alias("__n"))
        .collect(engine="streaming")
        .join(grouped.select([*names, "__u"]), on=list(names), nulls_equal=True)
    )
    if edges is None:
        labels = tuple(sorted(set(table.get_column("__s").to_list())))
        index = {label: i for i, label in enumerate(labels)}
        codes = np.array([index[v] for v in table.get_column("__s").to_list()], dtype=np.int64)
    else:
        codes = table.get_column("__s").to_numpy().astype(np.int64)
    counts = sparse.csr_matrix(
        (
            table.get_column("__n").to_numpy().astype(np.int64),
            (table.get_column("__u").to_numpy().astype(np.int64), codes),
        ),
        shape=(grouped.height, len(labels)),
    )
    return SensitiveCoding(column, labels, edges, counts)


@dataclass(frozen=True)
class Seen:
    """Targets as the release codes them: what the intruder looks up."""

    codes: IntArray  # (targets × categorical); -1: a label the release does not hold
    numbers: FloatArray  # (targets × numeric), standardized as the release


def see(
    values: pl.DataFrame, quasi: Sequence[QuasiIdentifier], release: Released, *, mapped: bool
) -> Seen:
    """Code rows as the release does: original rows through their mapping (``mapped``), or
    rows already in released form (an aligned release's own rows, drawn descriptions)."""
    by_name = {q.column: q for q in quasi}
    # A number or date left as it is keeps its type (a date compares as its day number).
    label = {
        c: (
            by_name[c].apply(values.get_column(c))
            if mapped and not (by_name[c].labels is None and c in release.numeric)
            else values.get_column(c)
        )
        for c in release.quasi
    }
    codes = np.column_stack(
        [
            np.array(
                [d.get(v, -1) for v in label[c].cast(pl.String).fill_null(MISSING).to_list()],
                dtype=np.int64,
            )
            for c, d in zip(release.categorical, release.dictionaries, strict=True)
        ]
        or [np.zeros(values.height, dtype=np.int64)]
    )[:, : len(release.categorical)]
    raw = []
    for c in release.numeric:
        series = label[c]
        if series.dtype.is_temporal():
            series = series.cast(pl.Int64)
        numbers = series.cast(pl.Float64, strict=False)
        bad = series.filter(numbers.is_null() & series.is_not_null()).head(3).to_list()
        if bad:
            raise EngineInputError(
                f"{c!r} is released as numbers but the target's value(s) {bad} are not numbers"
            )
        raw.append(numbers.fill_null(np.nan).to_numpy())
    matrix = np.column_stack(raw or [np.zeros(values.height)])[:, : len(release.numeric)]
    return Seen(codes, _standardize(matrix, release.centre, release.scale, release.far))
