"""Attribute disclosure: sensitive values shared by a whole equivalence class.

If every row of a class has the same value of a sensitive column, anyone who
places a person in that class learns the value without re-identifying the row
(seed 000, governance: attribute disclosure).  Distinct l-diversity counts, per
class, the distinct sensitive values; l = 1 means the class is homogeneous.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.frame import check_columns


@dataclass(frozen=True)
class SensitiveDiversity:
    """Distinct l-diversity of one sensitive column over the equivalence classes."""

    column: str
    classes: int
    rows: int
    smallest_l: int  # 0 only when there are no rows
    homogeneous_classes: int  # classes with l = 1, singletons included
    homogeneous_rows: int
    homogeneous_shared_classes: int  # l = 1 in classes of 2 rows or more: the real leak
    homogeneous_shared_rows: int

    def to_dict(self) -> dict[str, int | str]:
        return {
            "column": self.column,
            "classes": self.classes,
            "rows": self.rows,
            "smallest_l": self.smallest_l,
            "homogeneous_classes": self.homogeneous_classes,
            "homogeneous_rows": self.homogeneous_rows,
            "homogeneous_shared_classes": self.homogeneous_shared_classes,
            "homogeneous_shared_rows": self.homogeneous_shared_rows,
        }


def l_diversity(
    data: pl.LazyFrame | pl.DataFrame, quasi: Sequence[str], sensitive: Sequence[str]
) -> tuple[SensitiveDiversity, ...]:
    """Distinct l-diversity of each sensitive column, in streaming group-bys.

    The missing value counts as a sensitive value of its own, as it does for the
    quasi-identifiers.  Memory is proportional to the distinct (class, sensitive value)
    pairs, whatever the rows (`diversity_per_class`).
    """
    frame = data.lazy()
    names = frame.collect_schema().names()
    check_columns(names, quasi, "quasi-identifier")
    check_columns(names, sensitive, "sensitive")
    both = sorted(set(quasi) & set(sensitive))
    if both:
        raise EngineInputError(f"column(s) both quasi-identifier and sensitive: {', '.join(both)}")
    try:
        return tuple(_summary(diversity_per_class(frame, quasi, s), s) for s in sensitive)
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot compute l-diversity: {str(exc).splitlines()[0]}") from exc


def diversity_per_class(frame: pl.LazyFrame, quasi: Sequence[str], sensitive: str) -> pl.LazyFrame:
    """One row per class: its quasi-identifier values, its records (``__size``) and its
    distinct values of ``sensitive`` (``__l``, the missing value counting as one).

    Grouped twice, by class and value and then by class, because the streaming engine
    runs ``n_unique`` inside a group-by by holding every group's values: this way memory
    follows the distinct (class, value) pairs, not the rows."""
    pairs = frame.group_by([*quasi, sensitive]).agg(pl.len().alias("__size"))
    aggregates = (pl.col("__size").sum().alias("__size"), pl.len().alias("__l"))
    if not quasi:  # the whole data set is one class (none when it has no rows)
        return pairs.select(*aggregates).filter(pl.col("__size") > 0)
    return pairs.group_by(list(quasi)).agg(*aggregates)


def _summary(per_class: pl.LazyFrame, column: str) -> SensitiveDiversity:
    alias = "__l"
    figures = (
        per_class.select(
            classes=pl.len(),
            rows=pl.col("__size").sum(),
            smallest_l=pl.col(alias).min(),
            homogeneous_classes=(pl.col(alias) == 1).sum(),
            homogeneous_rows=pl.col("__size").filter(pl.col(alias) == 1).sum(),
            shared_classes=((pl.col(alias) == 1) & (pl.col("__size") > 1)).sum(),
            shared_rows=pl.col("__size")
            .filter((pl.col(alias) == 1) & (pl.col("__size") > 1))
            .sum(),
        )
        .collect(engine="streaming")
        .row(0, named=True)
    )
    return SensitiveDiversity(
        column=column,
        classes=int(figures["classes"]),
        rows=int(figures["rows"] or 0),
        smallest_l=int(figures["smallest_l"] or 0),
        homogeneous_classes=int(figures["homogeneous_classes"] or 0),
        homogeneous_rows=int(figures["homogeneous_rows"] or 0),
        homogeneous_shared_classes=int(figures["shared_classes"] or 0),
        homogeneous_shared_rows=int(figures["shared_rows"] or 0),
    )
