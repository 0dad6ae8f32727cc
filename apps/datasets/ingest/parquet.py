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

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
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
# Bytes in one row group written, at most (long text values make few rows weigh much).
GROUP_BYTES = 64 * 1024**2
# Rows decoded at once. Text columns are read as dictionaries (each distinct value once,
# and an index per row), so that their length is known before the values are expanded,
# group by group: nothing else says how long a text is (a 1 MB value repeated takes a few
# bytes in the file).
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


def _row_bytes(batch: pa.RecordBatch) -> np.ndarray:
    """What each row of the batch takes once its text is expanded: its characters and
    16 bytes a text value, 8 bytes a value of any other type."""
    sizes = np.zeros(batch.num_rows, np.int64)
    for column in batch.columns:
        if isinstance(column, pa.DictionaryArray) and (
            pa.types.is_string(column.type.value_type)
            or pa.types.is_large_string(column.type.value_type)
        ):
            lengths = pc.take(pc.binary_length(column.dictionary), column.indices)
            sizes += pc.fill_null(lengths, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            sizes += containers.DECODED_TEXT_BYTES
        else:
            sizes += containers.DECODED_VALUE_BYTES
    return sizes


def _expanded(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            column.dictionary_decode() if isinstance(column, pa.DictionaryArray) else column
            for column in batch.columns
        ],
        names=batch.schema.names,
    )


def _groups(src: Path, filename: str, rows: int, limits: IngestLimits) -> Iterator[pa.Table]:
    """The file's rows in tables of at most `rows` rows and `GROUP_BYTES` bytes (one row at
    least), their text expanded only there. What the rows decode to is counted as they are
    read: past the limit, the file is refused there (its footer may understate it)."""
    parquet = pq.ParquetFile(src)
    texts = [
        field.name
        for field in parquet.schema_arrow
        if pa.types.is_string(field.type)
        or pa.types.is_large_string(field.type)
        or pa.types.is_string_view(field.type)
    ]
    parquet.close()
    parquet = pq.ParquetFile(src, read_dictionary=texts)
    pending: list[pa.RecordBatch] = []
    held = weight = decoded = 0
    bound = limits.max_decoded_bytes
    try:
        for batch in parquet.iter_batches(batch_size=min(rows, _READ_ROWS)):
            sizes = np.cumsum(_row_bytes(batch))
            decoded += int(sizes[-1]) if len(sizes) else 0
            if bound is not None and decoded > bound:
                raise IngestError(
                    f"'{filename}' is {human_size(src.stat().st_size)} but its values expand "
                    f"to more than {human_size(bound)}, the limit (reading stopped there, "
                    "before its last rows). Upload fewer rows or columns.",
                    code="expands_too_much",
                )
            start, before = 0, 0
            while start < batch.num_rows:
                # As many rows as the group has room for; a row that does not fit starts
                # the next group (a group holds one row at least).
                fit = int(np.searchsorted(sizes, before + GROUP_BYTES - weight, side="right"))
                if fit == start and pending:
                    yield pa.Table.from_batches(pending)
                    pending, held, weight = [], 0, 0
                    continue
                stop = min(max(fit, start + 1), start + rows - held, batch.num_rows)
                pending.append(_expanded(batch.slice(start, stop - start)))
                held += stop - start
                weight += int(sizes[stop - 1]) - before
                start, before = stop, int(sizes[stop - 1])
                if held >= rows or weight >= GROUP_BYTES:
                    yield pa.Table.from_batches(pending)
                    pending, held, weight = [], 0, 0
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
        for table in _groups(src, filename, rows, limits):
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
