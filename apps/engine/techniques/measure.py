"""Every technique is measured: risk under its rule, utility per variable (issue #18).

Risk.  Which figure applies depends on what the technique does to a value:

* *Exact-match* techniques publish values an intruder can match exactly: global
  recoding, rounding, top/bottom coding, microaggregation (cluster means are shared by
  ≥ k records), local suppression (a blank is a value of its own; local_suppression/
  rules.py).  Their risk is the Step 4 class-size risk, recomputed from the written
  file with frame.encode and risk.risk_profile (seed 000 step 4).
* *Perturbative* techniques (noise, rank swapping, PRAM, date shifting) publish values
  that are not exact: nearly every noisy record is "unique", yet no intruder can match
  it exactly, so class sizes say nothing.  Their figure is the share of records that
  distance-based record linkage re-identifies (Pagliuca & Seri 1999; Domingo-Ferrer &
  Torra 2001; sdcMicro's linkage measures): an intruder holding the original
  quasi-identifiers links each person to the nearest released record (numeric
  variables standardised, a category mismatch counting 1); a person is re-identified
  when the nearest is their own record, with credit 1/t when t records tie.  The
  expected share of correct links is the risk figure (compare it with the threshold,
  as a proportion of records re-identified).

Utility.  Per variable, before and after: missing values, mean and variance and the
correlation between original and released values (numeric), the total variation
distance between the two distributions (every variable: ½ Σ |p − q| over values or,
for numbers, over ten quantile bins of the original), and the share of values changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
from scipy.spatial import cKDTree

from apps.engine.errors import EngineInputError
from apps.engine.frame import encode
from apps.engine.risk import RiskProfile, encoded_class_sizes, risk_profile
from apps.engine.techniques._common import FloatArray, require_columns

RiskRule = Literal["exact_match", "record_linkage"]
RULE_OF_TECHNIQUE: dict[str, RiskRule] = {
    "generalization": "exact_match",
    "local_suppression": "exact_match",
    "rounding": "exact_match",
    "top_bottom_coding": "exact_match",
    "microaggregation": "exact_match",
    "aggregation": "exact_match",
    "noise": "record_linkage",
    "rank_swap": "record_linkage",
    "pram": "record_linkage",
    "date_shift": "record_linkage",
    "synthetic": "record_linkage",
}
RULE_EXPLANATION: dict[RiskRule, str] = {
    "exact_match": (
        "Released values can be matched exactly, so the risk is 1 / the size of the group "
        "of records sharing all quasi-identifier values (a blank counts as a value)."
    ),
    "record_linkage": (
        "Released values are perturbed and cannot be matched exactly; the risk is the share "
        "of people an intruder holding their true values links to their own record by "
        "picking the closest released record."
    ),
}


@dataclass(frozen=True)
class LinkageRisk:
    rows: int
    expected_links: float  # Σ over people of P(the nearest released record is theirs)
    share: float  # expected_links / rows


@dataclass(frozen=True)
class VariableEffect:
    column: str
    numeric: bool
    missing_before: int
    missing_after: int
    changed_share: float  # released value differs from the original (rows aligned)
    distribution_distance: float  # total variation distance, 0 = same distribution
    mean_before: float | None = None
    mean_after: float | None = None
    variance_before: float | None = None
    variance_after: float | None = None
    correlation: float | None = None  # original vs released values
    distribution: pl.DataFrame | None = None  # distribution_table: value, before, after


@dataclass(frozen=True)
class TechniqueMeasure:
    technique: str
    rule: RiskRule
    explanation: str
    exact: RiskProfile  # class sizes of the released file (always shown)
    linkage: LinkageRisk | None  # for perturbative techniques
    utility: tuple[VariableEffect, ...]


def exact_match_risk(released: pl.DataFrame, quasi: Sequence[str]) -> RiskProfile:
    """Step 4 figures of the released data: frame.encode + risk_profile (blank = own value)."""
    return risk_profile(encoded_class_sizes(encode(released, quasi)))


def _is_numeric(series: pl.Series) -> bool:
    return series.dtype.is_numeric()


def _linkage_space(
    original: pl.DataFrame, released: pl.DataFrame, quasi: Sequence[str]
) -> tuple[FloatArray, FloatArray]:
    """Both frames as points: numbers standardised on the original, categories one-hot/√2."""
    left, right = [], []
    for column in quasi:
        before, after = original.get_column(column), released.get_column(column)
        if before.dtype == pl.Date and after.dtype == pl.Date:
            before, after = before.cast(pl.Int32), after.cast(pl.Int32)
        if _is_numeric(before) and _is_numeric(after):
            x = before.cast(pl.Float64).to_numpy()
            y = after.cast(pl.Float64).to_numpy()
            centre, spread = np.nanmean(x), np.nanstd(x) or 1.0
            # A missing value sits far away (3 sd past the range): it matches only blanks.
            far = (np.nanmax(np.abs(x - centre)) / spread if x.size else 0.0) + 3.0
            left.append(np.nan_to_num((x - centre) / spread, nan=far))
            right.append(np.nan_to_num((y - centre) / spread, nan=far))
            continue
        texts_before = before.cast(pl.String).fill_null("\0missing").to_numpy()
        texts_after = after.cast(pl.String).fill_null("\0missing").to_numpy()
        categories = np.unique(np.concatenate([texts_before, texts_after]))
        for value in categories:
            left.append((texts_before == value) / np.sqrt(2.0))
            right.append((texts_after == value) / np.sqrt(2.0))
    return np.column_stack(left).astype(np.float64), np.column_stack(right).astype(np.float64)


def linkage_risk(
    original: pl.DataFrame, released: pl.DataFrame, quasi: Sequence[str]
) -> LinkageRisk:
    """Expected share of people whose nearest released record is their own (rows aligned)."""
    require_columns(original, quasi, "quasi-identifier")
    require_columns(released, quasi, "quasi-identifier")
    if original.height != released.height:
        raise EngineInputError(
            f"linkage risk needs the release row for row: {original.height} vs {released.height}"
        )
    if original.height == 0:
        return LinkageRisk(0, 0.0, 0.0)
    people, records = _linkage_space(original, released, quasi)
    tree = cKDTree(records)
    nearest, _ = tree.query(people, k=1)
    own = np.sqrt(((people - records) ** 2).sum(axis=1))
    tolerance = 1e-9
    ties = tree.query_ball_point(people, nearest + tolerance, return_length=True)
    credit = np.where(own <= nearest + tolerance, 1.0 / np.maximum(ties, 1), 0.0)
    links = float(credit.sum())
    return LinkageRisk(original.height, links, links / original.height)


def distribution_table(before: pl.Series, after: pl.Series, bins: int = 10) -> pl.DataFrame:
    """Shares before and after, per value (text) or per quantile bin of the original (numbers).

    Columns: "value" (the category, or the bin as "[low, high)"; "(missing)" for missing),
    "before", "after" (shares of all rows, 0..1): the data of the before/after chart.
    """
    if _is_numeric(before) and _is_numeric(after):
        x = before.cast(pl.Float64).to_numpy()
        y = after.cast(pl.Float64).to_numpy()
        present = x[~np.isnan(x)]
        edges = (
            np.unique(np.quantile(present, np.linspace(0, 1, bins + 1)))
            if present.size
            else np.array([0.0])
        )
        names = [f"[{edges[i]:g}, {edges[i + 1]:g})" for i in range(edges.size - 1)] or ["(all)"]
        names[-1] = names[-1][:-1] + "]"

        def labels(values: FloatArray) -> list[str]:
            at = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(names) - 1)
            return [
                "(missing)" if np.isnan(v) else names[i] for v, i in zip(values, at, strict=True)
            ]

        left = pl.Series("value", labels(x), dtype=pl.String)
        right = pl.Series("value", labels(y), dtype=pl.String)
        order = [*names, "(missing)"]
    else:
        left = before.cast(pl.String).fill_null("(missing)").alias("value")
        right = after.cast(pl.String).fill_null("(missing)").alias("value")
        order = sorted(set(left.to_list()) | set(right.to_list()))
    shares = pl.DataFrame({"value": order}, schema={"value": pl.String}).with_row_index("order")
    for name, series in (("before", left), ("after", right)):
        counts = series.value_counts(name="n").with_columns(
            (pl.col("n") / max(series.len(), 1)).alias(name)
        )
        shares = shares.join(counts.select("value", name), on="value", how="left")
    table = shares.fill_null(0.0).sort("order").drop("order")
    return table.filter((pl.col("before") > 0) | (pl.col("after") > 0))


def _tv_distance(before: pl.Series, after: pl.Series) -> float:
    if _is_numeric(before) and _is_numeric(after):
        x = before.cast(pl.Float64).drop_nulls().to_numpy()
        y = after.cast(pl.Float64).drop_nulls().to_numpy()
        if x.size == 0 or y.size == 0:
            return 0.0 if x.size == y.size else 1.0
        edges = np.unique(np.quantile(x, np.linspace(0, 1, 11)))
        bins_x = np.bincount(np.searchsorted(edges[1:-1], x, side="right"), minlength=edges.size)
        bins_y = np.bincount(np.searchsorted(edges[1:-1], y, side="right"), minlength=edges.size)
        return float(0.5 * np.abs(bins_x / x.size - bins_y / y.size).sum())
    p = before.cast(pl.String).value_counts(normalize=True, name="share")
    q = after.cast(pl.String).value_counts(normalize=True, name="share")
    name = before.name
    joined = p.join(q, on=name, how="full", coalesce=True, nulls_equal=True).fill_null(0.0)
    shares = joined["share"].to_numpy() - joined["share_right"].to_numpy()
    return float(0.5 * np.abs(shares).sum())


def variable_effect(before: pl.Series, after: pl.Series) -> VariableEffect:
    """Per-variable utility figures (rows aligned: `after` is `before` transformed)."""
    if before.len() != after.len():
        raise EngineInputError(f"{before.name!r}: the release must keep the rows in order")
    same = (before.cast(pl.String) == after.cast(pl.String)).fill_null(
        before.is_null() & after.is_null()
    )
    changed = 1.0 - float(same.cast(pl.Float64).to_numpy().mean()) if before.len() else 0.0
    numeric = _is_numeric(before) and _is_numeric(after)
    effect = VariableEffect(
        column=before.name,
        numeric=numeric,
        missing_before=before.null_count(),
        missing_after=after.null_count(),
        changed_share=changed,
        distribution_distance=_tv_distance(before, after),
        distribution=distribution_table(before, after),
    )
    if not numeric:
        return effect
    x, y = before.cast(pl.Float64), after.cast(pl.Float64)
    both = x.is_not_null() & y.is_not_null()
    xs, ys = x.filter(both).to_numpy(), y.filter(both).to_numpy()
    correlation = (
        float(np.corrcoef(xs, ys)[0, 1]) if xs.size > 1 and xs.std() > 0 and ys.std() > 0 else None
    )
    return VariableEffect(
        **{
            **effect.__dict__,
            "mean_before": x.mean(),
            "mean_after": y.mean(),
            "variance_before": x.var(ddof=0),
            "variance_after": y.var(ddof=0),
            "correlation": correlation,
        }
    )


def correlation_change(
    original: pl.DataFrame, released: pl.DataFrame, columns: Sequence[str]
) -> float:
    """Largest change of a pairwise correlation between numeric columns (0 = all kept)."""
    if len(columns) < 2:
        return 0.0
    before = original.select(pl.col(c).cast(pl.Float64) for c in columns).drop_nulls().to_numpy()
    after = released.select(pl.col(c).cast(pl.Float64) for c in columns).drop_nulls().to_numpy()
    if before.shape[0] < 2 or after.shape[0] < 2:
        return 0.0
    diff = np.nan_to_num(np.corrcoef(before.T)) - np.nan_to_num(np.corrcoef(after.T))
    return float(np.abs(diff).max())


def measure_technique(
    technique: str,
    original: pl.DataFrame,
    released: pl.DataFrame,
    quasi: Sequence[str],
    columns: Sequence[str] | None = None,
) -> TechniqueMeasure:
    """Risk under the technique's rule and the utility of `columns` (default: the quasi)."""
    if technique not in RULE_OF_TECHNIQUE:
        raise EngineInputError(
            f"unknown technique {technique!r}: use one of {', '.join(RULE_OF_TECHNIQUE)}"
        )
    rule = RULE_OF_TECHNIQUE[technique]
    wanted = tuple(columns) if columns is not None else tuple(quasi)
    require_columns(original, wanted, "measured")
    require_columns(released, wanted, "measured")
    return TechniqueMeasure(
        technique=technique,
        rule=rule,
        explanation=RULE_EXPLANATION[rule],
        exact=exact_match_risk(released, quasi),
        linkage=linkage_risk(original, released, quasi) if rule == "record_linkage" else None,
        utility=tuple(
            variable_effect(original.get_column(c), released.get_column(c)) for c in wanted
        ),
    )
