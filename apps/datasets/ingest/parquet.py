"""Parquet files: their footer checked against the limits, then their rows streamed.

A Parquet file says in its footer how many rows and columns it holds, so a file whose
values would decode to more than the limit is refused before any is read. What passes is
read in batches of a bounded number of values (pyarrow decodes a row group page by page;
polars would decode a whole row group at once, and a 1.5 MB file can hold one of 64
million rows) and written in row groups of the same size, so every later step that reads
the stored file holds at most one such group per column.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from apps.datasets import containers
from apps.datasets.ingest.common import (
    LABELS,
    IngestError,
    IngestLimits,
    IngestResult,
    blank_strings_to_null,
    check_columns,
    check_names,
    drop_empty_rows,
    dropped_rows_warning,
    human_size,
    reading_failure,
)

_UNSUPPORTED_TYPES = (pl.List, pl.Array, pl.Struct, pl.Object, pl.Binary)
# Values in one row group written: rows = this / columns, within [_MIN_BATCH_ROWS,
# _MAX_BATCH_ROWS]. polars' streaming engine reads groups of 128 Ki rows much faster than
# groups of 1 Mi (a profile of 200 M rows: 33 s against 128 s), and groups of fewer than
# 16 Ki rows make the footer of a wide file large (2,000 columns: a column chunk each).
BATCH_VALUES = 2 * 1024**2
_MIN_BATCH_ROWS = 16 * 1024
_MAX_BATCH_ROWS = 128 * 1024
# Rows decoded at once, at most (pyarrow is fastest on batches of this order).
_READ_ROWS = 64 * 1024


def batch_rows(columns: int) -> int:
    """Rows in a batch of `columns` columns (see BATCH_VALUES)."""
    return max(_MIN_BATCH_ROWS, min(_MAX_BATCH_ROWS, BATCH_VALUES // max(columns, 1)))


def _check_parquet_footer(src: Path, filename: str, limits: IngestLimits) -> None:
    try:
        footer = containers.parquet_footer(src)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise reading_failure(exc, LABELS["parquet"]) from None
    check_columns(footer.columns, limits)
    bound = limits.max_decoded_bytes
    if bound is not None and footer.expanded_bytes > bound:
        raise IngestError(
            f"'{filename}' is {human_size(src.stat().st_size)} but its "
            f"{footer.rows:,} rows × {footer.columns:,} columns expand to at least "
            f"{human_size(footer.expanded_bytes)}; the limit is {human_size(bound)}. "
            "Upload fewer rows or columns.",
            code="expands_too_much",
        )


def _groups(src: Path, rows: int) -> Iterator[pa.Table]:
    """The file's rows in tables of about `rows` rows, read in smaller batches (pyarrow
    decodes those faster, on several threads) and put together."""
    parquet = pq.ParquetFile(src)
    pending: list[pa.RecordBatch] = []
    held = 0
    try:
        for batch in parquet.iter_batches(batch_size=min(rows, _READ_ROWS)):
            pending.append(batch)
            held += batch.num_rows
            if held >= rows:
                yield pa.Table.from_batches(pending)
                pending, held = [], 0
        if pending:
            yield pa.Table.from_batches(pending)
    finally:
        parquet.close()


def convert_parquet(
    src: Path, filename: str, temporary: Path, limits: IngestLimits
) -> IngestResult:
    with src.open("rb") as handle:
        handle.seek(-4, os.SEEK_END)
        tail = handle.read(4)
    if tail != b"PAR1":
        raise IngestError(
            "The Parquet file is incomplete: it does not end with the PAR1 marker. It may have "
            "been cut off while copying or uploading.",
            code="corrupt",
        )
    _check_parquet_footer(src, filename, limits)
    try:
        schema = pl.read_parquet_schema(src)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise reading_failure(exc, LABELS["parquet"]) from None
    names = check_names(list(schema))
    warnings: list[str] = []
    stored: dict[str, pl.DataType] = {}
    for name, dtype in zip(names, schema.values(), strict=True):
        if isinstance(dtype, _UNSUPPORTED_TYPES):
            raise IngestError(
                f"Column '{name}' holds {dtype} values (nested or binary data), which cannot be "
                "de-identified here. Flatten it or remove it, then upload again.",
                code="unsupported_column_type",
                column=name,
            )
        if isinstance(dtype, pl.Categorical | pl.Enum | pl.Time | pl.Duration):
            warnings.append(f"Column '{name}' ({dtype}) is stored as text.")
            dtype = pl.String()
        stored[name] = dtype
    rows = batch_rows(len(names))
    total = kept = 0
    writer: pq.ParquetWriter | None = None
    try:
        for table in _groups(src, rows):
            total += table.num_rows
            frame = pl.DataFrame(pl.from_arrow(table))
            frame.columns = names
            frame = frame.cast(pl.Schema(stored))
            frame = drop_empty_rows(blank_strings_to_null(frame.lazy(), frame.schema)).collect()
            kept += frame.height
            if frame.height or writer is None:
                writer = _write(writer, temporary, frame, rows)
        if writer is None:
            writer = _write(writer, temporary, pl.DataFrame(schema=stored), rows)
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError, ValueError) as exc:
        raise reading_failure(exc, LABELS["parquet"]) from None
    finally:
        if writer is not None:
            writer.close()
    if kept == 0:
        raise IngestError("The Parquet file has columns but no data rows.", code="no_data_rows")
    return IngestResult(
        format="parquet",
        rows=kept,
        columns=tuple(names),
        delimiter=None,
        encoding=None,
        sheet=None,
        warnings=tuple(warnings + dropped_rows_warning(total - kept)),
    )


def _write(
    writer: pq.ParquetWriter | None, path: Path, frame: pl.DataFrame, rows: int
) -> pq.ParquetWriter:
    table = frame.to_arrow()
    if writer is None:
        writer = pq.ParquetWriter(path, table.schema, compression="zstd")
    writer.write_table(table, row_group_size=rows)
    return writer
