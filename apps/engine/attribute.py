"""Attribute disclosure: sensitive values shared by a whole equivalence class.

If every row of a class has the same value of a sensitive column, anyone who
places a person in that class learns the value without re-identifying the row
(seed 000, governance: attribute disclosure).  Distinct l-diversity counts, per
class, the distinct sensitive values; l = 1 means the class is homogeneous.

Classes are counted in hash slices of the class (`class_table`): a class falls whole in one
slice, so a release whose classes are nearly its rows (a column of almost unique values
added to the quasi-identifiers) is measured a slice at a time, in bounded memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.reading import check_columns
from apps.engine.slices import HASH_SLICE_VALUES, hash_slices

SIZE = "__size"
DISTINCT = "__l"
_CLASS = "__class"
_CLASS_SEED = 0xC1A55


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

    @classmethod
    def from_table(cls, column: str, table: pl.DataFrame) -> SensitiveDiversity:
        """The figures of a `class_table` computed with `column` as the sensitive one."""
        if table.is_empty():
            return cls(column, 0, 0, 0, 0, 0, 0, 0)
        sizes = table.get_column("size").cast(pl.Int64)
        classes = table.get_column("classes").cast(pl.Int64)
        homogeneous = table.get_column("homogeneous").cast(pl.Int64)
        shared = sizes > 1
        return cls(
            column=column,
            classes=int(classes.sum()),
            rows=int((sizes * classes).sum()),
            smallest_l=int(table.get_column("smallest_l").min() or 0),  # type: ignore[arg-type]
            homogeneous_classes=int(homogeneous.sum()),
            homogeneous_rows=int((sizes * homogeneous).sum()),
            homogeneous_shared_classes=int(homogeneous.filter(shared).sum()),
            homogeneous_shared_rows=int((sizes * homogeneous).filter(shared).sum()),
        )


def l_diversity(
    data: pl.LazyFrame | pl.DataFrame,
    quasi: Sequence[str],
    sensitive: Sequence[str],
    *,
    slice_values: int = HASH_SLICE_VALUES,
) -> tuple[SensitiveDiversity, ...]:
    """Distinct l-diversity of each sensitive column, in streaming group-bys.

    The missing value counts as a sensitive value of its own, as it does for the
    quasi-identifiers.  Memory follows at most `slice_values` classes at a time
    (`class_table`), whatever the rows and the classes.
    """
    frame = data.lazy()
    names = frame.collect_schema().names()
    check_columns(names, quasi, "quasi-identifier")
    check_columns(names, sensitive, "sensitive")
    both = sorted(set(quasi) & set(sensitive))
    if both:
        raise EngineInputError(f"column(s) both quasi-identifier and sensitive: {', '.join(both)}")
    try:
        (classes,) = approx_classes(frame, [list(quasi)])
        return tuple(
            SensitiveDiversity.from_table(
                s, class_table(frame, quasi, s, distinct=classes, slice_values=slice_values)
            )
            for s in sensitive
        )
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot compute l-diversity: {str(exc).splitlines()[0]}") from exc


def diversity_per_class(frame: pl.LazyFrame, quasi: Sequence[str], sensitive: str) -> pl.LazyFrame:
    """One row per class: its quasi-identifier values, its records (``__size``) and its
    distinct values of ``sensitive`` (``__l``, the missing value counting as one).

    Grouped twice, by class and value and then by class, because the streaming engine
    runs ``n_unique`` inside a group-by by holding every group's values: this way memory
    follows the distinct (class, value) pairs, not the rows."""
    pairs = frame.group_by([*quasi, sensitive]).agg(pl.len().alias(SIZE))
    aggregates = (pl.col(SIZE).sum().alias(SIZE), pl.len().alias(DISTINCT))
    if not quasi:  # the whole data set is one class (none when it has no rows)
        return pairs.select(*aggregates).filter(pl.col(SIZE) > 0)
    return pairs.group_by(list(quasi)).agg(*aggregates)


def class_key(by: Sequence[str]) -> pl.Expr:
    """A 64-bit hash of a record's values of ``by`` (its class), the same in every batch."""
    return pl.struct(list(by)).hash(seed=_CLASS_SEED)


def approx_classes(frame: pl.LazyFrame, groupings: Sequence[Sequence[str]]) -> list[int]:
    """About how many classes each grouping of columns has (HyperLogLog of the class key,
    a few per cent off), all in one streaming pass; 1 for the empty grouping."""
    exprs = [class_key(by).approx_n_unique().alias(f"g{i}") for i, by in enumerate(groupings) if by]
    found = frame.select(exprs).collect(engine="streaming").row(0, named=True) if exprs else {}
    return [int(found[f"g{i}"]) if by else 1 for i, by in enumerate(groupings)]


def class_slices(
    frame: pl.LazyFrame, by: Sequence[str], distinct: int, slice_values: int = HASH_SLICE_VALUES
) -> list[pl.LazyFrame]:
    """`frame` cut into parts of at most about `slice_values` classes of ``by`` (``distinct``
    classes in all, an estimate): every record of a class lands in the same part."""
    if not by or distinct * 1.1 <= slice_values:
        return [frame]
    return hash_slices(
        frame.with_columns(class_key(by).alias(_CLASS)), _CLASS, distinct, slice_values
    )


def class_table_query(part: pl.LazyFrame, by: Sequence[str], sensitive: str | None) -> pl.LazyFrame:
    """For one part: per class size, the classes of that size (``classes``), those among
    them homogeneous on ``sensitive`` (``homogeneous``, l = 1) and their smallest l."""
    if sensitive is not None:
        per_class = diversity_per_class(part, by, sensitive)
    elif by:
        per_class = part.group_by(list(by)).agg(pl.len().alias(SIZE))
    else:
        per_class = part.select(pl.len().alias(SIZE)).filter(pl.col(SIZE) > 0)
    if sensitive is None:
        per_class = per_class.with_columns(pl.lit(None, dtype=pl.UInt32).alias(DISTINCT))
    return per_class.group_by(SIZE).agg(
        pl.len().alias("classes"),
        (pl.col(DISTINCT) == 1).sum().alias("homogeneous"),
        pl.col(DISTINCT).min().alias("smallest_l"),
    )


def class_table(
    frame: pl.LazyFrame,
    by: Sequence[str],
    sensitive: str | None = None,
    *,
    distinct: int,
    slice_values: int = HASH_SLICE_VALUES,
) -> pl.DataFrame:
    """One row per class size over the classes of ``by``: ``size``, ``classes`` of that
    size, ``homogeneous`` (on ``sensitive``; 0 without one) and ``smallest_l``, sorted by
    size. Counted slice by slice (`class_slices`): each part's table holds one row per class
    size, so the parts add up whatever the number of classes."""
    parts = [
        class_table_query(part, by, sensitive).collect(engine="streaming")
        for part in class_slices(frame, by, distinct, slice_values)
    ]
    return (
        pl.concat(parts)
        .group_by(SIZE)
        .agg(
            pl.col("classes").cast(pl.UInt64).sum(),
            pl.col("homogeneous").cast(pl.UInt64).sum(),
            pl.col("smallest_l").min(),
        )
        .rename({SIZE: "size"})
        .sort("size")
    )
