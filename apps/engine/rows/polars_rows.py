"""The row passes on this machine with polars: today's code, behind the seam.

`histogram` is `apps.engine.frame.encode` of `read_table`; the release is
`apps.engine.apply.apply_levels` (in memory) or `apply_levels_to_file` (streamed, from
`STREAMING_ROWS` input rows), the masking done first with the plan's keys so that a
release can be repeated with the same keys; its manifest is that of the one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import polars as pl

from apps.engine.apply import (
    OUTPUT_FORMATS,
    STREAMING_ROWS,
    apply_levels,
    apply_levels_to_file,
    write_release,
)
from apps.engine.attribute import SensitiveDiversity, l_diversity
from apps.engine.encoded import EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.frame import encode
from apps.engine.masking import MaskingSecrets, mask_direct_identifiers
from apps.engine.reading import check_columns, read_table
from apps.engine.rows.manifest import (
    ManifestCheck,
    ReleaseManifest,
    build_manifest,
    compare,
    hash_file,
)
from apps.engine.rows.model import ColumnCounts, Progress, ReleasePlan, TableSource, WrittenRelease
from apps.engine.techniques.registry import technique_of


class PolarsRows:
    """The default engine: files of this machine, read by polars."""

    name = "polars"

    def _read(self, source: TableSource) -> pl.LazyFrame:
        if source.table is not None:
            raise EngineInputError(
                f"{source.describe()}: a table name needs a cluster (--engine spark)"
            )
        if source.resolved_format() == "delta":
            raise EngineInputError(f"{source.describe()}: Delta tables need --engine spark")
        return read_table(str(source.path), sep=source.sep, null_values=source.null_values or None)

    def columns(self, source: TableSource) -> tuple[str, ...]:
        return tuple(self._read(source).collect_schema().names())

    def head(self, source: TableSource, rows: int) -> pl.DataFrame:
        return self._read(source).head(rows).collect()

    def histogram(
        self, source: TableSource, columns: Sequence[str], *, progress: Progress | None = None
    ) -> EncodedData:
        if progress is not None:
            progress(0.0, "Counting the equivalence classes")
        return encode(self._read(source), columns)

    def column_counts(
        self, source: TableSource, columns: Sequence[str], *, top: int = 10
    ) -> tuple[ColumnCounts, ...]:
        frame = self._read(source)
        check_columns(frame.collect_schema().names(), list(columns), "profiled")
        totals = frame.select(
            pl.len().alias("rows"),
            *(pl.col(c).null_count().alias(f"m{i}") for i, c in enumerate(columns)),
            *(pl.col(c).drop_nulls().n_unique().alias(f"d{i}") for i, c in enumerate(columns)),
        ).collect(engine="streaming")
        row = totals.row(0, named=True)
        out = []
        for i, c in enumerate(columns):
            frequent = (
                frame.group_by(c)
                .agg(pl.len().alias("__n"))
                .sort(["__n", c], descending=[True, False], nulls_last=True)
                .head(top)
                .collect(engine="streaming")
            )
            out.append(
                ColumnCounts(
                    column=c,
                    rows=int(row["rows"]),
                    missing=int(row[f"m{i}"]),
                    distinct=int(row[f"d{i}"]),
                    top=tuple(
                        zip(
                            frequent.get_column(c).to_list(),
                            (int(n) for n in frequent.get_column("__n").to_list()),
                            strict=True,
                        )
                    ),
                )
            )
        return tuple(out)

    def l_diversity(
        self, source: TableSource, quasi: Sequence[str], sensitive: Sequence[str]
    ) -> tuple[SensitiveDiversity, ...]:
        return l_diversity(self._read(source), quasi, sensitive)

    def write_release(
        self,
        source: TableSource,
        plan: ReleasePlan,
        out: str,
        *,
        progress: Progress | None = None,
    ) -> WrittenRelease:
        path = Path(out)
        if path.suffix.lower() not in OUTPUT_FORMATS:
            raise EngineInputError(f"output must end in {' or '.join(OUTPUT_FORMATS)}: {out}")
        if progress is not None:
            progress(0.0, "Masking, generalizing, suppressing and shuffling")
        data = self._read(source)
        masking = MaskingSecrets()
        if plan.direct:
            masked = mask_direct_identifiers(data, plan.direct, keys=plan.keys)
            data, masking = masked.data, masked.secrets
        if plan.techniques or plan.rows < STREAMING_ROWS:
            frame, _ = apply_levels(
                data,
                lookups=plan.lookups,
                dictionaries=plan.dictionaries,
                levels=plan.levels,
                release_size=plan.release_size,
                seed=plan.seed,
                suppressed_classes=plan.suppressed_classes,
            )
            for params in plan.techniques:
                frame = technique_of(params).run(frame, params).data
            write_release(frame, path)
        else:
            apply_levels_to_file(
                data,
                path,
                lookups=plan.lookups,
                dictionaries=plan.dictionaries,
                levels=plan.levels,
                release_size=plan.release_size,
                rows=plan.rows,
                seed=plan.seed,
                suppressed_classes=plan.suppressed_classes,
            )
        return WrittenRelease(
            location=str(path),
            manifest=file_manifest(path),
            secrets=masking,
            engine=self.name,
        )

    def verify_release(self, manifest: ReleaseManifest) -> ManifestCheck:
        path = Path(manifest.location)
        current = (
            file_manifest(path)
            if path.is_file()
            else build_manifest(manifest.location, manifest.columns, [])
        )
        return compare(manifest, current)

    def cancel(self) -> None:
        """Polars runs in the caller's thread: a job stops it through its progress."""

    def close(self) -> None:
        pass

    def __enter__(self) -> PolarsRows:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def file_manifest(path: Path) -> ReleaseManifest:
    """The manifest of a release written as one local file (.parquet or .csv)."""
    size, rows, digest = hash_file(str(path))
    if path.suffix.lower() == ".csv":
        frame = pl.scan_csv(path, infer_schema=False)
        rows = int(frame.select(pl.len()).collect().item())
    else:
        frame = pl.scan_parquet(path)
    columns = [(name, str(kind)) for name, kind in frame.collect_schema().items()]
    return build_manifest(str(path), columns, [(str(path), size, rows, digest)])
