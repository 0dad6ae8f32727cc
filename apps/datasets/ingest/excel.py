"""Excel workbooks (.xlsx): measured before a reader inflates them, then read by fastexcel."""

from __future__ import annotations

import datetime
import zipfile
import zlib
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
    drop_empty_rows,
    dropped_rows_warning,
    human_size,
    reading_failure,
    whole_number_columns,
)


def _check_workbook_expansion(src: Path, limits: IngestLimits) -> None:
    """Refuse a workbook that expands beyond the limit or has a sheet of too many rows,
    before a reader inflates it (containers.py)."""
    try:
        expanded = containers.zip_expanded_size(src)
        if expanded > limits.max_expanded_bytes:
            raise IngestError(
                f"The workbook is {human_size(src.stat().st_size)} but expands to "
                f"{human_size(expanded)}; the limit is {human_size(limits.max_expanded_bytes)}. "
                "Save the sheet as CSV, or as Parquet, and upload that instead.",
                code="expands_too_much",
            )
        for part in containers.sheet_parts(src):
            rows = containers.sheet_rows(src, part, stop_above=limits.max_sheet_rows)
            if rows > limits.max_sheet_rows:
                raise IngestError(
                    f"A sheet of the workbook ({part.rsplit('/', 1)[-1]}) has more than "
                    f"{limits.max_sheet_rows:,} rows, the limit for a workbook (Excel's own). "
                    "Save the data as CSV or Parquet and upload that instead.",
                    code="too_many_rows",
                )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error) as exc:
        raise reading_failure(exc, LABELS["xlsx"]) from None


def convert_xlsx(
    src: Path, temporary: Path, sheet: str | None, limits: IngestLimits
) -> IngestResult:
    import fastexcel

    _check_workbook_expansion(src, limits)
    try:
        reader = fastexcel.read_excel(src)
        sheets = list(reader.sheet_names)
    except Exception as exc:  # noqa: BLE001 - calamine raises its own error types
        raise reading_failure(exc, LABELS["xlsx"]) from None
    if not sheets:
        raise IngestError("The workbook has no sheets.", code="empty_file")
    if sheet is not None and sheet not in sheets:
        raise IngestError(
            f"The workbook has no sheet named '{sheet}'. Its sheets: "
            + ", ".join(f"'{name}'" for name in sheets)
            + ".",
            code="sheet_not_found",
        )
    chosen = sheet if sheet is not None else sheets[0]
    try:
        header_frame = reader.load_sheet(chosen, header_row=None, n_rows=1, dtypes="string")
        header_row = header_frame.to_polars()
    except Exception as exc:  # noqa: BLE001
        raise reading_failure(exc, LABELS["xlsx"]) from None
    if header_row.height == 0:
        raise IngestError(f"The sheet '{chosen}' is empty.", code="empty_file")
    raw_header = list(header_row.row(0))
    check_columns(len(raw_header), limits)
    names = check_names(raw_header, drop_trailing_empty=True)
    try:
        data = reader.load_sheet(chosen, header_row=0, schema_sample_rows=None).to_polars()
    except Exception as exc:  # noqa: BLE001
        raise reading_failure(exc, LABELS["xlsx"]) from None
    trailing = data.columns[len(names) :]
    if trailing and data.select(pl.col(trailing).is_not_null().any()).row(0).count(True):
        raise IngestError(
            f"Column {len(names) + 1} has no name (its header cell is empty) but holds values. "
            "Give it a name.",
            code="empty_column_name",
        )
    data = data.select(data.columns[: len(names)])
    data.columns = names
    frame = blank_strings_to_null(data.lazy(), data.schema).collect()
    # A date-time column whose values all fall at midnight is a column of dates.
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Datetime) and frame.height:
            col = frame.get_column(name)
            if bool((col.dt.time() == datetime.time(0)).all(ignore_nulls=True)):
                frame = frame.with_columns(pl.col(name).dt.date())
    whole = whole_number_columns(frame)
    frame = frame.with_columns(pl.col(name).cast(pl.Int64) for name in whole)
    before = frame.height
    frame = drop_empty_rows(frame.lazy()).collect()
    if frame.height == 0:
        raise IngestError(
            f"The sheet '{chosen}' has a header row but no data rows.", code="no_data_rows"
        )
    frame.write_parquet(temporary)
    warnings = dropped_rows_warning(before - frame.height)
    if len(sheets) > 1:
        warnings.insert(
            0,
            f"The workbook has {len(sheets)} sheets; only '{chosen}' was read. Upload again "
            "choosing another sheet if needed.",
        )
    return IngestResult(
        format="xlsx",
        rows=frame.height,
        columns=tuple(names),
        delimiter=None,
        encoding=None,
        sheet=chosen,
        warnings=tuple(warnings),
    )
