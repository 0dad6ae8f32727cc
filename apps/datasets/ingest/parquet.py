"""Parquet files: their footer checked against the limits, then their rows streamed."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from apps.datasets import containers
from apps.datasets.ingest.common import (
    LABELS,
    IngestError,
    IngestLimits,
    IngestResult,
    blank_strings_to_null,
    check_columns,
    check_names,
    count_rows,
    drop_empty_rows,
    dropped_rows_warning,
    human_size,
    reading_failure,
)

_UNSUPPORTED_TYPES = (pl.List, pl.Array, pl.Struct, pl.Object, pl.Binary)


def _check_parquet_footer(src: Path, limits: IngestLimits) -> None:
    try:
        footer = containers.parquet_footer(src)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise reading_failure(exc, LABELS["parquet"]) from None
    check_columns(footer.columns, limits)
    bound = limits.max_parquet_expanded_bytes
    if bound is not None and footer.expanded_bytes > bound:
        raise IngestError(
            f"The Parquet file is {human_size(src.stat().st_size)} but its "
            f"{footer.rows:,} rows × {footer.columns:,} columns expand to at least "
            f"{human_size(footer.expanded_bytes)}; the limit is {human_size(bound)}. "
            "Upload fewer rows or columns.",
            code="expands_too_much",
        )


def convert_parquet(src: Path, temporary: Path, limits: IngestLimits) -> IngestResult:
    with src.open("rb") as handle:
        handle.seek(-4, os.SEEK_END)
        tail = handle.read(4)
    if tail != b"PAR1":
        raise IngestError(
            "The Parquet file is incomplete: it does not end with the PAR1 marker. It may have "
            "been cut off while copying or uploading.",
            code="corrupt",
        )
    _check_parquet_footer(src, limits)
    try:
        schema = pl.read_parquet_schema(src)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise reading_failure(exc, LABELS["parquet"]) from None
    names = check_names(list(schema))
    if names != list(schema):
        schema = pl.Schema(dict(zip(names, schema.values(), strict=True)))
    warnings: list[str] = []
    casts: list[pl.Expr] = []
    for name, dtype in schema.items():
        if isinstance(dtype, _UNSUPPORTED_TYPES):
            raise IngestError(
                f"Column '{name}' holds {dtype} values (nested or binary data), which cannot be "
                "de-identified here. Flatten it or remove it, then upload again.",
                code="unsupported_column_type",
                column=name,
            )
        if isinstance(dtype, pl.Categorical | pl.Enum | pl.Time | pl.Duration):
            casts.append(pl.col(name).cast(pl.String))
            warnings.append(f"Column '{name}' ({dtype}) is stored as text.")
    frame = pl.scan_parquet(src)
    if names != frame.collect_schema().names():
        frame = frame.rename(dict(zip(frame.collect_schema().names(), names, strict=True)))
    frame = frame.with_columns(casts) if casts else frame
    frame = blank_strings_to_null(frame, frame.collect_schema())
    try:
        total = int(frame.select(pl.len()).collect().item())
        drop_empty_rows(frame).sink_parquet(temporary)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise reading_failure(exc, LABELS["parquet"]) from None
    rows = count_rows(temporary)
    if rows == 0:
        raise IngestError("The Parquet file has columns but no data rows.", code="no_data_rows")
    return IngestResult(
        format="parquet",
        rows=rows,
        columns=tuple(names),
        delimiter=None,
        encoding=None,
        sheet=None,
        warnings=tuple(warnings + dropped_rows_warning(total - rows)),
    )
