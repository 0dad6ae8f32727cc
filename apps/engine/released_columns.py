"""Released columns that are not quasi-identifiers, measured as if an intruder knew them.

Step 2 decides which columns an intruder could know (the quasi-identifiers); the risk of the
release is measured on those alone. A column left as "other", or a direct identifier
released character-masked, leaves as it is and is never generalized: if the classification
was wrong, nothing notices. So each such column is measured as the quasi-identifiers are
(IPC 2016, step 2 and governance; Portage/CARL on small cells):

- its small cells: values held by fewer records than the release's class size ``k``;
- the classes it makes with the quasi-identifiers: records alone in their class (uniques)
  and the data risk of the release model, against the same without it;
- per sensitive variable, the classes of 2+ records homogeneous on it once the column is
  added to the quasi-identifiers, against the same without it (the column predicts it);
- and, for Step 8, the l-diversity of each sensitive variable over the quasi-identifiers
  and every measured column together.

Every figure is a streaming group-by counted in hash slices of the class
(`apps.engine.attribute.class_table`): a column of nearly unique values makes nearly as
many classes as records, and a slice holds at most ``slice_values`` of them at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.attribute import (
    SensitiveDiversity,
    approx_classes,
    class_slices,
    class_table,
)
from apps.engine.errors import EngineInputError
from apps.engine.reading import check_columns
from apps.engine.risk import DEFAULT_STRICT_AVERAGE_CAP, check_release_model
from apps.engine.slices import HASH_SLICE_VALUES

MAX_EXAMPLES = 3
_VALUE = "__value"
_RECORDS = "__records"


@dataclass(frozen=True)
class ClassFigures:
    """The classes of one grouping of the release, as Step 4 counts them."""

    classes: int
    rows: int
    smallest: int
    uniques: int  # records alone in their class
    below_k: int  # records in classes smaller than the release's class size
    data_risk: float  # of the release model (max risk, or strict average risk)

    def to_dict(self) -> dict[str, int | float]:
        return {
            "classes": self.classes,
            "rows": self.rows,
            "smallest": self.smallest,
            "uniques": self.uniques,
            "below_k": self.below_k,
            "data_risk": self.data_risk,
        }


@dataclass(frozen=True)
class SensitiveLink:
    """Classes of 2+ records homogeneous on a sensitive variable, with the column added to
    the quasi-identifiers and without it."""

    sensitive: str
    classes: int
    records: int
    classes_without: int
    records_without: int

    @property
    def predicts(self) -> bool:
        """More records in homogeneous classes with the column than without it."""
        return self.records > self.records_without

    def to_dict(self) -> dict[str, int | str | bool]:
        return {
            "sensitive": self.sensitive,
            "classes": self.classes,
            "records": self.records,
            "classes_without": self.classes_without,
            "records_without": self.records_without,
            "predicts": self.predicts,
        }


@dataclass(frozen=True)
class ColumnExposure:
    """One released column measured as a quasi-identifier would be."""

    column: str
    values: int  # distinct values, the missing value counting as one
    small_values: int  # values held by fewer than k records
    small_records: int  # records holding them
    with_column: ClassFigures  # classes of the quasi-identifiers and this column
    links: tuple[SensitiveLink, ...]
    examples: tuple[tuple[str, int], ...] = ()  # most frequent values held by k+ records

    def to_dict(self) -> dict[str, object]:
        return {
            "column": self.column,
            "values": self.values,
            "small_values": self.small_values,
            "small_records": self.small_records,
            "with_column": self.with_column.to_dict(),
            "links": [link.to_dict() for link in self.links],
            "examples": [[v, n] for v, n in self.examples],
        }


@dataclass(frozen=True)
class ReleasedColumnsReport:
    release_size: int  # k: the class size the release model asks for
    without: ClassFigures  # the quasi-identifiers alone
    columns: tuple[ColumnExposure, ...]
    with_all: ClassFigures | None  # the quasi-identifiers and every measured column
    diversity_with_all: tuple[SensitiveDiversity, ...]  # l-diversity over the same classes

    def to_dict(self) -> dict[str, object]:
        return {
            "release_size": self.release_size,
            "without": self.without.to_dict(),
            "columns": [c.to_dict() for c in self.columns],
            "with_all": self.with_all.to_dict() if self.with_all else None,
            "diversity_with_all": [d.to_dict() for d in self.diversity_with_all],
        }


def class_figures(
    table: pl.DataFrame, *, release_size: int, release_model: str, cap: float
) -> ClassFigures:
    """Step 4's figures from a `class_table` (one row per class size): max risk is one over
    the smallest class; for a non-public release, the strict average risk (the average,
    classes over records, unless the max risk passes the cap) (Seed 000 step 4.2)."""
    model = check_release_model(release_model)
    if table.is_empty():
        return ClassFigures(0, 0, 0, 0, 0, 0.0)
    sizes = table.get_column("size").cast(pl.Int64)
    classes = table.get_column("classes").cast(pl.Int64)
    rows = int((sizes * classes).sum())
    count = int(classes.sum())
    smallest = int(sizes.min())  # type: ignore[arg-type]
    highest = 1.0 / smallest if smallest else 0.0
    average = count / rows if rows else 0.0
    risk = highest
    if model == "non_public":
        risk = highest if highest > cap else average
    small = sizes < release_size
    return ClassFigures(
        classes=count,
        rows=rows,
        smallest=smallest,
        uniques=int(classes.filter(sizes == 1).sum()),
        below_k=int((sizes * classes).filter(small).sum()),
        data_risk=risk,
    )


def value_counts_query(part: pl.LazyFrame, column: str) -> pl.LazyFrame:
    """Records per value of ``column`` (the missing value is a value of its own)."""
    return part.group_by(pl.col(column).alias(_VALUE)).agg(pl.len().alias(_RECORDS))


def _small_cells(
    frame: pl.LazyFrame,
    column: str,
    *,
    release_size: int,
    distinct: int,
    examples: bool,
    slice_values: int,
) -> tuple[int, int, int, tuple[tuple[str, int], ...]]:
    """(values, values held by fewer than k records, their records, examples), slice by
    slice of the column's values."""
    values = small = small_records = 0
    shown: list[tuple[str, int]] = []
    for part in class_slices(frame, [column], distinct, slice_values):
        counts = value_counts_query(part, column)
        figures = (
            counts.select(
                pl.len().alias("values"),
                (pl.col(_RECORDS) < release_size).sum().alias("small"),
                pl.col(_RECORDS).filter(pl.col(_RECORDS) < release_size).sum().alias("records"),
            )
            .collect(engine="streaming")
            .row(0, named=True)
        )
        values += int(figures["values"] or 0)
        small += int(figures["small"] or 0)
        small_records += int(figures["records"] or 0)
        if examples:
            top = (
                counts.filter((pl.col(_RECORDS) >= release_size) & pl.col(_VALUE).is_not_null())
                .sort([_RECORDS, _VALUE], descending=[True, False])
                .head(MAX_EXAMPLES)
                .collect(engine="streaming")
            )
            shown += [(str(v), int(n)) for v, n in top.iter_rows()]
    shown.sort(key=lambda e: (-e[1], e[0]))
    return values, small, small_records, tuple(shown[:MAX_EXAMPLES])


def released_column_exposure(
    release: pl.LazyFrame | pl.DataFrame,
    *,
    quasi: Sequence[str],
    columns: Sequence[str],
    sensitive: Sequence[str],
    release_size: int,
    release_model: str,
    cap: float = DEFAULT_STRICT_AVERAGE_CAP,
    examples: Sequence[str] = (),
    slice_values: int = HASH_SLICE_VALUES,
) -> ReleasedColumnsReport:
    """Measure each of ``columns`` of the release as if it were one more quasi-identifier
    (module docstring). ``examples``: columns whose most frequent values held by ``k``
    records or more are returned (what a masking kept, shown to the reviewer; a value
    held by fewer is never returned)."""
    frame = release.lazy()
    names = frame.collect_schema().names()
    quasi, columns, sensitive = list(quasi), list(columns), list(sensitive)
    if quasi:
        check_columns(names, quasi, "quasi-identifier")
    if sensitive:
        check_columns(names, sensitive, "sensitive")
    if columns:
        check_columns(names, columns, "released")
    overlap = sorted(set(columns) & (set(quasi) | set(sensitive)))
    if overlap:
        raise EngineInputError(
            f"column(s) measured as released columns are quasi-identifiers or sensitive: "
            f"{', '.join(overlap)}"
        )
    if release_size < 1:
        raise EngineInputError(f"the release's class size must be at least 1, not {release_size}")

    def figures(table: pl.DataFrame) -> ClassFigures:
        return class_figures(table, release_size=release_size, release_model=release_model, cap=cap)

    groupings = [quasi, *([*quasi, c] for c in columns), *([c] for c in columns)]
    everything = [*quasi, *columns]
    groupings.append(everything)
    try:
        estimates = approx_classes(frame, groupings)
        base = estimates[0]
        per_column = estimates[1 : 1 + len(columns)]
        per_value = estimates[1 + len(columns) : 1 + 2 * len(columns)]
        total = estimates[-1]

        def tables(by: list[str], distinct: int) -> dict[str | None, pl.DataFrame]:
            """The class table of ``by``, once per sensitive variable (each gives the
            sizes too), or once without any (or with no column to compare it with)."""
            keys: list[str | None] = list(sensitive) if sensitive and columns else [None]
            return {
                s: class_table(frame, by, s, distinct=distinct, slice_values=slice_values)
                for s in keys
            }

        without_tables = tables(quasi, base)
        without = figures(next(iter(without_tables.values())))
        homogeneous_without = {
            s: SensitiveDiversity.from_table(s, t) for s, t in without_tables.items() if s
        }
        measured = []
        for column, distinct, value_distinct in zip(columns, per_column, per_value, strict=True):
            with_tables = tables([*quasi, column], distinct)
            links = []
            for s, table in with_tables.items():
                if s is None:
                    continue
                now, before = SensitiveDiversity.from_table(s, table), homogeneous_without[s]
                links.append(
                    SensitiveLink(
                        sensitive=s,
                        classes=now.homogeneous_shared_classes,
                        records=now.homogeneous_shared_rows,
                        classes_without=before.homogeneous_shared_classes,
                        records_without=before.homogeneous_shared_rows,
                    )
                )
            values, small, small_records, shown = _small_cells(
                frame,
                column,
                release_size=release_size,
                distinct=value_distinct,
                examples=column in examples,
                slice_values=slice_values,
            )
            measured.append(
                ColumnExposure(
                    column=column,
                    values=values,
                    small_values=small,
                    small_records=small_records,
                    with_column=figures(next(iter(with_tables.values()))),
                    links=tuple(links),
                    examples=shown,
                )
            )
        with_all: ClassFigures | None = None
        diversity: tuple[SensitiveDiversity, ...] = ()
        if columns:
            all_tables = tables(everything, total)
            with_all = figures(next(iter(all_tables.values())))
            diversity = tuple(
                SensitiveDiversity.from_table(s, t) for s, t in all_tables.items() if s
            )
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(
            f"cannot measure the released columns: {str(exc).splitlines()[0]}"
        ) from exc
    return ReleasedColumnsReport(
        release_size=release_size,
        without=without,
        columns=tuple(measured),
        with_all=with_all,
        diversity_with_all=diversity,
    )
