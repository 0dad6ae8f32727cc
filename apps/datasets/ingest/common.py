"""What every reader shares: the error, the result, the limits, names, and frame helpers."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl


class IngestError(Exception):
    """A file that cannot be taken in, with a readable message and where the problem is.

    `code` is one of: too_large, too_many_columns, too_many_rows, expands_too_much,
    empty_file, no_data_rows, unsupported_format, format_mismatch, unknown_encoding,
    encoding, ragged_rows, malformed_csv, unterminated_quote, duplicate_columns,
    empty_column_name, sheet_not_found, unsupported_column_type, corrupt.
    """

    def __init__(
        self, message: str, *, code: str, line: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.column = column


@dataclass(frozen=True)
class IngestResult:
    format: str
    rows: int
    columns: tuple[str, ...]
    delimiter: str | None
    encoding: str | None
    sheet: str | None
    warnings: tuple[str, ...]


# Excel's own limit of rows in a sheet: a "workbook" with more was not written by Excel.
EXCEL_MAX_ROWS = 1_048_576


@dataclass(frozen=True)
class IngestLimits:
    """Bounds checked before a file is read in full — from what it declares (a sheet's
    range, a Parquet footer, a statistical file's header) and from a streamed measure of
    what it holds — so that no shape of file (10 000 columns, a ZIP bomb, a 1.5 KB workbook
    with a cell at XFD10000, 200 million run-length-encoded rows) can make conversion or
    profiling outgrow memory. What passes is read by streaming, except a workbook.

    `max_columns`: any format. An .xlsx is read whole into memory, so it is bounded three
    ways: `max_expanded_bytes`, what its archive may expand to; `max_sheet_rows`, the rows
    of the sheet read; `max_sheet_cells`, that sheet's rows × columns (counted from A1 to
    its last cell, as its reader allocates them) and the workbook's shared text values.
    `max_decoded_bytes`: at least what the values of a Parquet, SAS, SPSS or Stata file
    take once decoded (read by streaming, so this bounds time and disk rather than memory;
    None: no bound).
    """

    max_columns: int = 2000
    max_expanded_bytes: int = 1024**3
    max_sheet_rows: int = EXCEL_MAX_ROWS
    max_sheet_cells: int = 16 * 1024**2
    max_decoded_bytes: int | None = None


FORMATS_BY_EXTENSION: dict[str, str] = {
    ".csv": "csv",
    ".txt": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".parquet": "parquet",
    ".sas7bdat": "sas7bdat",
    ".xpt": "xpt",
    ".sav": "sav",
    ".zsav": "zsav",
    ".por": "por",
    ".dta": "dta",
}

LABELS: dict[str, str] = {
    "csv": "CSV text",
    "tsv": "tab-separated text",
    "text": "plain text",
    "xlsx": "an Excel workbook (.xlsx)",
    "parquet": "a Parquet file",
    "sas7bdat": "a SAS data set (.sas7bdat)",
    "xpt": "a SAS transport file (.xpt)",
    "sav": "an SPSS data file (.sav)",
    "zsav": "a compressed SPSS data file (.zsav)",
    "por": "an SPSS portable file (.por)",
    "dta": "a Stata data file (.dta)",
    "ole": "a Microsoft Office 97–2003 document (such as an old .xls workbook)",
    "zip": "a ZIP archive",
    "docx": "a Word document",
    "gzip": "a gzip-compressed file",
    "pdf": "a PDF document",
    "binary": "binary data of an unknown kind",
}

# --------------------------------------------------------------------------- sizes


def human_size(size: int) -> str:
    """1536 → '1.5 KB'; units of 1024, as file managers show them."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            text = f"{value:.1f}".rstrip("0").rstrip(".") if unit != "bytes" else str(size)
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_size(size: int, limit: int) -> None:
    """Refuse a file larger than the limit, saying both sizes in human units."""
    if size > limit:
        raise IngestError(
            f"The file is {human_size(size)}; the upload limit is {human_size(limit)}. "
            "Remove columns or rows you do not need, or compress it as Parquet.",
            code="too_large",
        )


def check_columns(count: int, limits: IngestLimits, *, at_least: bool = False) -> None:
    """Refuse a file wider than the column limit, saying both numbers."""
    if count > limits.max_columns:
        more = "at least " if at_least else ""
        raise IngestError(
            f"The file has {more}{count:,} columns; the limit is {limits.max_columns:,}. "
            "Keep the columns the release needs (identifiers, quasi-identifiers and the "
            "variables to share) and upload again.",
            code="too_many_columns",
        )


# --------------------------------------------------------------------------- names


def check_names(names: Sequence[str | None], *, drop_trailing_empty: bool = False) -> list[str]:
    """Column names stripped of surrounding spaces; unique and non-empty, or `IngestError`."""
    cleaned = [("" if name is None else str(name)).strip().lstrip("\ufeff") for name in names]
    if drop_trailing_empty:
        while cleaned and not cleaned[-1]:
            cleaned.pop()
    for position, name in enumerate(cleaned, start=1):
        if not name:
            raise IngestError(
                f"Column {position} has no name (its header cell is empty). Give every column "
                "a name in the first row.",
                code="empty_column_name",
            )
    positions: dict[str, list[int]] = {}
    for position, name in enumerate(cleaned, start=1):
        positions.setdefault(name, []).append(position)
    duplicates = {name: where for name, where in positions.items() if len(where) > 1}
    if duplicates:
        listed = "; ".join(
            f"'{name}' (columns {', '.join(map(str, where))})" for name, where in duplicates.items()
        )
        raise IngestError(
            f"Column names must be unique. Repeated: {listed}. Rename the repeated columns.",
            code="duplicate_columns",
            column=next(iter(duplicates)),
        )
    return cleaned


# --------------------------------------------------------------------------- shared helpers


def blank_strings_to_null(frame: pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
    strings = [name for name, dtype in schema.items() if dtype == pl.String]
    if not strings:
        return frame
    return frame.with_columns(
        pl.when(pl.col(name) != "").then(pl.col(name)).alias(name) for name in strings
    )


def drop_empty_rows(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.filter(pl.any_horizontal(pl.all().is_not_null()))


def count_rows(path: Path) -> int:
    return int(pl.scan_parquet(path).select(pl.len()).collect().item())


def whole_number_columns(frame: pl.DataFrame) -> set[str]:
    """Float columns whose values are all whole numbers within the range of Int64."""
    floats = [name for name, dtype in frame.schema.items() if dtype in (pl.Float32, pl.Float64)]
    if not floats:
        return set()
    checks = frame.select(
        (
            ((pl.col(name) % 1 == 0) & (pl.col(name).abs() < 2.0**53)).all(ignore_nulls=True)
            & pl.col(name).is_not_null().any()
        ).alias(name)
        for name in floats
    ).row(0)
    return {name for name, ok in zip(floats, checks, strict=True) if ok}


@contextlib.contextmanager
def atomic_destination(dest: Path) -> Iterator[tuple[Path, Path]]:
    """(temporary file, scratch directory) beside `dest`; renamed onto `dest` on success."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    temporary = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    try:
        with tempfile.TemporaryDirectory(prefix=".ingest-", dir=dest.parent) as scratch:
            yield temporary, Path(scratch)
        os.replace(temporary, dest)
    finally:
        temporary.unlink(missing_ok=True)


def reading_failure(exc: Exception, what: str) -> IngestError:
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return IngestError(
        f"The file could not be read as {what}: it may be damaged or incomplete ({first_line}).",
        code="corrupt",
    )


def dropped_rows_warning(count: int) -> list[str]:
    if not count:
        return []
    rows = "row was" if count == 1 else "rows were"
    return [f"{count} {rows} entirely empty and left out."]


TEXT_FORMATS = ("csv", "tsv")
STAT_FORMATS = ("sas7bdat", "xpt", "sav", "zsav", "por", "dta")
