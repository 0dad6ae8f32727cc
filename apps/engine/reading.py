"""Reading a data set: a CSV/TSV or Parquet file opened lazily as a polars table, CSV with
every column as text so values stay exactly as written ("007" stays "007"), its
separator sniffed from the header line when not given, and every way a file can be
unreadable (missing, empty, not UTF-8, an unknown format, a wrong separator) refused with
a one-line ``EngineInputError``; and the check that the columns asked for are in the table
once each. Encoding what was read is ``apps.engine.frame``; contract:
docs/engine-contract.md (reading.py)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from apps.engine.errors import EngineInputError, preview
from apps.engine.utf8 import check_utf8

_CSV_SUFFIXES = {".csv", ".tsv", ".txt", ".tab", ""}


_PARQUET_SUFFIXES = {".parquet", ".pq"}


_SEPARATOR_CANDIDATES = (",", ";", "\t", "|")


def read_table(
    path: str | Path, *, sep: str | None = None, null_values: Sequence[str] | None = None
) -> pl.LazyFrame:
    """Open a CSV/TSV or Parquet file lazily.

    CSV columns are all read as strings so that values are compared exactly as
    written ("007" stays "007"); an empty field is the missing value, as are the
    optional `null_values`.  The separator, when not given, is sniffed from the
    header line.  Parquet is read as stored (its types are kept: grouping on
    integers or categoricals is faster than on their strings).  CSV must be UTF-8
    (:func:`apps.engine.utf8.check_utf8` refuses it otherwise, naming line and byte).
    """
    file = Path(path)
    if not file.exists():
        raise EngineInputError(f"file not found: {file}")
    if not file.is_file():
        raise EngineInputError(f"not a file: {file}")
    if file.stat().st_size == 0:
        raise EngineInputError(f"empty file: {file}")
    suffix = file.suffix.lower()
    if suffix in _PARQUET_SUFFIXES:
        return _scan_parquet(file)
    if suffix in _CSV_SUFFIXES:
        return _scan_csv(file, sep=sep, null_values=null_values)
    raise EngineInputError(
        f"unsupported file format {suffix!r}: expected .csv, .tsv, .txt or .parquet ({file.name})"
    )


def _scan_parquet(file: Path) -> pl.LazyFrame:
    frame = pl.scan_parquet(file)
    try:
        frame.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise EngineInputError(f"cannot read Parquet file {file.name}: {first_line(exc)}") from exc
    return frame


def _scan_csv(file: Path, *, sep: str | None, null_values: Sequence[str] | None) -> pl.LazyFrame:
    check_utf8(file)
    header, has_rows = _header_and_has_rows(file)
    if not header.strip():
        raise EngineInputError(f"empty file: {file} (no header line)")
    if not has_rows:
        raise EngineInputError(f"empty file: {file} (a header line but no data rows)")
    if sep is None:
        sep = "\t" if file.suffix.lower() == ".tsv" else sniff_separator(header)
    _check_separator(sep, header)
    frame = pl.scan_csv(
        file,
        separator=sep,
        infer_schema=False,  # every column as String: values stay exactly as written
        null_values=list(null_values) if null_values else None,
        encoding="utf8-lossy",
    )
    try:
        frame.collect_schema()
    except pl.exceptions.PolarsError as exc:
        raise EngineInputError(f"cannot read CSV file {file.name}: {first_line(exc)}") from exc
    return frame


def sniff_separator(header: str) -> str:
    """Guess the separator from the header line: the candidate appearing most often.

    Counting only outside quotes would be more exact, but headers rarely quote
    separators and the user can always pass `sep`.
    """
    counts = {candidate: header.count(candidate) for candidate in _SEPARATOR_CANDIDATES}
    best = max(counts, key=lambda candidate: counts[candidate])
    return best if counts[best] > 0 else ","


def _check_separator(sep: str, header: str) -> None:
    if len(sep) != 1 or len(sep.encode()) != 1:
        raise EngineInputError(f"bad separator {sep!r}: give a single one-byte character")
    if sep in ('"', "\n", "\r"):
        raise EngineInputError(f"bad separator {sep!r}")
    columns = next(csv.reader([header], delimiter=sep), [])
    others = [c for c in _SEPARATOR_CANDIDATES if c != sep and c in header]
    # A single column is legitimate, unless the header clearly uses another separator.
    if len(columns) <= 1 and others:
        raise EngineInputError(
            f"bad separator {sep!r}: the header has one column but contains {others[0]!r}"
        )


def _header_and_has_rows(file: Path) -> tuple[str, bool]:
    with file.open("r", encoding="utf-8", errors="replace", newline="") as handle:
        header = handle.readline().lstrip("\ufeff").rstrip("\r\n")
        # Stops at the first non-blank line: cheap even for a huge file.
        has_rows = any(line.strip() for line in handle)
    return header, has_rows


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def check_columns(schema_names: Sequence[str], wanted: Sequence[str], role: str) -> None:
    """Raise a one-line EngineInputError if a wanted column is absent or repeated."""
    if not wanted:
        raise EngineInputError(f"no {role} column given")
    unknown = [c for c in wanted if c not in schema_names]
    if unknown:
        raise EngineInputError(
            f"unknown {role} column(s): {preview(unknown)}; available: {', '.join(schema_names)}"
        )
    repeated = sorted({c for c in wanted if list(wanted).count(c) > 1})
    if repeated:
        raise EngineInputError(f"{role} column(s) given twice: {', '.join(repeated)}")
